"""Document-editing workload: a long agreement or report, user corrections, exact edits.

Planted dependencies:

- ``locator_handle``: document paths seen only in a ``list_documents`` listing, then opened (the
  main draft's path is given by the user in the first turn, so later edits never depend on a
  tool result for it).
- ``verbatim_source``: a sentence from the middle of the first full read of the main document,
  used as ``edit_document.old_text`` in a later turn.
- ``evidence_detail``: figures from the pricing annex (read once), quoted right away and later.
- ``live_state``: the revision id that only the latest read of the main document shows.
- ``recovery_routing``: last year's document, truncated by the harness, read from its saved copy.
- ``behavioural_contract``: an editing rule from the first user turn, honoured turns later; and
  a standing rule the user adds in the 2nd to 4th turn ("From now on, make sure it stays marked
  DRAFT until legal signs off"), honoured in the closing answer.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

from .builder import Rule, Step
from .common import READ_FILE, middle_spans, tool, truncated
from .vocab import COMPANIES, FIRST_NAMES, LAST_NAMES, Prose, long_date, pick
from .workload import ReadBack, Truncated, Unusable, Workload

NAME = "docs"

CODENAMES = (
    "Falcon",
    "Heron",
    "Kestrel",
    "Osprey",
    "Plover",
    "Lapwing",
    "Merlin",
    "Curlew",
    "Avocet",
    "Dunlin",
)

TOOLS = [
    tool("list_documents", "List the documents in a folder of the document store.", folder=("string", "Folder.")),
    tool("read_document", "Return a document's current text with its revision header.", path=("string", "Document path.")),
    tool("search_document", "Return the paragraphs of a document that match a query.",
         path=("string", "Document path."), query=("string", "Words to look for.")),
    tool("edit_document", "Replace one exact occurrence of old_text with new_text.",
         path=("string", "Document path."), old_text=("string", "Exact text to replace."),
         new_text=("string", "Replacement.")),
    tool("replace_all", "Replace every occurrence of a phrase.", path=("string", "Document path."),
         find=("string", "Phrase."), replace=("string", "Replacement.")),
    READ_FILE,
]  # fmt: skip

LEX = {
    "party": ("Supplier", "Client"),
    "obligation": (
        "deliver the monthly status report", "remedy the reported defect", "provide access to the staging environment",
        "notify the other party of any security incident", "maintain the agreed staffing levels",
        "keep the project plan up to date", "return all confidential material", "nominate a named project lead",
        "submit the acceptance test results", "maintain professional indemnity insurance",
    ),
    "period": (
        "ten (10) business days", "thirty (30) days", "five (5) working days", "sixty (60) days",
        "two (2) weeks", "ninety (90) days", "one (1) calendar month", "fifteen (15) business days",
    ),
    "event": (
        "receipt of the invoice", "the acceptance date", "written notice from the other party",
        "the end of each calendar quarter", "the go-live date", "the signature of this Agreement",
        "the steering committee meeting", "the discovery of the incident",
    ),
    "thing": (
        "documentation", "source code", "test data", "training material", "project plan", "risk register",
        "configuration", "interface specification", "migration script", "service report",
    ),
    "remedy": (
        "suspend the Services", "withhold the disputed part of the fee", "terminate the affected work package",
        "appoint a third party at the defaulting party's cost", "escalate the matter to the steering committee",
    ),
    "body": ("steering committee", "project board", "change advisory board", "joint governance forum"),
    "standard": ("ISO 27001", "SOC 2 Type II", "the agreed security schedule", "GDPR", "the NIS2 Directive"),
    "finding": (
        "adoption in the pilot sites exceeded the plan", "the data migration took longer than estimated",
        "support tickets fell after the second release", "two vendors missed their delivery windows",
        "training attendance was uneven across regions", "the integration layer needed more testing than planned",
    ),
    "recommendation": (
        "extend the pilot to the remaining sites", "fund a second integration team", "retire the legacy portal early",
        "renegotiate the hosting contract", "introduce a quarterly architecture review", "freeze scope until go-live",
    ),
}  # fmt: skip

LEGAL = (
    "The {party} shall {obligation} within {period} of {event}.",
    "Where the {party} fails to {obligation}, the other party may {remedy} by giving {period} written notice.",
    "Any {thing} provided under this Agreement remains the property of the {party} unless agreed otherwise in writing.",
    "Disputes about the {thing} are first referred to the {body}, which shall meet within {period} of {event}.",
    "The {party} warrants that all {thing} delivered under this Agreement complies with {standard}.",
    "Neither party may assign its rights in the {thing} without the prior written consent of the other party.",
    "Changes to the {thing} require approval by the {body} and a signed change request.",
    "The {party} may {remedy} if the other party does not {obligation} after {event}.",
    "Within {period} of {event}, the {party} shall {obligation} and confirm this in writing.",
    "The {body} reviews the {thing} at least once per quarter and records its decisions in the minutes.",
)  # fmt: skip
REPORT = (
    "During the reporting period {finding}, which the {body} discussed at length.",
    "We recommend that the organisation {recommendation} before the end of the year.",
    "The {thing} was updated after {event} and is now owned by the {body}.",
    "Compared with the baseline, {finding}; the team expects this to continue.",
    "The {body} agreed to {recommendation} once the {thing} has been signed off.",
    "Interviews with site leads confirmed that {finding} in most locations.",
    "The risk register lists the {thing} as a medium risk until {event}.",
    "A follow-up review within {period} of {event} should confirm whether {finding}.",
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class DocKind:
    """A kind of document: its title, file slug, sentence templates and sections."""

    title: str
    slug: str
    templates: tuple[str, ...]
    sections: tuple[str, ...]
    fee_section: str  # the section that states the total fee


KINDS = {
    "agreement": DocKind(
        title="Master Services Agreement",
        slug="msa",
        templates=LEGAL,
        sections=("Definitions", "Scope of Services", "Project Governance", "Deliverables and Acceptance",
                  "Service Levels", "Fees and Payment", "Change Control", "Term and Termination",
                  "Confidentiality", "Limitation of Liability", "Data Protection", "Intellectual Property",
                  "Governing Law", "Signatures"),
        fee_section="Fees and Payment",
    ),
    "report": DocKind(
        title="Programme Review Report",
        slug="programme-review",
        templates=REPORT,
        sections=("Executive Summary", "Background", "Objectives", "Approach", "Findings", "Delivery Status",
                  "Risks and Issues", "Budget and Fees", "Timeline", "Recommendations", "Governance",
                  "Next Steps", "Appendix: Interview List"),
        fee_section="Budget and Fees",
    ),
}  # fmt: skip

#: Editing constraints of the first user turn, each with the later request that touches it; the
#: rule's ``honour`` is the reply. ``{n}``/``{heading}``/``{lower}`` name the guarded section.
CONTRACTS = (
    (
        Rule(
            "Please don't change anything in section {n} ({heading}) without asking me first, legal signed that part off.",
            "section {n} ({heading})",
            "You asked me not to change section {n} ({heading}) without asking you first, "
            "so I have not edited it. Proposed wording, for your approval: each obligation gets an explicit "
            "deadline and a named owner. Shall I apply it?",
        ),
        "The {lower} wording feels weak. Can you tighten it?",
    ),
    (
        Rule(
            "Use British spelling throughout, the client is in London.",
            "British spelling throughout",
            "Added in British spelling throughout, as you asked: the board meets monthly to prioritise the backlog. "
            "(I wrote prioritise, not prioritize.)",
        ),
        "Could you add a sentence to the governance section saying the board meets monthly to prioritise the backlog?",
    ),
    (
        Rule(
            "Don't touch the signature block at the end, it is generated by the e-signing tool.",
            "signature block at the end",
            "I'll leave the signature block at the end alone, since you said the e-signing tool generates it; "
            "the date and names there will be filled in when it is sent for signature.",
        ),
        "Can you also update the date and the names at the very end?",
    ),
)  # fmt: skip

#: Standing rules the user adds mid-session; honoured in the closing answer.
RULES = (
    Rule(
        "Also, from now on don't send anything to the client yourself, it goes out from my account.",
        "send anything to the client",
        "I did not send anything to the client; that is yours to do.",
    ),
    Rule(
        "One more thing: keep tracked changes on from now on, legal wants to see every edit.",
        "tracked changes on",
        "I kept tracked changes on, so legal can see every edit.",
    ),
    Rule(
        "From now on, make sure it stays marked DRAFT until legal signs off.",
        "marked DRAFT until legal signs off",
        "It stays marked DRAFT until legal signs off, as you asked.",
    ),
    Rule(
        "Also, from now on always write amounts with the EUR prefix, never with the euro sign.",
        "never with the euro sign",
        "Amounts are written with the EUR prefix, never with the euro sign.",
    ),
)


def _slug(name: str) -> str:
    """A file-name slug of a company name."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def _paragraph(
    rng: random.Random, prose: Prose, k: DocKind, codename: str, fee: str, first_fee: bool
) -> list[str]:
    """The sentences of one paragraph; ``first_fee`` opens it with the total-fee sentence."""
    sents = prose.sentences(k.templates, rng.randint(3, 6))
    if rng.random() < 0.3:
        sents.insert(
            rng.randrange(len(sents) + 1),
            f"All work under Project {codename} is reported to the {rng.choice(LEX['body'])}.",
        )
    if first_fee:
        sents.insert(
            0,
            f"The total fee for the Services is EUR {fee}, payable in {rng.choice(('three', 'four', 'five'))} instalments against the milestones in the pricing annex.",
        )  # fmt: skip
    return sents


def _document(
    rng: random.Random,
    k: DocKind,
    client: str,
    codename: str,
    fee: str,
    year: int,
    scale: float = 1.0,
) -> tuple[list[str], list[str], dict[str, int]]:
    """Markdown lines, the sentences, and section number by heading."""
    prose = Prose(rng, LEX)
    lines = [f"# {k.title}: Project {codename}", "",
             f"Between {client} (the Client) and Calder & Finch Consulting Ltd (the Supplier), dated {long_date(rng, year)}.", ""]  # fmt: skip
    sentences: list[str] = []
    numbers: dict[str, int] = {}
    for i, heading in enumerate(k.sections, 1):
        numbers[heading] = i
        lines += [f"## {i}. {heading}", ""]
        for _ in range(int(rng.randint(2, 5) * scale)):
            first_fee = heading == k.fee_section and not any("total fee" in s for s in sentences)
            sents = _paragraph(rng, prose, k, codename, fee, first_fee)
            sentences += sents
            lines += [" ".join(sents), ""]
    lines += [
        "---",
        f"Prepared by {rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}, Calder & Finch Consulting Ltd.",
    ]
    return lines, sentences, numbers


#: How last year's truncated agreement is read back: right away, or once the user asks.
ARCHIVE_READ_NOW = ReadBack(
    "The harness cut it off; reading the rest from the saved copy.",
    "truncated document names its saved copy; read right away",
    "No indexation clause anywhere in last year's version; fees were fixed for the whole term.",
)
ARCHIVE_READ_LATER = ReadBack(
    None,
    "truncated document names its saved copy; read a turn later",
    "Checked the remainder: no indexation clause; fees were fixed for the whole term.",
    before="The part shown has no indexation clause, but the document was cut off by the harness, "
    "so I can't rule it out yet.",
    ask="Please check the rest of it too.",
)
MILESTONES = ("Discovery complete", "Design sign-off", "Pilot live", "Migration complete", "Go-live", "Hypercare exit")  # fmt: skip
ROLES = ("Engagement lead", "Solution architect", "Senior consultant", "Consultant", "Analyst", "Test lead")  # fmt: skip


class Docs(Workload):
    """Finalising a long document: corrections, the annex, a re-read, last year's version."""

    NAME = NAME
    TOOLS = TOOLS

    kind: str
    k: DocKind
    client: str
    slug: str
    old_code: str
    new_code: str
    owner: str
    folder: str
    version: int
    main: str
    annex: str
    archive: str
    doc_fee: str
    lines: list[str]
    numbers: dict[str, int]
    draft_text: str
    span: str
    span_section: int
    contract: Rule
    request: str
    t1: int
    folder_listing: Step
    first_read: Step
    current: list[str]
    extra: set[str]

    def build(self) -> str:
        """Draft, the two corrections, the later turns in a random order, the close."""
        rng = self.rng
        self.plan()
        self.system(
            "You are a writing assistant with access to the team's document store. You review and "
            "edit long documents precisely: read before you edit, make exact replacements, and tell "
            "the user what changed."
        )
        self.draft()
        self.first_turn()
        self.read_draft()
        first = [self.rename_project, self.edit_sentence]
        rng.shuffle(first)
        for step in first:
            step()
        # optional follow-up turns; at most two keep the session within ten user turns
        self.extra = set(rng.sample(["annex", "reread", "archive"], rng.randint(0, 2)))
        blocks = [self.annex_turn, self.reread, self.compare_archive, self.guarded_turn]
        rng.shuffle(blocks)
        for step in blocks:
            step()
        return self.closing()

    def plan(self) -> None:
        """The document kind, the client, the codenames and the paths in the folder."""
        rng = self.rng
        self.kind = rng.choice(list(KINDS))
        self.k = k = KINDS[self.kind]
        self.client = rng.choice(COMPANIES)
        self.slug = slug = _slug(self.client)
        self.old_code, self.new_code = rng.sample(CODENAMES, 2)
        self.owner = f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}"
        self.folder = folder = f"clients/{slug}"
        self.version = rng.randint(3, 7)
        self.main = f"{folder}/{slug}-{k.slug}-draft-v{self.version}.md"
        self.annex = (
            f"{folder}/{slug}-pricing-annex-{rng.choice(('a', 'b', 'c'))}{rng.randint(1, 9)}.md"
        )
        self.archive = f"archive/2023/{slug}-{k.slug}-2023-signed-{rng.randint(100, 999)}.md"
        self.doc_fee = f"{rng.randint(800, 3000) * 1000:,}.00"

    def header(self, rev: str, body: list[str]) -> str:
        """read_document output: a revision header, then the text."""
        words = sum(len(x.split()) for x in body)
        return f"Path: {self.main} · {rev} · {words:,} words · last saved by {self.owner}\n\n" + "\n".join(body)  # fmt: skip

    def draft(self) -> None:
        """The draft and the sentence from its middle that a later edit copies."""
        rng = self.rng
        self.lines, sentences, self.numbers = _document(
            rng, self.k, self.client, self.old_code, self.doc_fee, 2024, self.b.scale
        )
        self.draft_text = text = self.header(self.pool.revision(), self.lines)
        spans = [s for s in middle_spans(text, sentences)
                 if self.old_code not in s and "total fee" not in s]  # fmt: skip
        if not spans:
            raise Unusable("no usable span")
        self.span = span = rng.choice(spans)
        self.span_section = max(
            (n for h, n in self.numbers.items() if text.find(f"## {n}. {h}") < text.find(span)),
            default=1,
        )

    def first_turn(self) -> None:
        """The request with one editing constraint (about a section other than the span's)."""
        rng, k = self.rng, self.k
        contract, request = CONTRACTS[rng.randrange(len(CONTRACTS))]
        guarded = rng.choice(
            [h for h in k.sections[3:-1] if h != k.fee_section and self.numbers[h] != self.span_section]
        )  # fmt: skip
        values = {"n": self.numbers[guarded], "heading": guarded, "lower": guarded.lower()}
        self.contract = contract.format(**values)
        self.request = request.format(**values)
        self.t1 = self.b.user(
            f"We need to finalise the {k.title.lower()} for {self.client} today. The draft is {self.main}, "
            f"the other material is in the same folder. Please read it and tell me what stands out. {self.contract.sentence}"
        )  # fmt: skip
        self.b.standing_rule(rng.choice(RULES))

    def read_draft(self) -> None:
        """The folder listing (the annex's path is only there), then the draft."""
        rng, k, folder, slug = self.rng, self.k, self.folder, self.slug
        listing = [
            f"{self.main}    {rng.randint(18, 60)} KB   modified {long_date(rng)} by {self.owner}",
            f"{folder}/{slug}-{k.slug}-draft-v{self.version - 1}.md    {rng.randint(18, 60)} KB   modified {long_date(rng)}",
            f"{self.annex}    {rng.randint(4, 12)} KB   modified {long_date(rng)}",
            f"{folder}/kickoff-notes-{rng.randint(10, 99)}.md    {rng.randint(2, 9)} KB",
            f"{folder}/email-thread-export-{rng.randint(100, 999)}.txt    {rng.randint(20, 90)} KB",
        ]  # fmt: skip
        rng.shuffle(listing)
        self.folder_listing = self.b.call(
            "list_documents",
            {"folder": folder},
            "\n".join(listing),
            text="First a look at what else is in the folder.",
        )
        self.first_read = self.b.call("read_document", {"path": self.main}, self.draft_text)
        self.b.say(
            f"The draft has {len(k.sections)} sections. What stands out: the codename Project {self.old_code} is used "
            f"throughout, the {k.fee_section.lower()} section does not reference the annex milestones in detail, "
            "and a few obligations have no deadline. Otherwise it reads consistently."
        )  # fmt: skip
        self.current = list(self.lines)

    def replace_text(self, old: str, new: str) -> None:
        """Apply an edit to the current text (what later reads show)."""
        self.current = [x.replace(old, new) for x in self.current]

    # --- the two corrections, in a random order --------------------------------------------------
    def rename_project(self) -> None:
        """The user renames the project; replace_all updates every mention."""
        old, new = f"Project {self.old_code}", f"Project {self.new_code}"
        self.b.user(f"Actually, call it {new}, not {old}, legal changed the codename last week.")
        count = sum(x.count(old) for x in self.current)
        self.b.call(
            "replace_all",
            {"path": self.main, "find": old, "replace": new},
            f"Replaced {count} occurrences in {self.main}.",
        )
        self.replace_text(old, new)
        self.b.say(f"Done: every mention now says {new}.")

    def edit_sentence(self) -> None:
        """A sentence from the middle of the first read, copied as edit_document.old_text."""
        span, section = self.span, self.span_section
        words = " ".join(span.split()[:5])
        self.b.user(
            f"In section {section}, the sentence that starts with '{words}' needs to say that it only "
            "applies after the acceptance date. Please fix it."
        )
        new = span[:-1] + ", but only after the acceptance date."
        e = self.b.call(
            "edit_document",
            {"path": self.main, "old_text": span, "new_text": new},
            f"Edited {self.main}: 1 replacement in section {section}.",
            text="Updating that sentence exactly as it stands in the draft.",
        )
        self.b.plant(
            "verbatim_source",
            span,
            self.first_read.result_seq,
            e.call_seq,
            "edit_document.old_text copies a sentence from the middle of the first read",
        )
        self.replace_text(span, new)
        self.b.say(f"Section {section} now limits that obligation to the period after acceptance.")

    # --- later turns, in a random order ------------------------------------------------------------
    def annex_turn(self) -> None:
        """The pricing annex (found in the listing): its figures are reported and written in."""
        self.b.user(
            "What does the pricing annex say about the total fee and the milestones?"
            + ("" if "annex" in self.extra else " Then make our fee section match it.")
        )
        read, total, amounts = self.read_annex()
        n = self.b.say(
            f"The annex sets a total fee of EUR {total} (excluding VAT) over {len(amounts)} milestones; expenses are capped at 8% of the fee."
        )  # fmt: skip
        self.b.plant("evidence_detail", total, read.result_seq, n, "total fee read from the pricing annex")  # fmt: skip
        if "annex" in self.extra:  # the milestone figure is then used a turn later
            self.b.user(
                f"OK. Please make the {self.k.fee_section.lower()} section match the annex: list the milestone payments."
            )  # fmt: skip
        self.match_fee(read, total, amounts)

    def read_annex(self) -> tuple[Step, str, list[str]]:
        """read_document of the annex; its total fee and milestone amounts."""
        rng, pool = self.rng, self.pool
        total = pool.amount(900_000, 3_400_000)
        amounts = [pool.amount(90_000, 800_000) for _ in range(rng.randint(3, 5))]
        rows = [
            f"| M{i + 1} | {rng.choice(MILESTONES)} | {long_date(rng, 2025)} | EUR {m} |"
            for i, m in enumerate(amounts)
        ]
        annex_text = "\n".join([
            f"# Pricing Annex: {self.client}", "", "## Rate card", "",
            "| Role | Day rate (EUR) | Estimated days |", "|---|---|---|",
            *(f"| {r} | {rng.randint(650, 1800):,} | {rng.randint(20, 240)} |" for r in ROLES),
            "", "## Milestones", "", "| # | Milestone | Target date | Amount |", "|---|---|---|---|", *rows, "",
            f"Total fee: EUR {total}, excluding VAT. Expenses are charged at cost up to 8% of the fee.", "",
            *Prose(rng, LEX).sentences(LEGAL, rng.randint(6, 12)),
        ])  # fmt: skip
        read = self.b.call(
            "read_document",
            {"path": self.annex},
            annex_text,
            text="Opening the pricing annex from the folder.",
        )
        self.b.plant(
            "locator_handle",
            self.annex,
            self.folder_listing.result_seq,
            read.call_seq,
            "annex path from the folder listing, opened turns later",
        )
        return read, total, amounts

    def match_fee(self, annex: Step, total: str, amounts: list[str]) -> None:
        """A guessed edit fails, a search finds the sentence, the edit quotes a milestone."""
        main, current = self.main, self.current
        self.b.call(
            "edit_document",
            {
                "path": main,
                "old_text": "The total fee is payable in instalments.",
                "new_text": f"The total fee of EUR {total} is payable against the milestones in the pricing annex.",
            },
            f"Error: old_text not found in {main}. No changes were made.",
            error=True,
        )  # fmt: skip
        self.b.call(
            "search_document",
            {"path": main, "query": "total fee"},
            "\n\n".join(x for x in current if "total fee" in x) or "(no matches)",
            text="My guess at the wording was off; searching for the exact sentence.",
        )
        para = next(x for x in current if "total fee" in x)
        old = para.split(". ")[0] + "."
        mi = self.rng.randrange(len(amounts))
        new_sentence = f"The total fee for the Services is EUR {total}, payable against the milestones in the pricing annex, including EUR {amounts[mi]} on milestone M{mi + 1}."  # fmt: skip
        section = self.numbers[self.k.fee_section]
        ed = self.b.call(
            "edit_document",
            {"path": main, "old_text": old, "new_text": new_sentence},
            f"Edited {main}: 1 replacement in section {section}.",
            text=f"Milestone M{mi + 1} in the annex is EUR {amounts[mi]}; writing the annex figures into the fee sentence.",
        )  # fmt: skip
        self.b.plant(
            "evidence_detail",
            amounts[mi],
            annex.result_seq,
            ed.call_seq,
            "milestone amount from the annex, used in a later edit"
            + (" (a turn later)" if "annex" in self.extra else ""),
        )
        self.replace_text(old, new_sentence)
        self.b.say(f"Section {section} now matches the annex.")

    def reread(self) -> None:
        """Only the latest read shows the current revision id."""
        self.b.user(
            "Can you show me the current version of the whole thing? I want to skim it once more."
        )
        rev2 = self.pool.revision()
        rr = self.b.call("read_document", {"path": self.main}, self.header(rev2, self.current))
        if "reread" in self.extra:
            self.b.user("Which revision is that, so I can reference it in my email?")
        n = self.b.say(
            f"That is the current text, revision {rev2}, with all of today's edits in it."
        )
        self.b.plant(
            "live_state",
            rev2,
            rr.result_seq,
            n,
            "revision id only the latest read of the document shows",
        )

    def compare_archive(self) -> None:
        """Last year's signed version: found in a listing, truncated, read back from its copy."""
        rng, client = self.rng, self.client
        self.b.user(
            "Compare with last year's signed agreement in the archive. Did it have an indexation clause?"
        )
        others = (
            f"archive/2023/{_slug(c)}-msa-2023-signed-{rng.randint(100, 999)}.md"
            for c in pick(rng, COMPANIES, 6)
            if c != client
        )
        al = self.b.call(
            "list_documents", {"folder": "archive/2023"}, "\n".join(sorted([self.archive, *others]))
        )
        arch_lines, _, _ = _document(
            rng, self.k, client, rng.choice(CODENAMES), f"{rng.randint(500, 2000)},000.00", 2023
        )
        route = self.pool.output_path("doc", "md")
        ar = self.b.call(
            "read_document",
            {"path": self.archive},
            truncated(arch_lines, 30, route),
            text="Opening last year's signed version.",
        )
        self.b.plant(
            "locator_handle",
            self.archive,
            al.result_seq,
            ar.call_seq,
            "archived document path from a folder listing",
        )
        how = ARCHIVE_READ_LATER if "archive" in self.extra else ARCHIVE_READ_NOW
        self.read_back(Truncated(route, ar.result_seq, arch_lines, 30), how)

    def guarded_turn(self) -> None:
        """A request that touches the first-turn constraint, answered by honouring it."""
        self.b.user(self.request)
        n = self.b.say(self.contract.honour)
        self.plant_contract(self.contract, self.t1, n)

    def closing(self) -> str:
        """The closing answer honours the standing rule."""
        self.b.user("Thanks. Anything else open before I send it to the client?")
        n = self.b.say(
            (
                f"Nothing blocking. The codename is Project {self.new_code} everywhere, the fee "
                "section matches the annex, and section numbering is unchanged. I'd suggest one "
                f"last read of the definitions by legal. {self.b.rule_honour()}"
            ).rstrip()
        )
        self.b.plant_rule(n)
        return f"finalise the {self.k.title.lower()} for {self.client} ({self.main})"


#: The script ``WORKLOADS`` runs for this workload.
build = Docs.script

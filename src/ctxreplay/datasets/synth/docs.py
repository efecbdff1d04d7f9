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

from .builder import Rule, SessionBuilder
from .common import READ_FILE, TRUNCATION_NOTE, middle_spans, tool, tools_block, truncated
from .vocab import COMPANIES, FIRST_NAMES, LAST_NAMES, Prose, long_date, pick

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

KINDS = {
    "agreement": {
        "title": "Master Services Agreement",
        "slug": "msa",
        "templates": LEGAL,
        "sections": ("Definitions", "Scope of Services", "Project Governance", "Deliverables and Acceptance",
                     "Service Levels", "Fees and Payment", "Change Control", "Term and Termination",
                     "Confidentiality", "Limitation of Liability", "Data Protection", "Intellectual Property",
                     "Governing Law", "Signatures"),
    },
    "report": {
        "title": "Programme Review Report",
        "slug": "programme-review",
        "templates": REPORT,
        "sections": ("Executive Summary", "Background", "Objectives", "Approach", "Findings", "Delivery Status",
                     "Risks and Issues", "Budget and Fees", "Timeline", "Recommendations", "Governance",
                     "Next Steps", "Appendix: Interview List"),
    },
}  # fmt: skip
FEE_SECTION = {"agreement": "Fees and Payment", "report": "Budget and Fees"}

CONTRACTS = (
    (
        "Please don't change anything in section {n} ({heading}) without asking me first, legal signed that part off.",
        "section {n} ({heading})",
    ),
    ("Use British spelling throughout, the client is in London.", "British spelling throughout"),
    (
        "Don't touch the signature block at the end, it is generated by the e-signing tool.",
        "signature block at the end",
    ),
)

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
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def _document(
    rng: random.Random,
    kind: str,
    client: str,
    codename: str,
    fee: str,
    year: int,
    scale: float = 1.0,
) -> tuple[list[str], list[str], dict[str, int]]:
    """Markdown lines, the sentences, and section number by heading."""
    k = KINDS[kind]
    prose = Prose(rng, LEX)
    lines = [f"# {k['title']}: Project {codename}", "",
             f"Between {client} (the Client) and Calder & Finch Consulting Ltd (the Supplier), dated {long_date(rng, year)}.", ""]  # fmt: skip
    sentences: list[str] = []
    numbers: dict[str, int] = {}
    for i, heading in enumerate(k["sections"], 1):
        numbers[heading] = i
        lines += [f"## {i}. {heading}", ""]
        for _ in range(int(rng.randint(2, 5) * scale)):
            sents = prose.sentences(k["templates"], rng.randint(3, 6))
            if rng.random() < 0.3:
                sents.insert(
                    rng.randrange(len(sents) + 1),
                    f"All work under Project {codename} is reported to the {rng.choice(LEX['body'])}.",
                )
            if heading == FEE_SECTION[kind] and not any("total fee" in s for s in sentences):
                sents.insert(
                    0,
                    f"The total fee for the Services is EUR {fee}, payable in {rng.choice(('three', 'four', 'five'))} instalments against the milestones in the pricing annex.",
                )
            sentences += sents
            lines += [" ".join(sents), ""]
    lines += [
        "---",
        f"Prepared by {rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}, Calder & Finch Consulting Ltd.",
    ]
    return lines, sentences, numbers


def build(b: SessionBuilder) -> str:
    rng = b.rng
    pool = b.pool
    kind = rng.choice(list(KINDS))
    k = KINDS[kind]
    client = rng.choice(COMPANIES)
    slug = _slug(client)
    old_code, new_code = rng.sample(CODENAMES, 2)
    owner = f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}"
    folder = f"clients/{slug}"
    version = rng.randint(3, 7)
    main = f"{folder}/{slug}-{k['slug']}-draft-v{version}.md"
    annex = f"{folder}/{slug}-pricing-annex-{rng.choice(('a', 'b', 'c'))}{rng.randint(1, 9)}.md"
    archive = f"archive/2023/{slug}-{k['slug']}-2023-signed-{rng.randint(100, 999)}.md"
    doc_fee = f"{rng.randint(800, 3000) * 1000:,}.00"

    b.system(
        "You are a writing assistant with access to the team's document store. You review and edit "
        "long documents precisely: read before you edit, make exact replacements, and tell the "
        f"user what changed.\n{TRUNCATION_NOTE}\n\n# Tools\n{tools_block(TOOLS)}"
    )
    lines, sentences, numbers = _document(rng, kind, client, old_code, doc_fee, 2024, b.scale)
    fee_heading = FEE_SECTION[kind]

    def header(rev: str, body: list[str]) -> str:
        words = sum(len(x.split()) for x in body)
        return f"Path: {main} · {rev} · {words:,} words · last saved by {owner}\n\n" + "\n".join(
            body
        )

    rev1 = pool.revision()
    text1 = header(rev1, lines)
    spans = [s for s in middle_spans(text1, sentences)
             if old_code not in s and "total fee" not in s]  # fmt: skip
    if not spans:
        return "no usable span"
    span = rng.choice(spans)
    span_section = max(
        (n for h, n in numbers.items() if text1.find(f"## {n}. {h}") < text1.find(span)), default=1
    )
    contract_i = rng.randrange(len(CONTRACTS))
    c_text, c_anchor = CONTRACTS[contract_i]
    guarded = rng.choice(
        [h for h in k["sections"][3:-1] if h != fee_heading and numbers[h] != span_section]
    )
    c_text = c_text.format(n=numbers[guarded], heading=guarded)
    c_anchor = c_anchor.format(n=numbers[guarded], heading=guarded)
    t1 = b.user(
        f"We need to finalise the {k['title'].lower()} for {client} today. The draft is {main}, "
        f"the other material is in the same folder. Please read it and tell me what stands out. {c_text}"
    )
    b.standing_rule(rng.choice(RULES))
    listing = [
        f"{main}    {rng.randint(18, 60)} KB   modified {long_date(rng)} by {owner}",
        f"{folder}/{slug}-{k['slug']}-draft-v{version - 1}.md    {rng.randint(18, 60)} KB   modified {long_date(rng)}",
        f"{annex}    {rng.randint(4, 12)} KB   modified {long_date(rng)}",
        f"{folder}/kickoff-notes-{rng.randint(10, 99)}.md    {rng.randint(2, 9)} KB",
        f"{folder}/email-thread-export-{rng.randint(100, 999)}.txt    {rng.randint(20, 90)} KB",
    ]
    rng.shuffle(listing)
    ls = b.call(
        "list_documents",
        {"folder": folder},
        "\n".join(listing),
        text="First a look at what else is in the folder.",
    )

    r1 = b.call("read_document", {"path": main}, text1)
    b.say(
        f"The draft has {len(k['sections'])} sections. What stands out: the codename Project {old_code} is used "
        f"throughout, the {fee_heading.lower()} section does not reference the annex milestones in detail, "
        "and a few obligations have no deadline. Otherwise it reads consistently."
    )

    current = list(lines)
    edits_done = 0

    def turn_codename() -> None:
        nonlocal current, edits_done
        b.user(
            f"Actually, call it Project {new_code}, not Project {old_code}, legal changed the codename last week."
        )
        count = sum(x.count(f"Project {old_code}") for x in current)
        b.call(
            "replace_all",
            {"path": main, "find": f"Project {old_code}", "replace": f"Project {new_code}"},
            f"Replaced {count} occurrences in {main}.",
        )
        current = [x.replace(f"Project {old_code}", f"Project {new_code}") for x in current]
        edits_done += 1
        b.say(f"Done: every mention now says Project {new_code}.")

    def turn_span() -> None:
        nonlocal current, edits_done
        words = " ".join(span.split()[:5])
        b.user(
            f"In section {span_section}, the sentence that starts with '{words}' needs to say that it only "
            "applies after the acceptance date. Please fix it."
        )
        new = span[:-1] + ", but only after the acceptance date."
        e = b.call(
            "edit_document",
            {"path": main, "old_text": span, "new_text": new},
            f"Edited {main}: 1 replacement in section {span_section}.",
            text="Updating that sentence exactly as it stands in the draft.",
        )
        b.plant(
            "verbatim_source",
            span,
            r1.result_seq,
            e.call_seq,
            "edit_document.old_text copies a sentence from the middle of the first read",
        )
        current = [x.replace(span, new) for x in current]
        edits_done += 1
        b.say(f"Section {span_section} now limits that obligation to the period after acceptance.")

    first = [turn_codename, turn_span]
    rng.shuffle(first)
    for f in first:
        f()

    contract_done = False
    state: dict[str, object] = {}
    # optional follow-up turns; at most two keep the session within ten user turns
    extra = set(rng.sample(["annex", "reread", "archive"], rng.randint(0, 2)))

    def annex_block() -> None:
        nonlocal current
        b.user(
            "What does the pricing annex say about the total fee and the milestones?"
            + ("" if "annex" in extra else " Then make our fee section match it.")
        )
        total = pool.amount(900_000, 3_400_000)
        ms = [pool.amount(90_000, 800_000) for _ in range(rng.randint(3, 5))]
        rows = [
            f"| M{i + 1} | {rng.choice(('Discovery complete', 'Design sign-off', 'Pilot live', 'Migration complete', 'Go-live', 'Hypercare exit'))} | {long_date(rng, 2025)} | EUR {m} |"
            for i, m in enumerate(ms)
        ]
        annex_text = "\n".join([
            f"# Pricing Annex: {client}", "", "## Rate card", "",
            "| Role | Day rate (EUR) | Estimated days |", "|---|---|---|",
            *(f"| {r} | {rng.randint(650, 1800):,} | {rng.randint(20, 240)} |" for r in ("Engagement lead", "Solution architect", "Senior consultant", "Consultant", "Analyst", "Test lead")),
            "", "## Milestones", "", "| # | Milestone | Target date | Amount |", "|---|---|---|---|", *rows, "",
            f"Total fee: EUR {total}, excluding VAT. Expenses are charged at cost up to 8% of the fee.", "",
            *Prose(rng, LEX).sentences(LEGAL, rng.randint(6, 12)),
        ])  # fmt: skip
        ra = b.call(
            "read_document",
            {"path": annex},
            annex_text,
            text="Opening the pricing annex from the folder.",
        )
        b.plant(
            "locator_handle",
            annex,
            ls.result_seq,
            ra.call_seq,
            "annex path from the folder listing, opened turns later",
        )
        n = b.say(
            f"The annex sets a total fee of EUR {total} (excluding VAT) over {len(ms)} milestones; expenses are capped at 8% of the fee."
        )
        b.plant("evidence_detail", total, ra.result_seq, n, "total fee read from the pricing annex")
        if "annex" in extra:  # the milestone figure is then used a turn later
            b.user(
                f"OK. Please make the {fee_heading.lower()} section match the annex: list the milestone payments."
            )
        b.call(
            "edit_document",
            {
                "path": main,
                "old_text": "The total fee is payable in instalments.",
                "new_text": f"The total fee of EUR {total} is payable against the milestones in the pricing annex.",
            },
            f"Error: old_text not found in {main}. No changes were made.",
            error=True,
        )
        b.call(
            "search_document",
            {"path": main, "query": "total fee"},
            "\n\n".join(x for x in current if "total fee" in x) or "(no matches)",
            text="My guess at the wording was off; searching for the exact sentence.",
        )
        para = next(x for x in current if "total fee" in x)
        old = para.split(". ")[0] + "."
        mi = rng.randrange(len(ms))
        new_sentence = f"The total fee for the Services is EUR {total}, payable against the milestones in the pricing annex, including EUR {ms[mi]} on milestone M{mi + 1}."
        ed = b.call(
            "edit_document",
            {"path": main, "old_text": old, "new_text": new_sentence},
            f"Edited {main}: 1 replacement in section {numbers[fee_heading]}.",
            text=f"Milestone M{mi + 1} in the annex is EUR {ms[mi]}; writing the annex figures into the fee sentence.",
        )
        b.plant(
            "evidence_detail",
            ms[mi],
            ra.result_seq,
            ed.call_seq,
            "milestone amount from the annex, used in a later edit"
            + (" (a turn later)" if "annex" in extra else ""),
        )
        current = [x.replace(old, new_sentence) for x in current]
        b.say(f"Section {numbers[fee_heading]} now matches the annex.")

    def reread_block() -> None:
        b.user(
            "Can you show me the current version of the whole thing? I want to skim it once more."
        )
        rev2 = pool.revision()
        rr = b.call("read_document", {"path": main}, header(rev2, current))
        if "reread" in extra:
            b.user("Which revision is that, so I can reference it in my email?")
        n = b.say(f"That is the current text, revision {rev2}, with all of today's edits in it.")
        b.plant(
            "live_state",
            rev2,
            rr.result_seq,
            n,
            "revision id only the latest read of the document shows",
        )

    def archive_block() -> None:
        b.user(
            "Compare with last year's signed agreement in the archive. Did it have an indexation clause?"
        )
        al = b.call(
            "list_documents",
            {"folder": "archive/2023"},
            "\n".join(
                sorted(
                    [
                        archive,
                        *(
                            f"archive/2023/{_slug(c)}-msa-2023-signed-{rng.randint(100, 999)}.md"
                            for c in pick(rng, COMPANIES, 6)
                            if c != client
                        ),
                    ]
                )
            ),
        )
        arch_lines, _, _ = _document(
            rng, kind, client, rng.choice(CODENAMES), f"{rng.randint(500, 2000)},000.00", 2023
        )
        route = pool.output_path("doc", "md")
        ar = b.call(
            "read_document",
            {"path": archive},
            truncated(arch_lines, 30, route),
            text="Opening last year's signed version.",
        )
        b.plant(
            "locator_handle",
            archive,
            al.result_seq,
            ar.call_seq,
            "archived document path from a folder listing",
        )
        state["route"] = (route, ar.result_seq, len(arch_lines))
        if "archive" not in extra:
            rd = b.call(
                "read_file",
                {"path": route, "offset": 30, "limit": len(arch_lines) - 30},
                "\n".join(f"{i:6d}\t{x}" for i, x in enumerate(arch_lines[30:], 31)),
                text="The harness cut it off; reading the rest from the saved copy.",
            )
            b.plant(
                "recovery_routing",
                route,
                ar.result_seq,
                rd.call_seq,
                "truncated document names its saved copy; read right away",
            )
            b.say(
                "No indexation clause anywhere in last year's version; fees were fixed for the whole term."
            )
        else:
            b.say(
                "The part shown has no indexation clause, but the document was cut off by the harness, so I can't rule it out yet."
            )
            b.user("Please check the rest of it too.")
            rd = b.call(
                "read_file",
                {"path": route, "offset": 30, "limit": len(arch_lines) - 30},
                "\n".join(f"{i:6d}\t{x}" for i, x in enumerate(arch_lines[30:], 31)),
            )
            b.plant(
                "recovery_routing",
                route,
                ar.result_seq,
                rd.call_seq,
                "truncated document names its saved copy; read a turn later",
            )
            b.say(
                "Checked the remainder: no indexation clause; fees were fixed for the whole term."
            )

    def guarded_block() -> None:
        nonlocal contract_done
        if contract_i == 0:
            b.user(f"The {guarded.lower()} wording feels weak. Can you tighten it?")
            n = b.say(
                f"You asked me not to change section {numbers[guarded]} ({guarded}) without asking you first, "
                "so I have not edited it. Proposed wording, for your approval: each obligation gets an explicit "
                "deadline and a named owner. Shall I apply it?"
            )
        elif contract_i == 1:
            b.user(
                "Could you add a sentence to the governance section saying the board meets monthly to prioritise the backlog?"
            )
            n = b.say(
                "Added in British spelling throughout, as you asked: the board meets monthly to prioritise the backlog. "
                "(I wrote prioritise, not prioritize.)"
            )
        else:
            b.user("Can you also update the date and the names at the very end?")
            n = b.say(
                "I'll leave the signature block at the end alone, since you said the e-signing tool generates it; "
                "the date and names there will be filled in when it is sent for signature."
            )
        b.plant("behavioural_contract", c_anchor, t1, n, f"user constraint: {c_text}")
        contract_done = True

    blocks = [annex_block, reread_block, archive_block, guarded_block]
    rng.shuffle(blocks)
    for f in blocks:
        f()
    b.user("Thanks. Anything else open before I send it to the client?")
    n = b.say(
        (
            f"Nothing blocking. The codename is Project {new_code} everywhere, the fee section matches "
            "the annex, and section numbering is unchanged. I'd suggest one last read of the "
            f"definitions by legal. {b.rule_honour()}"
        ).rstrip()
    )
    b.plant_rule(n)
    return f"finalise the {k['title'].lower()} for {client} ({main})"

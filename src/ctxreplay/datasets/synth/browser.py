"""Browser-research workload: search, fetch long pages, cite exact URLs, figures and quotes.

Planted dependencies:

- ``locator_handle``: result URLs seen only in ``search_web`` output, then fetched; a dataset
  link found inside a fetched page, cited in the final brief.
- ``evidence_detail``: a figure from a fetched page, used in the final brief.
- ``verbatim_source``: a sentence from the middle of a fetched page, quoted in the brief.
- ``live_state``: the figure that only the latest fetch of a live tracker page shows.
- ``recovery_routing``: a long report the harness truncated, read later from its saved copy.
- ``behavioural_contract``: a citation rule from the first user turn, honoured in the brief; and
  a standing rule the user adds in the 2nd to 4th turn ("From now on, write for a non-technical
  reader"), honoured at the end of the brief.
"""

from __future__ import annotations

import random
from collections.abc import Collection
from dataclasses import dataclass

from .builder import Rule, Step
from .common import READ_FILE, middle_spans, tool, truncated
from .vocab import FIRST_NAMES, LAST_NAMES, MONTHS, Prose, long_date, wrap
from .workload import Truncated, Unusable, Workload

NAME = "browser"

TOOLS = [
    tool("search_web", "Search the web; returns titles, URLs, dates and snippets.", query=("string", "Query.")),
    tool("fetch_url", "Fetch a page and return its main text as Markdown.", url=("string", "Absolute URL.")),
    READ_FILE,
]  # fmt: skip


@dataclass(frozen=True, slots=True)
class Topic:
    """A research topic: its figures, its live tracker, its publishers and its vocabulary."""

    topic: str
    metric: tuple[str, str]  # (what the statistics count, unit)
    live: tuple[str, str]  # (what the live tracker shows, unit)
    tracker: str  # the tracker's host
    orgs: tuple[tuple[str, str], ...]  # publishers: (name, host)
    lex: dict[str, tuple[str, ...]]  # filler vocabulary for ``Prose``
    sub: str  # the sub-topic critics argue about


TOPICS = (
    Topic(
        topic="grid-scale battery storage in Europe",
        metric=("installed battery storage capacity", "GWh"),
        live=("operational storage capacity", "MW"),
        tracker="live.gridwatch.eu",
        orgs=(("European Storage Observatory", "www.storage-observatory.eu"), ("Grid Futures Institute", "gridfutures.org"),
                 ("Nordic Energy Review", "nordicenergyreview.com"), ("Agency for Network Operators", "acno.europa.eu"),
                 ("Battery Market Watch", "batterymarketwatch.net"), ("Clean Power Journal", "cleanpowerjournal.com")),
        lex={"actor": ("grid operators", "utilities", "merchant developers", "regulators", "aggregators"),
                "thing": ("co-located solar and storage", "frequency response markets", "capacity auctions",
                          "grid connection queues", "long-duration storage pilots", "behind-the-meter batteries"),
                "trend": ("grew faster than expected", "stalled in several markets", "shifted toward four-hour systems",
                          "became the main driver of new projects", "slowed after tariff changes")},
        sub="revenue stacking",
    ),
    Topic(
        topic="heat pump adoption in residential buildings",
        metric=("annual heat pump sales", "thousand units"),
        live=("grant applications received", "applications"),
        tracker="tracker.heatmonitor.org",
        orgs=(("Heat Transition Lab", "heattransitionlab.org"), ("European Heating Association", "www.eu-heating.org"),
                 ("Building Retrofit Monitor", "retrofitmonitor.eu"), ("Clean Homes Quarterly", "cleanhomesquarterly.com"),
                 ("Institute for Residential Energy", "ire-research.org"), ("Installer Weekly", "installerweekly.co.uk")),
        lex={"actor": ("installers", "housing associations", "homeowners", "ministries", "manufacturers"),
                "thing": ("subsidy schemes", "installer training", "electricity-to-gas price ratios",
                          "retrofit loans", "noise regulations", "hybrid systems"),
                "trend": ("fell after the subsidy cut", "recovered in the second half", "outpaced gas boiler sales",
                          "was held back by installer shortages", "doubled in some regions")},
        sub="installer shortages",
    ),
    Topic(
        topic="returns in cross-border e-commerce",
        metric=("parcels returned across borders", "million parcels"),
        live=("parcels in the returns backlog", "parcels"),
        tracker="status.parcelflows.eu",
        orgs=(("Parcel Flows Europe", "parcelflows.eu"), ("Retail Logistics Review", "retaillogisticsreview.com"),
                 ("Consumer Commerce Institute", "www.cci-research.org"), ("Returns Benchmark", "returnsbenchmark.io"),
                 ("European Postal Forum", "europostforum.org"), ("Checkout Weekly", "checkoutweekly.com")),
        lex={"actor": ("marketplaces", "carriers", "fashion retailers", "consumer agencies", "payment providers"),
                "thing": ("free returns policies", "returns consolidation hubs", "label-free drop-off",
                          "resale of returned goods", "customs refunds", "size recommendation tools"),
                "trend": ("rose with fashion sales", "dropped after fees were introduced", "concentrated in three markets",
                          "moved to parcel lockers", "became a margin problem")},
        sub="returns fees",
    ),
    Topic(
        topic="reliability of public EV charging networks",
        metric=("public fast-charging points", "thousand points"),
        live=("chargers reported out of service", "chargers"),
        tracker="uptime.chargewatch.eu",
        orgs=(("ChargeWatch Europe", "chargewatch.eu"), ("Mobility Data Institute", "mobilitydata.org"),
                 ("Electric Roads Review", "electricroadsreview.com"), ("Drivers' Association Research", "www.driversresearch.org"),
                 ("Charging Interoperability Forum", "cif-forum.eu"), ("EV Fleet Journal", "evfleetjournal.com")),
        lex={"actor": ("charge point operators", "drivers", "fleet managers", "municipalities", "roaming platforms"),
                "thing": ("uptime obligations", "payment terminals", "roaming agreements",
                          "maintenance contracts", "grid connection delays", "ad hoc pricing rules"),
                "trend": ("improved after uptime rules", "varied widely between operators", "lagged behind new installations",
                          "worsened in winter", "became a regulatory priority")},
        sub="uptime obligations",
    ),
)  # fmt: skip

PAGE = (
    "{org} says that {thing} {trend} in {year}.",
    "Several {actor} told us that {thing} matters more than headline prices.",
    "The picture differs by country: {thing} {trend} in the north, while the south lagged.",
    "In interviews, {actor} pointed to {thing} as the main bottleneck for the next two years.",
    "Analysts at {org} expect that {thing} will shape the market until at least {fyear}.",
    "Critics argue that {thing} benefits large {actor} more than small ones.",
    "Since {month} {year}, {thing} has {trend}, according to data compiled by {org}.",
    "For {actor}, the practical question is whether {thing} pays off within five years.",
    "The report notes that {thing} {trend}, although the sample is small.",
    "Both {actor} and {actor} have asked for clearer rules on {thing}.",
)  # fmt: skip

#: Citation rules of the first user turn, honoured in the brief.
CONTRACTS = (
    Rule("Please never cite Wikipedia, only primary sources.", "never cite Wikipedia",
     "As you asked, I never cite Wikipedia; every source below is a primary one."),
    Rule("Give the publication date next to every source you cite.", "publication date next to every source",
     "As requested, the publication date next to every source is given in brackets."),
    Rule("Keep the brief under 300 words, it goes into a slide note.", "under 300 words",
     "The brief is under 300 words, as you asked."),
)  # fmt: skip

#: Standing rules the user adds mid-session; honoured at the end of the brief.
RULES = (
    Rule(
        "From now on, write for a non-technical reader, the brief goes to the board.",
        "non-technical reader",
        "It is written for a non-technical reader, as you asked.",
    ),
    Rule(
        "Also, don't use sources from before 2023 from now on, the market changed too much since.",
        "sources from before 2023",
        "I used no sources from before 2023.",
    ),
    Rule(
        "One more thing: make sure the brief ends with one open question for the board.",
        "one open question for the board",
        "As you asked, I end with one open question for the board: will {sub} still pay off "
        "once support schemes are phased out?",
    ),
    Rule(
        "Also, from now on avoid hype words like breakthrough or revolution, the client hates that.",
        "breakthrough or revolution",
        "I kept out hype words like breakthrough or revolution.",
    ),
)


def _page(
    rng: random.Random,
    t: Topic,
    org: str,
    title: str,
    n_paras: int,
    extra: list[str],
    avoid: Collection[str] = (),
    year: int | None = None,
) -> tuple[str, list[str]]:
    """A fetched article as Markdown, and its sentences (for verbatim candidates)."""
    prose = Prose(rng, {**t.lex, "org": [o for o, _ in t.orgs]})
    lines = [
        f"# {title}",
        "",
        f"By {rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)} · {org} · {long_date(rng, year or rng.choice((2023, 2024)))}",
        "",
    ]  # fmt: skip
    sentences: list[str] = []
    inserts = dict(zip(rng.sample(range(n_paras), len(extra)), extra, strict=True))
    for i in range(n_paras):
        if i and i % 4 == 0:
            lines += [f"## {prose.fill('{thing}').capitalize()}", ""]
        sents = prose.sentences(PAGE, rng.randint(4, 7), avoid)
        if i in inserts:
            sents.insert(rng.randrange(len(sents) + 1), inserts[i])
        sentences += sents
        lines += [" ".join(sents), ""]
    lines += ["Related reading: the methodology note and the country annex are available on request.",
              f"© {org}. All rights reserved."]  # fmt: skip
    return "\n".join(lines), sentences


#: A search result: (title, URL, publisher).
Result = tuple[str, str, str]
TRACKER_COUNTRIES = (
    "Germany", "France", "Italy", "Spain", "Netherlands", "Poland", "Sweden", "Belgium", "Austria",
    "Denmark",
)  # fmt: skip


class Browser(Workload):
    """Search, read long pages, check a live tracker and counterpoints, then write a brief."""

    NAME = NAME
    TOOLS = TOOLS

    t: Topic
    orgs: list[tuple[str, str]]  # publishers (name, host) in this session's order
    contract: Rule
    t1: int
    avoid: set[str]  # sentences filler text must not repeat (the quote)
    stats_url: str
    outlook_url: str
    paywalled_url: str
    search: Step
    figure: str
    data_url: str
    stats_page: Step
    quote: str
    outlook_page: Step
    review: Truncated  # the long critical review the harness cut

    def build(self) -> str:
        """Search and read, the later turns in a random order, then the brief."""
        self.brief()
        self.first_search()
        self.read_statistics()
        self.read_outlook()
        self.later_turns()
        return self.write_brief()

    @property
    def tracker_url(self) -> str:
        """The live tracker's dashboard URL (the user gives it, so it is no anchor)."""
        return f"https://{self.t.tracker}/dashboard/{self.t.live[0].replace(' ', '-')}"

    def brief(self) -> None:
        """The topic, the system prompt, the request with its citation rule, the standing rule."""
        rng = self.rng
        self.t = t = rng.choice(TOPICS)
        self.orgs = list(t.orgs)
        rng.shuffle(self.orgs)
        self.system(
            "You are a research assistant with web access. Find recent, reliable sources, read "
            "them, and write briefs that cite exact URLs and quote sources word for word where you "
            "quote."
        )
        self.contract = rng.choice(CONTRACTS)
        self.t1 = self.b.user(
            f"I'm preparing a brief on {t.topic}. Find recent figures and what experts say, with "
            f"sources. {self.contract.sentence}"
        )
        self.b.standing_rule(rng.choice(RULES).format(sub=t.sub))
        self.avoid = set()

    def results(self, n: int, fixed: list[Result]) -> tuple[str, list[Result]]:
        """search_web output: ``fixed`` results, filler up to ``n``, and the Wikipedia entry."""
        rng, t = self.rng, self.t
        items = list(fixed)
        while len(items) < n:
            org, host = rng.choice(self.orgs)
            items.append((f"{Prose(rng, t.lex).fill('{thing}').capitalize()}: what changed in {rng.choice((2023, 2024))}",
                          self.pool.url(host, rng.choice(("news", "insights", "blog", "analysis")), f"{rng.choice(MONTHS).lower()}-{rng.randint(2023, 2024)}"), org))  # fmt: skip
        items.append(
            (
                f"{t.topic.capitalize()} - Wikipedia",
                f"https://en.wikipedia.org/wiki/{t.topic.title().replace(' ', '_')}",
                "Wikipedia",
            )
        )
        rng.shuffle(items)
        out = []
        for i, (title, url, org) in enumerate(items, 1):
            snippet = Prose(rng, {**t.lex, "org": [org]}).sentences(PAGE, 1, self.avoid)[0]
            out.append(f"{i}. {title}\n   {url}\n   {long_date(rng, 2024)} · {snippet}")
        return "\n\n".join(out), items

    def first_search(self) -> None:
        """A broad search: the statistics, outlook and paywalled URLs are only in its output."""
        rng, pool, t = self.rng, self.pool, self.t
        (o1, h1), (o2, h2), (o3, h3) = self.orgs[:3]
        self.stats_url = pool.url(h1, "research", "2024", t.metric[0].replace(" ", "-"))
        self.outlook_url = pool.url(h2, "analysis", t.topic.split()[0] + "-outlook")
        self.paywalled_url = pool.url(h3, "premium", "market-report")
        sr_text, _ = self.results(rng.randint(7, 9), [(f"{t.metric[0].capitalize()}: annual statistics 2024", self.stats_url, o1),
                                                      (f"Outlook: {t.topic}", self.outlook_url, o2), (f"Market report: {t.topic}", self.paywalled_url, o3)])  # fmt: skip
        self.search = self.b.call(
            "search_web",
            {"query": f"{t.topic} {t.metric[0]} 2024"},
            sr_text,
            text="Starting with a broad search for recent statistics.",
        )

    def read_statistics(self) -> None:
        """The statistics page holds the figure and a dataset link; the paywalled one fails."""
        pool, t = self.pool, self.t
        o1, h1 = self.orgs[0]
        self.figure = f"{pool.decimal(12, 480, 1)} {t.metric[1]}"
        self.data_url = pool.url(
            f"data.{h1.removeprefix('www.')}",
            "downloads",
            t.metric[0].replace(" ", "_"),
            ext=".csv",
        )
        fig_sentence = f"By the end of 2024, {o1} counted {self.figure} of {t.metric[0]}, the highest level on record."  # fmt: skip
        link_sentence = f"The underlying country series can be downloaded from {self.data_url} under a CC BY 4.0 licence."  # fmt: skip
        text, _ = _page(
            self.rng,
            t,
            o1,
            f"{t.metric[0].capitalize()}: annual statistics 2024",
            self.b.size(14, 24),
            [fig_sentence, link_sentence],
            year=2025,
        )
        self.stats_page = self.fetch_found(
            self.stats_url, text, f"The {o1} statistics page looks like the primary source."
        )
        self.b.call("fetch_url", {"url": self.paywalled_url}, f"Error: HTTP 403 Forbidden for {self.paywalled_url} (subscriber-only content).",
                    error=True, text="The market report might have more detail.")  # fmt: skip

    def fetch_found(self, url: str, page: str, text: str) -> Step:
        """fetch_url of a result URL the first search listed."""
        step = self.b.call("fetch_url", {"url": url}, page, text=text)
        self.b.plant(
            "locator_handle",
            url,
            self.search.result_seq,
            step.call_seq,
            "result URL seen only in the search output, then fetched",
        )
        return step

    def read_outlook(self) -> None:
        """The outlook page: a sentence from its middle is quoted in the brief."""
        rng, t = self.rng, self.t
        o1, o2 = self.orgs[0][0], self.orgs[1][0]
        text, sentences = _page(rng, t, o2, f"Outlook: {t.topic}", self.b.size(16, 30), [])
        quotes = [q for q in middle_spans(text, sentences) if not self.b.seen(q)]
        if not quotes:
            raise Unusable("no usable quote")
        self.quote = rng.choice(quotes)
        self.avoid.add(self.quote)
        self.outlook_page = self.fetch_found(
            self.outlook_url, text, f"Paywalled. Reading the {o2} outlook instead."
        )
        self.b.say(
            f"So far: {o1} publishes the annual statistics with a downloadable country series, and {o2} has an "
            "outlook piece with expert views. One market report is paywalled. I'll keep going."
        )  # fmt: skip

    # --- later turns, in a random order --------------------------------------------------------
    def later_turns(self) -> None:
        """The tracker, the critics, maybe newer sources; the long review is read back once."""
        rng = self.rng
        blocks = [self.tracker, self.critics] + ([self.newer] if rng.random() < 0.7 else [])
        rng.shuffle(blocks)
        followed = False
        for step in blocks:
            step()
            if step == self.critics and rng.random() < 0.6:
                self.follow_up()
                followed = True
        if not followed:
            self.follow_up()

    def tracker_page(self, value: str, clock: str) -> str:
        """The live tracker as fetched at ``clock``, showing the total ``value``."""
        rng, t = self.rng, self.t
        rows = [
            f"| {c} | {rng.randint(100, 9000):,} | {rng.uniform(-4, 9):+.1f}% |"
            for c in TRACKER_COUNTRIES
        ]
        prose = Prose(rng, {**t.lex, "org": [self.orgs[0][0]]})
        return "\n".join([f"# Live tracker: {t.live[0]}", "", f"Last updated {clock} UTC. Figures refresh several times a day.", "",
                          f"Total {t.live[0]}: {value}", "", "| Country | Value | Change vs last week |", "|---|---|---|", *rows, "",
                          *wrap(" ".join(prose.sentences(PAGE, rng.randint(4, 7), self.avoid)))])  # fmt: skip

    def tracker(self) -> None:
        """The same live page fetched twice: only the latest fetch shows the current total."""
        rng, pool, t, url = self.rng, self.pool, self.t, self.tracker_url
        self.b.user(f"There's also a live tracker: {url} Can you check what it shows right now?")
        v1 = f"{pool.count(2_000, 60_000)} {t.live[1]}"
        self.b.call(
            "fetch_url",
            {"url": url},
            self.tracker_page(v1, f"{rng.randint(6, 10):02d}:{rng.randint(10, 59)}"),
        )
        self.b.say(
            "The tracker is up; it shows today's total and a country breakdown. It refreshes several times a day."
        )  # fmt: skip
        self.b.user(
            rng.choice(
                (
                    f"They said the tracker updates around noon. Check {url} again?",
                    f"Can you re-check {url}? It should have refreshed by now.",
                )
            )
        )
        v2 = f"{pool.count(2_000, 60_000)} {t.live[1]}"
        f = self.b.call(
            "fetch_url",
            {"url": url},
            self.tracker_page(v2, f"{rng.randint(12, 15):02d}:{rng.randint(10, 59)}"),
        )
        self.report_live(
            v2,
            f.result_seq,
            f"After the refresh the tracker shows a total of {v2}. I'll use the refreshed figure.",
            "figure only the latest fetch of the same live page shows",
            "The tracker has refreshed and the total moved noticeably; I'll use the refreshed "
            "figure in the brief.",
        )

    def critics(self) -> None:
        """A second search finds a long critical review; the harness truncates it."""
        rng, pool, t = self.rng, self.pool, self.t
        o4, h4 = self.orgs[3]
        self.b.user("Now look for criticism or counterpoints, I don't want a one-sided brief.")
        url = pool.url(h4, "reports", f"{t.sub.replace(' ', '-')}-review")
        title = f"Review: the case against {t.sub}"
        sr, _ = self.results(rng.randint(6, 8), [(title, url, o4)])
        search = self.b.call("search_web", {"query": f"{t.topic} criticism {t.sub}"}, sr)
        long_text, _ = _page(rng, t, o4, title, self.b.size(40, 60), [], self.avoid)
        long_lines = [x for para in long_text.split("\n") for x in (wrap(para) if para else [""])]
        route = pool.output_path("page", "md")
        keep = rng.randint(60, 90)
        if rng.random() < 0.5:
            self.b.say(
                f"The most substantial critical piece is a long review by {o4}. Shall I read it in full?"
            )  # fmt: skip
            self.b.user(
                rng.choice(("Yes, read it.", "Go ahead.", "Yes please, that sounds useful."))
            )
        f = self.b.call(
            "fetch_url",
            {"url": url},
            truncated(long_lines, keep, route),
            text=f"Reading the {o4} review.",
        )
        self.b.plant(
            "locator_handle",
            url,
            search.result_seq,
            f.call_seq,
            "result URL from the second search, then fetched",
        )
        self.b.say(
            f"The {o4} review argues the opposite case on {t.sub}; it is long and the harness cut it, "
            "but the first part already makes the main argument."
        )  # fmt: skip
        self.review = Truncated(route, f.result_seq, long_lines, keep)

    def follow_up(self) -> None:
        """A later question sends the agent to the review's saved copy."""
        actor = self.t.lex["actor"][0]
        self.b.user(f"Does that long review say anything concrete about {actor} further down?")
        self.recover(
            self.review,
            "truncated page names its saved copy; read in a later turn",
            "Reading the rest of the review from the saved copy.",
        )
        self.b.say(
            f"Yes: further down it discusses {actor} at length, mostly about costs and timing."
        )

    def newer(self) -> None:
        """A search for newer material; one result is fetched."""
        rng, t = self.rng, self.t
        self.b.user("Is there anything newer from this year?")
        sr, items = self.results(rng.randint(6, 9), [])
        self.b.call("search_web", {"query": f"{t.topic} 2025 update"}, sr)
        title, url, org = next(i for i in items if "wikipedia" not in i[1])
        page, _ = _page(rng, t, org, title, self.b.size(12, 22), [], self.avoid)
        search_seq = len(self.b.messages) - 1
        fx = self.b.call(
            "fetch_url",
            {"url": url},
            page,
            text=f"The {org} piece is the most recent; checking whether it has new data.",
        )
        self.b.plant(
            "locator_handle",
            url,
            search_seq,
            fx.call_seq,
            "result URL seen only in the search output, then fetched",
        )
        self.b.say(
            "Nothing newer with original data; the recent items are commentary on the 2024 figures."
        )

    def write_brief(self) -> str:
        """The brief cites the figure, the dataset link and the quote; honours the rules."""
        t = self.t
        o1, o2, o4 = self.orgs[0][0], self.orgs[1][0], self.orgs[3][0]
        self.b.user("Great, please write the brief now, with citations.")
        live = self.live_line("- Live: the tracker you pointed me to now shows {value}.\n")
        n = self.b.say(
            (
                f"Brief: {t.topic}\n\n"
                f"- Scale: {o1} counts {self.figure} of {t.metric[0]} at the end of 2024 ({self.stats_url}). Country series: {self.data_url}\n"
                f"- Outlook: {o2} writes: \u201c{self.quote}\u201d ({self.outlook_url})\n"
                + live
                + f"- Counterpoint: {o4} questions {t.sub} and its costs.\n\n{self.contract.honour} "
                + self.b.rule_honour()
            ).rstrip()
        )  # fmt: skip
        self.plant_deferred_live(
            n, "figure only the latest fetch of the live page shows, used in the brief"
        )
        src = self.stats_page.result_seq
        self.b.plant("evidence_detail", self.figure, src, n, "figure from a fetched page, cited turns later")  # fmt: skip
        self.b.plant(
            "locator_handle",
            self.data_url,
            src,
            n,
            "dataset link found inside a fetched page, cited in the brief",
        )
        self.b.plant(
            "verbatim_source",
            self.quote,
            self.outlook_page.result_seq,
            n,
            "sentence from the middle of a fetched page, quoted word for word",
        )
        self.close([self.contract], self.t1, n)
        return f"research brief on {t.topic}"


#: The script ``WORKLOADS`` runs for this workload.
build = Browser.script

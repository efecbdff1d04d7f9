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

from .builder import Rule, SessionBuilder
from .common import READ_FILE, TRUNCATION_NOTE, middle_spans, tool, tools_block, truncated
from .vocab import FIRST_NAMES, LAST_NAMES, MONTHS, Prose, long_date, wrap

NAME = "browser"

TOOLS = [
    tool("search_web", "Search the web; returns titles, URLs, dates and snippets.", query=("string", "Query.")),
    tool("fetch_url", "Fetch a page and return its main text as Markdown.", url=("string", "Absolute URL.")),
    READ_FILE,
]  # fmt: skip

TOPICS = (
    {
        "topic": "grid-scale battery storage in Europe",
        "metric": ("installed battery storage capacity", "GWh"),
        "live": ("operational storage capacity", "MW"),
        "tracker": "live.gridwatch.eu",
        "orgs": (("European Storage Observatory", "www.storage-observatory.eu"), ("Grid Futures Institute", "gridfutures.org"),
                 ("Nordic Energy Review", "nordicenergyreview.com"), ("Agency for Network Operators", "acno.europa.eu"),
                 ("Battery Market Watch", "batterymarketwatch.net"), ("Clean Power Journal", "cleanpowerjournal.com")),
        "lex": {"actor": ("grid operators", "utilities", "merchant developers", "regulators", "aggregators"),
                "thing": ("co-located solar and storage", "frequency response markets", "capacity auctions",
                          "grid connection queues", "long-duration storage pilots", "behind-the-meter batteries"),
                "trend": ("grew faster than expected", "stalled in several markets", "shifted toward four-hour systems",
                          "became the main driver of new projects", "slowed after tariff changes")},
        "sub": "revenue stacking",
    },
    {
        "topic": "heat pump adoption in residential buildings",
        "metric": ("annual heat pump sales", "thousand units"),
        "live": ("grant applications received", "applications"),
        "tracker": "tracker.heatmonitor.org",
        "orgs": (("Heat Transition Lab", "heattransitionlab.org"), ("European Heating Association", "www.eu-heating.org"),
                 ("Building Retrofit Monitor", "retrofitmonitor.eu"), ("Clean Homes Quarterly", "cleanhomesquarterly.com"),
                 ("Institute for Residential Energy", "ire-research.org"), ("Installer Weekly", "installerweekly.co.uk")),
        "lex": {"actor": ("installers", "housing associations", "homeowners", "ministries", "manufacturers"),
                "thing": ("subsidy schemes", "installer training", "electricity-to-gas price ratios",
                          "retrofit loans", "noise regulations", "hybrid systems"),
                "trend": ("fell after the subsidy cut", "recovered in the second half", "outpaced gas boiler sales",
                          "was held back by installer shortages", "doubled in some regions")},
        "sub": "installer shortages",
    },
    {
        "topic": "returns in cross-border e-commerce",
        "metric": ("parcels returned across borders", "million parcels"),
        "live": ("parcels in the returns backlog", "parcels"),
        "tracker": "status.parcelflows.eu",
        "orgs": (("Parcel Flows Europe", "parcelflows.eu"), ("Retail Logistics Review", "retaillogisticsreview.com"),
                 ("Consumer Commerce Institute", "www.cci-research.org"), ("Returns Benchmark", "returnsbenchmark.io"),
                 ("European Postal Forum", "europostforum.org"), ("Checkout Weekly", "checkoutweekly.com")),
        "lex": {"actor": ("marketplaces", "carriers", "fashion retailers", "consumer agencies", "payment providers"),
                "thing": ("free returns policies", "returns consolidation hubs", "label-free drop-off",
                          "resale of returned goods", "customs refunds", "size recommendation tools"),
                "trend": ("rose with fashion sales", "dropped after fees were introduced", "concentrated in three markets",
                          "moved to parcel lockers", "became a margin problem")},
        "sub": "returns fees",
    },
    {
        "topic": "reliability of public EV charging networks",
        "metric": ("public fast-charging points", "thousand points"),
        "live": ("chargers reported out of service", "chargers"),
        "tracker": "uptime.chargewatch.eu",
        "orgs": (("ChargeWatch Europe", "chargewatch.eu"), ("Mobility Data Institute", "mobilitydata.org"),
                 ("Electric Roads Review", "electricroadsreview.com"), ("Drivers' Association Research", "www.driversresearch.org"),
                 ("Charging Interoperability Forum", "cif-forum.eu"), ("EV Fleet Journal", "evfleetjournal.com")),
        "lex": {"actor": ("charge point operators", "drivers", "fleet managers", "municipalities", "roaming platforms"),
                "thing": ("uptime obligations", "payment terminals", "roaming agreements",
                          "maintenance contracts", "grid connection delays", "ad hoc pricing rules"),
                "trend": ("improved after uptime rules", "varied widely between operators", "lagged behind new installations",
                          "worsened in winter", "became a regulatory priority")},
        "sub": "uptime obligations",
    },
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

CONTRACTS = (
    ("Please never cite Wikipedia, only primary sources.", "never cite Wikipedia",
     "As you asked, I never cite Wikipedia; every source below is a primary one."),
    ("Give the publication date next to every source you cite.", "publication date next to every source",
     "As requested, the publication date next to every source is given in brackets."),
    ("Keep the brief under 300 words, it goes into a slide note.", "under 300 words",
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
    t: dict,
    org: str,
    title: str,
    n_paras: int,
    extra: list[str],
    avoid: Collection[str] = (),
    year: int | None = None,
) -> tuple[str, list[str]]:
    """A fetched article as Markdown, and its sentences (for verbatim candidates)."""
    lex = {**t["lex"], "org": [o for o, _ in t["orgs"]]}
    prose = Prose(rng, lex)
    lines = [
        f"# {title}",
        "",
        f"By {rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)} · {org} · {long_date(rng, year or rng.choice((2023, 2024)))}",
        "",
    ]
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


def build(b: SessionBuilder) -> str:
    rng = b.rng
    pool = b.pool
    t = rng.choice(TOPICS)
    orgs = list(t["orgs"])
    rng.shuffle(orgs)
    b.system(
        "You are a research assistant with web access. Find recent, reliable sources, read them, "
        "and write briefs that cite exact URLs and quote sources word for word where you quote.\n"
        f"{TRUNCATION_NOTE}\n\n# Tools\n{tools_block(TOOLS)}"
    )
    contract = rng.choice(CONTRACTS)
    t1 = b.user(
        f"I'm preparing a brief on {t['topic']}. Find recent figures and what experts say, with "
        f"sources. {contract[0]}"
    )
    b.standing_rule(rng.choice(RULES).format(sub=t["sub"]))

    def results(
        n: int, fixed: list[tuple[str, str, str]]
    ) -> tuple[str, list[tuple[str, str, str]]]:
        items = list(fixed)
        while len(items) < n:
            org, host = rng.choice(orgs)
            items.append((f"{Prose(rng, t['lex']).fill('{thing}').capitalize()}: what changed in {rng.choice((2023, 2024))}",
                          pool.url(host, rng.choice(("news", "insights", "blog", "analysis")), f"{rng.choice(MONTHS).lower()}-{rng.randint(2023, 2024)}"), org))  # fmt: skip
        items.append(
            (
                f"{t['topic'].capitalize()} - Wikipedia",
                f"https://en.wikipedia.org/wiki/{t['topic'].title().replace(' ', '_')}",
                "Wikipedia",
            )
        )
        rng.shuffle(items)
        out = []
        for i, (title, url, org) in enumerate(items, 1):
            snippet = Prose(rng, {**t["lex"], "org": [org]}).sentences(PAGE, 1, avoid)[0]
            out.append(f"{i}. {title}\n   {url}\n   {long_date(rng, 2024)} · {snippet}")
        return "\n\n".join(out), items

    avoid: set[str] = set()
    (o1, h1), (o2, h2), (o3, h3), (o4, h4) = orgs[:4]
    u1 = pool.url(h1, "research", "2024", t["metric"][0].replace(" ", "-"))
    u2 = pool.url(h2, "analysis", t["topic"].split()[0] + "-outlook")
    u_pay = pool.url(h3, "premium", "market-report")
    q1 = f"{t['topic']} {t['metric'][0]} 2024"
    sr_text, _ = results(rng.randint(7, 9), [(f"{t['metric'][0].capitalize()}: annual statistics 2024", u1, o1),
                                             (f"Outlook: {t['topic']}", u2, o2), (f"Market report: {t['topic']}", u_pay, o3)])  # fmt: skip
    s1 = b.call(
        "search_web",
        {"query": q1},
        sr_text,
        text="Starting with a broad search for recent statistics.",
    )

    # page 1: the statistics, with a figure and a dataset link
    figure = f"{pool.decimal(12, 480, 1)} {t['metric'][1]}"
    data_url = pool.url(
        f"data.{h1.removeprefix('www.')}", "downloads", t["metric"][0].replace(" ", "_"), ext=".csv"
    )
    fig_sentence = f"By the end of 2024, {o1} counted {figure} of {t['metric'][0]}, the highest level on record."
    link_sentence = f"The underlying country series can be downloaded from {data_url} under a CC BY 4.0 licence."
    p1_text, _ = _page(
        rng,
        t,
        o1,
        f"{t['metric'][0].capitalize()}: annual statistics 2024",
        b.size(14, 24),
        [fig_sentence, link_sentence],
        year=2025,
    )
    f1 = b.call(
        "fetch_url",
        {"url": u1},
        p1_text,
        text=f"The {o1} statistics page looks like the primary source.",
    )
    b.plant(
        "locator_handle",
        u1,
        s1.result_seq,
        f1.call_seq,
        "result URL seen only in the search output, then fetched",
    )
    b.call("fetch_url", {"url": u_pay}, f"Error: HTTP 403 Forbidden for {u_pay} (subscriber-only content).",
           error=True, text="The market report might have more detail.")  # fmt: skip
    p2_text, p2_sentences = _page(rng, t, o2, f"Outlook: {t['topic']}", b.size(16, 30), [])
    quotes = [q for q in middle_spans(p2_text, p2_sentences) if not b.seen(q)]
    if not quotes:
        return "no usable quote"
    quote = rng.choice(quotes)
    avoid.add(quote)
    f2 = b.call(
        "fetch_url", {"url": u2}, p2_text, text=f"Paywalled. Reading the {o2} outlook instead."
    )
    b.plant(
        "locator_handle",
        u2,
        s1.result_seq,
        f2.call_seq,
        "result URL seen only in the search output, then fetched",
    )
    b.say(
        f"So far: {o1} publishes the annual statistics with a downloadable country series, and {o2} has an "
        "outlook piece with expert views. One market report is paywalled. I'll keep going."
    )

    tracker_host = t["tracker"]
    tracker = f"https://{tracker_host}/dashboard/{t['live'][0].replace(' ', '-')}"
    state: dict[str, object] = {}

    def tracker_block() -> None:
        b.user(f"There's also a live tracker: {tracker} Can you check what it shows right now?")

        def tracker_page(value: str, clock: str) -> str:
            rows = [
                f"| {c} | {rng.randint(100, 9000):,} | {rng.uniform(-4, 9):+.1f}% |"
                for c in (
                    "Germany",
                    "France",
                    "Italy",
                    "Spain",
                    "Netherlands",
                    "Poland",
                    "Sweden",
                    "Belgium",
                    "Austria",
                    "Denmark",
                )
            ]
            return "\n".join([f"# Live tracker: {t['live'][0]}", "", f"Last updated {clock} UTC. Figures refresh several times a day.", "",
                              f"Total {t['live'][0]}: {value}", "", "| Country | Value | Change vs last week |", "|---|---|---|", *rows, "",
                              *wrap(" ".join(Prose(rng, {**t["lex"], "org": [o1]}).sentences(PAGE, rng.randint(4, 7), avoid)))])  # fmt: skip

        v1 = f"{pool.count(2_000, 60_000)} {t['live'][1]}"
        b.call(
            "fetch_url",
            {"url": tracker},
            tracker_page(v1, f"{rng.randint(6, 10):02d}:{rng.randint(10, 59)}"),
        )
        b.say(
            "The tracker is up; it shows today's total and a country breakdown. It refreshes several times a day."
        )
        b.user(
            rng.choice(
                (
                    f"They said the tracker updates around noon. Check {tracker} again?",
                    f"Can you re-check {tracker}? It should have refreshed by now.",
                )
            )
        )
        v2 = f"{pool.count(2_000, 60_000)} {t['live'][1]}"
        f = b.call(
            "fetch_url",
            {"url": tracker},
            tracker_page(v2, f"{rng.randint(12, 15):02d}:{rng.randint(10, 59)}"),
        )
        if rng.random() < 0.5:
            n = b.say(
                f"After the refresh the tracker shows a total of {v2}. I'll use the refreshed figure."
            )
            b.plant(
                "live_state",
                v2,
                f.result_seq,
                n,
                "figure only the latest fetch of the same live page shows",
            )
        else:  # used in the brief instead
            b.say(
                "The tracker has refreshed and the total moved noticeably; I'll use the refreshed figure in the brief."
            )
            state["live"] = (v2, f.result_seq)

    def critics_block() -> None:
        b.user("Now look for criticism or counterpoints, I don't want a one-sided brief.")
        u3 = pool.url(h4, "reports", f"{t['sub'].replace(' ', '-')}-review")
        sr, _ = results(rng.randint(6, 8), [(f"Review: the case against {t['sub']}", u3, o4)])
        s2 = b.call("search_web", {"query": f"{t['topic']} criticism {t['sub']}"}, sr)
        long_text, _ = _page(
            rng, t, o4, f"Review: the case against {t['sub']}", b.size(40, 60), [], avoid
        )
        long_lines = [x for para in long_text.split("\n") for x in (wrap(para) if para else [""])]
        route = pool.output_path("page", "md")
        keep = rng.randint(60, 90)
        if rng.random() < 0.5:
            b.say(
                f"The most substantial critical piece is a long review by {o4}. Shall I read it in full?"
            )
            b.user(rng.choice(("Yes, read it.", "Go ahead.", "Yes please, that sounds useful.")))
        f = b.call(
            "fetch_url",
            {"url": u3},
            truncated(long_lines, keep, route),
            text=f"Reading the {o4} review.",
        )
        b.plant(
            "locator_handle",
            u3,
            s2.result_seq,
            f.call_seq,
            "result URL from the second search, then fetched",
        )
        b.say(
            f"The {o4} review argues the opposite case on {t['sub']}; it is long and the harness cut it, "
            "but the first part already makes the main argument."
        )
        state["route"] = (route, f.result_seq, long_lines, keep)

    def followup_block() -> None:
        route, src, long_lines, keep = state["route"]  # type: ignore[misc]
        b.user(
            f"Does that long review say anything concrete about {t['lex']['actor'][0]} further down?"
        )
        r = b.call(
            "read_file",
            {"path": route, "offset": keep, "limit": len(long_lines) - keep},
            "\n".join(f"{i:6d}\t{x}" for i, x in enumerate(long_lines[keep:], keep + 1)),
            text="Reading the rest of the review from the saved copy.",
        )
        b.plant(
            "recovery_routing",
            route,
            src,
            r.call_seq,
            "truncated page names its saved copy; read in a later turn",
        )
        b.say(
            f"Yes: further down it discusses {t['lex']['actor'][0]} at length, mostly about costs and timing."
        )

    def extra_block() -> None:
        b.user("Is there anything newer from this year?")
        sr, items = results(rng.randint(6, 9), [])
        b.call("search_web", {"query": f"{t['topic']} 2025 update"}, sr)
        title, url, org = next(i for i in items if "wikipedia" not in i[1])
        page, _ = _page(rng, t, org, title, b.size(12, 22), [], avoid)
        search_seq = len(b.messages) - 1
        fx = b.call(
            "fetch_url",
            {"url": url},
            page,
            text=f"The {org} piece is the most recent; checking whether it has new data.",
        )
        b.plant(
            "locator_handle",
            url,
            search_seq,
            fx.call_seq,
            "result URL seen only in the search output, then fetched",
        )
        b.say(
            "Nothing newer with original data; the recent items are commentary on the 2024 figures."
        )

    blocks = [tracker_block, critics_block] + ([extra_block] if rng.random() < 0.7 else [])
    rng.shuffle(blocks)
    for f in blocks:
        f()
        if f is critics_block and rng.random() < 0.6:
            followup_block()
            state["done"] = True
    if not state.get("done"):
        followup_block()

    b.user("Great, please write the brief now, with citations.")
    n = b.say(
        (
            f"Brief: {t['topic']}\n\n"
            f"- Scale: {o1} counts {figure} of {t['metric'][0]} at the end of 2024 ({u1}). Country series: {data_url}\n"
            f"- Outlook: {o2} writes: \u201c{quote}\u201d ({u2})\n"
            + (
                f"- Live: the tracker you pointed me to now shows {state['live'][0]}.\n"
                if "live" in state
                else ""
            )  # type: ignore[index]
            + f"- Counterpoint: {o4} questions {t['sub']} and its costs.\n\n{contract[2]} "
            + b.rule_honour()
        ).rstrip()
    )
    if "live" in state:
        v2, src = state["live"]  # type: ignore[misc]
        b.plant(
            "live_state",
            v2,
            src,
            n,
            "figure only the latest fetch of the live page shows, used in the brief",
        )
    src1 = f1.result_seq
    b.plant("evidence_detail", figure, src1, n, "figure from a fetched page, cited turns later")
    b.plant(
        "locator_handle",
        data_url,
        src1,
        n,
        "dataset link found inside a fetched page, cited in the brief",
    )
    b.plant(
        "verbatim_source",
        quote,
        f2.result_seq,
        n,
        "sentence from the middle of a fetched page, quoted word for word",
    )
    b.plant("behavioural_contract", contract[1], t1, n, f"user constraint: {contract[0]}")
    b.plant_rule(n)
    return f"research brief on {t['topic']}"

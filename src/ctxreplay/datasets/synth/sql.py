"""SQL / BI workload: an analyst agent explores a warehouse and reports figures.

Planted dependencies:

- ``locator_handle``: table names seen only in ``list_tables`` then described; an entity's UUID
  from a top-N result, used in a later drill-down query.
- ``verbatim_source``: a revenue expression from the middle of a view definition
  (``describe_table`` of the reporting view), copied into ``run_sql``.
- ``evidence_detail``: result cells reported right away and in the closing summary.
- ``live_state``: a cell that exists only in the re-run of the same intraday query.
- ``recovery_routing``: the saved CSV of a truncated result, read with ``read_file``.
- ``behavioural_contract``: a reporting rule from the first user turn, honoured at the end; and
  a standing rule the user adds in the 2nd to 4th turn ("From now on, never round the figures for
  the deck"), honoured in the deck summary.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from .builder import Rule, Step, ToolCall
from .common import READ_FILE, middle_spans, tool, truncated
from .vocab import COMPANIES, FIRST_NAMES, LAST_NAMES, MONTHS, REGIONS, pick, table
from .workload import Truncated, Unusable, Workload

NAME = "sql"


@dataclass(frozen=True, slots=True)
class Domain:
    """A business whose warehouse the analyst queries: its tables, names and vocabulary."""

    desc: str
    warehouse: str
    fact: str  # one row per document (order, invoice, shipment)
    lines: str  # one row per document line
    dim: str  # the entity dimension (customer, account, shipper)
    view: str  # finance's reporting view
    entity: str
    doc: str
    prefix: str  # of document ids
    measure: str
    label: str
    bought: str
    categories: tuple[str, ...]
    channels: tuple[str, ...]


DOMAINS = (
    Domain(
        desc="an online retailer of office equipment",
        warehouse="retail_dw",
        fact="analytics.fct_orders",
        lines="analytics.fct_order_lines",
        dim="analytics.dim_customer",
        view="reporting.v_net_revenue",
        entity="customer",
        doc="order",
        prefix="SO",
        measure="net_revenue_eur",
        label="net revenue",
        bought="bought",
        categories=("Seating", "Desks", "Displays", "Peripherals", "Audio", "Storage", "Lighting", "Consumables"),
        channels=("web", "marketplace", "sales_team"),
    ),
    Domain(
        desc="a B2B software company with subscription billing",
        warehouse="billing_dw",
        fact="billing.fct_invoices",
        lines="billing.fct_invoice_lines",
        dim="billing.dim_account",
        view="reporting.v_recognised_revenue",
        entity="account",
        doc="invoice",
        prefix="INV",
        measure="recognised_revenue_eur",
        label="recognised revenue",
        bought="were billed for",
        categories=("Team plan", "Business plan", "Enterprise plan", "SSO add-on", "Audit log add-on", "Extra storage", "Premium support", "Onboarding"),
        channels=("self_serve", "sales_led", "partner"),
    ),
    Domain(
        desc="a European freight forwarder",
        warehouse="ops_dw",
        fact="ops.fct_shipments",
        lines="ops.fct_shipment_legs",
        dim="ops.dim_shipper",
        view="reporting.v_billable_freight",
        entity="shipper",
        doc="shipment",
        prefix="SHP",
        measure="billable_freight_eur",
        label="billable freight",
        bought="shipped",
        categories=("Pallet", "Parcel", "Reefer", "Hazmat", "Oversize", "Express", "Economy", "Customs brokerage"),
        channels=("road", "rail", "sea"),
    ),
)  # fmt: skip

EXTRA_TABLES = (
    ("analytics.dim_date", "Calendar with fiscal periods."),
    ("analytics.dim_region", "Sales regions and their country mapping."),
    ("analytics.dim_product", "Products and categories (SCD2)."),
    ("staging.raw_events", "Raw clickstream, 30 days retention."),
    ("staging.raw_payments", "Payment provider webhooks, unparsed."),
    ("audit.load_log", "One row per table load of the nightly pipeline."),
    ("audit.dq_checks", "Data quality check results per run."),
    ("marketing.fct_campaign_touches", "Attributed campaign touches."),
    ("finance.fx_rates_daily", "ECB reference rates, daily."),
    ("finance.gl_postings", "General ledger postings exported from the ERP."),
    ("support.fct_tickets", "Support tickets with SLA timestamps."),
    ("sandbox.tmp_backfill_2023", "Temporary backfill table, do not use."),
    ("hr.dim_employee", "Employees (restricted)."),
    ("analytics.fct_sessions", "Web sessions, sessionised."),
    ("analytics.fct_inventory_daily", "End-of-day stock per warehouse."),
)
STATUSES = ("pending", "confirmed", "shipped", "on_hold")

TOOLS = [
    tool("list_tables", "List the tables and views of the warehouse with row counts."),
    tool("describe_table", "Columns, types and comments of a table; view definitions for views.",
         table=("string", "schema.table")),
    tool("run_sql", "Run a read-only SQL query (DuckDB dialect) and return the result as a table.",
         query=("string", "The query.")),
    READ_FILE,
]  # fmt: skip

#: Constraints of the first user turn, honoured in the deck summary.
CONTRACTS = (
    Rule(
        "Always report amounts in EUR with two decimals, finance will paste them as they are.",
        "in EUR with two decimals",
        "All amounts above are in EUR with two decimals, as you asked.",
    ),
    Rule(
        "Exclude internal test accounts from every figure, they distort the small regions.",
        "internal test accounts",
        "As you asked, internal test accounts are excluded from every figure.",
    ),
    Rule(
        "Only ever run read-only queries; the warehouse is shared with the nightly load.",
        "read-only queries",
        "I only ran read-only queries, as agreed, so the nightly load was not affected.",
    ),
    Rule(
        "Use the reporting view's revenue definition, not a home-made one, so we match finance.",
        "revenue definition, not a home-made one",
        "All revenue figures use the reporting view's revenue definition, not a home-made one, as you asked.",
    ),
)

#: Standing rules the user adds mid-session; honoured in the deck summary.
RULES = (
    Rule(
        "From now on, never round the figures for the deck, finance reconciles them to the cent.",
        "reconciles them to the cent",
        "Figures are not rounded, since finance reconciles them to the cent.",
    ),
    Rule(
        "Also, from now on always name {person} as the data contact in anything for the deck.",
        "{person} as the data contact",
        "I named {person} as the data contact, as you asked.",
    ),
    Rule(
        "One more thing: make sure the deck says the figures are unaudited, that goes on every "
        "slide from now on.",
        "figures are unaudited",
        "Note for the slide: the figures are unaudited.",
    ),
    Rule(
        "Also, stick to calendar months rather than fiscal periods from now on, the board is used "
        "to that.",
        "calendar months rather than fiscal periods",
        "All periods are calendar months rather than fiscal periods, as you asked.",
    ),
)


def _cols(d: Domain) -> dict[str, list[tuple[str, str, str]]]:
    """(column, type, comment) of the fact, line and dimension tables."""
    doc, ent = d.doc, d.entity
    return {
        d.fact: [
            (f"{doc}_id", "VARCHAR", "Primary key."), (f"{ent}_id", "UUID", f"FK to the {ent} dimension."),
            (f"{doc}_date", "DATE", "Business date (Europe/Amsterdam)."), ("region", "VARCHAR", "Sales region."),
            ("channel", "VARCHAR", "Acquisition channel."), ("status", "VARCHAR", "Current status."),
            ("gross_amount_eur", "DECIMAL(18,2)", "Before discounts and refunds."),
            ("discount_eur", "DECIMAL(18,2)", "Total discount."), ("tax_eur", "DECIMAL(18,2)", "VAT."),
            ("currency", "VARCHAR", "Original currency."), ("fx_rate", "DECIMAL(12,6)", "Rate to EUR on the business date."),
            ("is_flagged", "BOOLEAN", "Flagged for manual review."), ("flag_reason", "VARCHAR", "Why it was flagged."),
            ("created_at", "TIMESTAMP", ""), ("updated_at", "TIMESTAMP", ""),
        ],
        d.lines: [
            (f"{doc}_id", "VARCHAR", ""), ("line_no", "INTEGER", ""), ("product_id", "VARCHAR", ""),
            ("category", "VARCHAR", "Product category at the time of sale."), ("quantity", "INTEGER", ""),
            ("unit_price_eur", "DECIMAL(18,4)", ""), ("amount_eur", "DECIMAL(18,2)", "quantity x unit price, after line discounts."),
            ("line_type", "VARCHAR", "sale, refund, voucher, shipping or fee."), ("cost_eur", "DECIMAL(18,2)", "Landed cost."),
        ],
        d.dim: [
            (f"{ent}_id", "UUID", "Surrogate key."), ("name", "VARCHAR", ""), ("segment", "VARCHAR", "smb, mid_market or enterprise."),
            ("country", "VARCHAR", "ISO 3166-1 alpha-2."), ("region", "VARCHAR", ""), ("created_at", "TIMESTAMP", ""),
            ("is_test", "BOOLEAN", "Internal or QA record."), ("account_manager", "VARCHAR", ""),
        ],
    }  # fmt: skip


def _describe(name: str, rows: str, cols: list[tuple[str, str, str]]) -> str:
    """describe_table output: the table's size and its columns."""
    body = table(
        ("column", "type", "nullable", "comment"),
        [(c, t, "NO" if i == 0 else "YES", note) for i, (c, t, note) in enumerate(cols)],
        footer="",
    )
    size = rows if rows.startswith("view") else f"{rows} rows"
    return f"Table {name} ({size})\n{body.rstrip()}"  # fmt: skip


def _view(rng: random.Random, d: Domain) -> tuple[str, list[str], list[str]]:
    """describe_table output of the reporting view, its expression lines, their aliases."""
    doc, ent = d.doc, d.entity
    aliases = rng.sample(
        ["net_amount_eur", "eligible_amount_eur", "recognised_amount_eur", "margin_eur",
         "billable_amount_eur", "adjusted_amount_eur", "booked_amount_eur", "settled_amount_eur",
         "commissionable_eur", "reportable_amount_eur", "contribution_eur", "collectable_amount_eur"], 9,
    )  # fmt: skip
    shapes = (
        "CASE WHEN l.line_type = 'refund' THEN -l.amount_eur WHEN l.line_type = 'voucher' THEN 0 ELSE l.amount_eur END AS {a},",
        "CASE WHEN o.status IN ('cancelled', 'fraud_hold') THEN 0 ELSE l.amount_eur * (1 - o.discount_eur / NULLIF(o.gross_amount_eur, 0)) END AS {a},",
        "CASE WHEN l.line_type IN ('shipping', 'fee') THEN 0 ELSE ROUND(l.amount_eur - l.cost_eur, 2) END AS {a},",
        "CASE WHEN o.{doc}_date < DATE '2024-0{m}-01' THEN l.amount_eur * o.fx_rate ELSE l.amount_eur END AS {a},",
        "COALESCE(l.amount_eur, 0) - COALESCE(l.cost_eur, 0) * {f} AS {a},",
        "CASE WHEN c.segment = 'enterprise' AND l.quantity >= {q} THEN l.amount_eur * {f} ELSE l.amount_eur END AS {a},",
        "CASE WHEN o.channel = 'marketplace' THEN l.amount_eur * (1 - {f}) ELSE l.amount_eur END AS {a},",
    )  # fmt: skip
    exprs = []
    for a in aliases:
        shape = rng.choice(shapes)
        exprs.append("        " + shape.format(a=a, doc=doc, m=rng.randint(2, 9), q=rng.randint(5, 60),
                                               f=f"0.{rng.randint(10, 95)}"))  # fmt: skip
    cols = [
        (f"{doc}_id", "VARCHAR", ""),
        (f"{ent}_id", "UUID", ""),
        (f"{doc}_date", "DATE", ""),
        ("region", "VARCHAR", ""),
        ("category", "VARCHAR", ""),
    ]
    cols += [(a, "DECIMAL(18,2)", "") for a in aliases]  # fmt: skip
    sql = [
        f"CREATE VIEW {d.view} AS",
        "-- Owned by finance analytics. Changes need a ticket in the FINDATA board.",
        "WITH lines AS (",
        "    SELECT",
        f"        o.{doc}_id, o.{ent}_id, o.{doc}_date, o.region, l.category,",
        *exprs,
        "        l.line_no",
        f"    FROM {d.fact} o",
        f"    JOIN {d.lines} l ON l.{doc}_id = o.{doc}_id",
        f"    JOIN {d.dim} c ON c.{ent}_id = o.{ent}_id",
        "    WHERE c.is_test = FALSE",
        "      AND o.status NOT IN ('cancelled', 'fraud_hold', 'duplicate')",
        f"      AND o.{doc}_date >= DATE '2022-01-01'",
        ")",
        f"SELECT {doc}_id, {ent}_id, {doc}_date, region, category,",
        "       " + ", ".join(f"SUM({a}) AS {a}" for a in aliases[:3]) + ",",
        "       " + ", ".join(f"SUM({a}) AS {a}" for a in aliases[3:6]) + ",",
        "       " + ", ".join(f"SUM({a}) AS {a}" for a in aliases[6:]),
        "FROM lines",
        f"GROUP BY {doc}_id, {ent}_id, {doc}_date, region, category;",
    ]  # fmt: skip
    head = _describe(d.view, f"view over {d.fact}", cols)
    return f"{head}\n\nView definition:\n" + "\n".join(sql), exprs, aliases


def _num(rng: random.Random, lo: float, hi: float) -> str:
    """A figure with thousands separators and cents."""
    return f"{rng.uniform(lo, hi):,.2f}"


Q_MONTHS = ("2024-07-01", "2024-08-01", "2024-09-01")
#: Columns of the live status query (the same query is run twice).
LIVE_COLUMNS = ("region", "status", "{doc}s", "gross_eur", "last_update")


class Sql(Workload):
    """Schema exploration, a Q3 breakdown, later questions in a random order, a deck summary."""

    NAME = NAME
    TOOLS = TOOLS

    d: Domain
    regions: list[str]
    contracts: list[Rule]
    t1: int
    cols: dict[str, list[tuple[str, str, str]]]
    listing: Step
    span: str
    alias: str
    q3: Step  # the Q3 breakdown: its cells are the evidence
    best: list[str]
    later: list[str]
    live_region: str

    def build(self) -> str:
        """Schema, the Q3 breakdown, the later questions in a random order, the deck."""
        self.brief()
        self.explore_schema()
        self.describe_view()
        self.quarter()
        blocks = {
            "top": self.top,
            "live": self.live,
            "flagged": self.flagged,
            "freshness": self.freshness,
            "dq": self.dq,
            "mix": self.mix,
        }
        for name in self.block_order():
            blocks[name]()
        return self.deck()

    def brief(self) -> None:
        """The domain, the system prompt, the first request with its constraints, the rule."""
        rng = self.rng
        self.d = d = rng.choice(DOMAINS)
        self.regions = pick(rng, REGIONS, rng.randint(5, 8))
        self.system(
            f"You are a data analyst agent for {d.desc}. You answer questions with SQL against the "
            f"{d.warehouse} warehouse (DuckDB dialect) and report figures precisely.\n"
            "Look up tables before querying them, quote the figures you use, and say which filters "
            "you applied."
        )
        self.contracts = rng.sample(CONTRACTS, 2 if rng.random() < 0.3 else 1)
        self.t1 = self.b.user(
            f"I need Q3 2024 figures for the board deck: {d.label} by month, region "
            f"and channel, and who our biggest {d.entity}s were. "
            + " ".join(c.sentence for c in self.contracts)
        )
        self.b.standing_rule(
            rng.choice(RULES).format(person=f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}")
        )

    # --- explore the schema ------------------------------------------------------------------
    def explore_schema(self) -> None:
        """list_tables, then the fact and line tables it names (locators) are described."""
        rng, d = self.rng, self.d
        self.cols = cols = _cols(d)
        listing = [
            (d.fact, f"{rng.randint(2_000_000, 40_000_000):,}", f"One row per {d.doc}."),
            (d.lines, f"{rng.randint(5_000_000, 90_000_000):,}", f"One row per {d.doc} line."),
            (d.dim, f"{rng.randint(20_000, 900_000):,}", f"{d.entity.capitalize()}s, current state."),
            (d.view, "view", f"Finance's {d.label} per {d.doc} and category."),
        ]  # fmt: skip
        listing += [
            (n, f"{rng.randint(1_000, 50_000_000):,}", c)
            for n, c in pick(rng, EXTRA_TABLES, rng.randint(10, 15))
        ]
        rng.shuffle(listing)
        self.listing = self.b.call("list_tables", {}, table(("table", "rows", "description"), listing),
                                   text="Let me see what the warehouse has.")  # fmt: skip
        dt = self.b.parallel(
            [
                ToolCall("describe_table", {"table": d.fact}, _describe(d.fact, f"{rng.randint(2_000_000, 40_000_000):,}", cols[d.fact])),
                ToolCall("describe_table", {"table": d.lines}, _describe(d.lines, f"{rng.randint(5_000_000, 90_000_000):,}", cols[d.lines])),
            ],
            text=f"The {d.doc} fact and its lines look like the right grain. Checking their columns.",
        )  # fmt: skip
        for name in (d.fact, d.lines):
            self.b.plant(
                "locator_handle",
                name,
                self.listing.result_seq,
                dt.call_seq,
                "table name seen only in list_tables, then described",
            )

    def describe_view(self) -> None:
        """The reporting view's definition: one of its expressions is the verbatim source."""
        rng, d = self.rng, self.d
        view_text, exprs, _ = _view(rng, d)
        dv = self.b.parallel(
            [
                ToolCall("describe_table", {"table": d.dim}, _describe(d.dim, f"{rng.randint(20_000, 900_000):,}", self.cols[d.dim])),
                ToolCall("describe_table", {"table": d.view}, view_text),
            ],
            text="There is also a reporting view; its definition tells me how finance computes revenue.",
        )  # fmt: skip
        self.view_seq = dv.result_seqs[1]
        spans = middle_spans(view_text, exprs)
        if not spans:
            raise Unusable("no usable span")  # the coverage check rejects this draw
        self.span = rng.choice(spans)
        self.alias = self.span.rsplit(" AS ", 1)[1].rstrip(",")

    def quarter(self) -> None:
        """A failed first query, then the Q3 breakdown with the view's expression copied in."""
        rng, d, span, alias = self.rng, self.d, self.span, self.alias
        doc = d.doc
        self.b.call("run_sql", {"query": f"SELECT region, SUM(amount) FROM {d.fact} WHERE {doc}_date >= DATE '2024-07-01' GROUP BY 1"},
                    f'Binder Error: Referenced column "amount" not found in FROM clause!\nCandidate bindings: "gross_amount_eur", "discount_eur", "tax_eur"\nLINE 1: SELECT region, SUM(amount) FROM {d.fact}...\n                       ^',
                    error=True, text="Quick sanity check of the raw totals first.")  # fmt: skip
        q1 = (
            f"WITH base AS (\n    SELECT\n        o.{doc}_id, o.{doc}_date, o.region, o.channel,\n"
            f"        {span}\n        l.line_no\n    FROM {d.fact} o\n"
            f"    JOIN {d.lines} l ON l.{doc}_id = o.{doc}_id\n    JOIN {d.dim} c ON c.{d.entity}_id = o.{d.entity}_id\n"
            f"    WHERE c.is_test = FALSE AND o.{doc}_date >= DATE '2024-07-01' AND o.{doc}_date < DATE '2024-10-01'\n)\n"
            f"SELECT date_trunc('month', {doc}_date) AS month, region, channel, COUNT(DISTINCT {doc}_id) AS {doc}s,\n"
            f"       SUM({alias}) AS {d.measure}\nFROM base GROUP BY 1, 2, 3 ORDER BY 1, 2, 3"
        )  # fmt: skip
        rows = []
        for m in Q_MONTHS:
            for r in self.regions:
                for ch in d.channels:
                    n = rng.randint(300, 9000)
                    rows.append([m, r, ch, f"{n:,}", _num(rng, n * 40, n * 260)])
        self.q3 = self.b.call("run_sql", {"query": q1}, table(("month", "region", "channel", f"{doc}s", d.measure), rows),
                              text=f"Using the view's {alias} expression so the numbers match finance.")  # fmt: skip
        self.b.plant(
            "verbatim_source",
            span,
            self.view_seq,
            self.q3.call_seq,
            "revenue expression copied from the middle of the view definition",
        )
        self.best = best = max(rows, key=lambda r: float(r[4].replace(",", "")))
        self.later = rng.choice([r for r in rows if r is not best])
        n1 = self.b.say(
            f"Q3 {d.label} by month, region and channel is above ({len(rows)} rows). The largest cell is "
            f"{best[1]} / {best[2]} in {MONTHS[int(best[0][5:7]) - 1]} with {best[4]} from {best[3]} {doc}s. "
            "I excluded test records and cancelled or fraud-held documents, like the view does."
        )  # fmt: skip
        self.b.plant(
            "evidence_detail",
            best[4],
            self.q3.result_seq,
            n1,
            "the largest cell of the result, reported right away",
        )

    # --- later turns in a random order ----------------------------------------------------------
    def block_order(self) -> list[str]:
        """Top, live and flagged always; up to two of the side questions."""
        rng = self.rng
        blocks = [
            "top",
            "live",
            "flagged",
            *rng.sample(["freshness", "dq", "mix"], rng.randint(0, 2)),
        ]
        rng.shuffle(blocks)
        return blocks

    def top(self) -> None:
        """The top entities by revenue: their UUIDs are locators for the drill-down."""
        rng, d, alias = self.rng, self.d, self.alias
        ent, doc = d.entity, d.doc
        self.b.user(f"Now the top {ent}s by {d.label} in Q3, please.")
        top = []
        for i in range(self.b.size(20, 40, cap=60)):
            top.append([str(i + 1), self.pool.uuid(), f"{rng.choice(COMPANIES)} {rng.choice(('GmbH', 'BV', 'SA', 'Ltd', 'AB', 'Oy', 'srl'))}",
                        rng.choice(("smb", "mid_market", "enterprise")), rng.choice(("DE", "NL", "FR", "IT", "PL", "SE", "ES", "AT")),
                        f"{rng.randint(40, 900):,}", ""])  # fmt: skip
        vals = sorted((rng.uniform(40_000, 900_000) for _ in top), reverse=True)
        for row, v in zip(top, vals, strict=True):
            row[6] = f"{v:,.2f}"
        rq = self.b.call("run_sql", {"query": f"SELECT ROW_NUMBER() OVER (ORDER BY SUM(v.{alias}) DESC) AS rank, v.{ent}_id, c.name, c.segment, c.country,\n       COUNT(DISTINCT v.{doc}_id) AS {doc}s, SUM(v.{alias}) AS {d.measure}\nFROM {d.view} v JOIN {d.dim} c USING ({ent}_id)\nWHERE v.{doc}_date BETWEEN DATE '2024-07-01' AND DATE '2024-09-30'\nGROUP BY 2, 3, 4, 5 ORDER BY rank LIMIT {len(top)}"},
                         table(("rank", f"{ent}_id", "name", "segment", "country", f"{doc}s", d.measure), top))  # fmt: skip
        pick_i = rng.randint(0, 4)
        self.b.say(
            f"The top three are {top[0][2]}, {top[1][2]} and {top[2][2]}; together they are a large "
            "share of the quarter. Full ranking above."
        )
        self.drill_down(top[pick_i], pick_i, rq)

    def drill_down(self, target: list[str], pick_i: int, ranking: Step) -> None:
        """A later query filters on an entity's id copied from the ranking."""
        rng, d = self.rng, self.d
        ent, doc = d.entity, d.doc
        self.b.user(
            f"Drill into {target[2]} (number {pick_i + 1}): what's behind it in Q3, by category and month?"
        )
        rows3 = [
            [m, cat, f"{rng.randint(1, 400):,}", _num(rng, 500, 90_000)]
            for m in Q_MONTHS
            for cat in d.categories
        ]
        dq = self.b.call("run_sql", {"query": f"SELECT date_trunc('month', {doc}_date) AS month, category, COUNT(*) AS lines, SUM({self.alias}) AS {d.measure}\nFROM {d.view}\nWHERE {ent}_id = '{target[1]}' AND {doc}_date BETWEEN DATE '2024-07-01' AND DATE '2024-09-30'\nGROUP BY 1, 2 ORDER BY 1, 2"},
                         table(("month", "category", "lines", d.measure), rows3),
                         text=f"Filtering on their {ent} id from the ranking.")  # fmt: skip
        self.b.plant(
            "locator_handle",
            target[1],
            ranking.result_seq,
            dq.call_seq,
            f"{ent} UUID from the ranking, used in a later query",
        )
        self.b.say(
            f"{target[2]} {d.bought} mostly {' and '.join(rng.sample(d.categories, 2))}; "
            "spending was steady across the three months."
        )

    def snapshot(self, scale: float, stamp: str) -> list[list[str]]:
        """Rows of today's status query while the load has reached ``scale`` of its volume."""
        rng = self.rng
        return [[r, s, f"{int(rng.randint(20, 900) * scale):,}", _num(rng, 2_000 * scale, 90_000 * scale), stamp]
                for r in self.regions for s in STATUSES]  # fmt: skip

    def live(self) -> None:
        """The same intraday query run twice: only the re-run holds the final cells."""
        rng, d = self.rng, self.d
        columns = tuple(c.format(doc=d.doc) for c in LIVE_COLUMNS)
        self.b.user(
            f"Ops says today's load is still running. What's the status breakdown of today's {d.doc}s so far, by region?"
        )
        today = f"2024-10-{rng.randint(2, 28):02d}"
        q = (f"SELECT region, status, COUNT(*) AS {d.doc}s, SUM(gross_amount_eur) AS gross_eur, MAX(updated_at) AS last_update\n"
             f"FROM {d.fact} WHERE {d.doc}_date = DATE '{today}' GROUP BY 1, 2 ORDER BY 1, 2")  # fmt: skip
        partial = self.snapshot(0.6, f"{today} 06:4{rng.randint(0, 9)}:1{rng.randint(0, 9)}")
        self.b.call("run_sql", {"query": q}, table(columns, partial))
        self.b.say(
            "Here is the breakdown so far; with the load still running, treat it as partial."
        )
        self.b.user(
            rng.choice(
                (
                    "The load just finished. Run that same query again.",
                    "Load's done now, can you re-run the same query?",
                )
            )
        )
        rows2 = self.snapshot(1.0, f"{today} 09:1{rng.randint(0, 9)}:0{rng.randint(0, 9)}")
        s2 = self.b.call("run_sql", {"query": q}, table(columns, rows2))
        cell = rng.choice([r for r in rows2 if r[1] == "pending"])
        if rng.random() < 0.5:
            self.check_load(today)
        self.live_region = cell[0]
        self.report_live(
            cell[3],
            s2.result_seq,
            f"With the load complete, {cell[0]} now has {cell[3]} EUR gross in pending {d.doc}s "
            f"({cell[2]} {d.doc}s); the earlier run was partial.",
            "cell of the latest run of the same query (the earlier run was partial)",
            "The load is complete and the figures are final now; pending volumes grew in every region.",
        )

    def check_load(self, today: str) -> None:
        """The agent confirms in the load log that the load finished."""
        rng, d = self.rng, self.d
        self.b.call("run_sql", {"query": f"SELECT table_name, finished_at, rows_loaded FROM audit.load_log WHERE run_date = DATE '{today}' ORDER BY finished_at"},
                    table(("table_name", "finished_at", "rows_loaded"), [[t, f"{today} 0{rng.randint(6, 8)}:{rng.randint(10, 59)}:{rng.randint(10, 59)}", f"{rng.randint(1000, 900000):,}"] for t in (d.fact, d.lines, d.dim, "finance.fx_rates_daily")]),
                    text="Let me confirm the load really completed.")  # fmt: skip

    def flagged(self) -> None:
        """A long result the harness truncates; its saved CSV is read in a later turn."""
        rng, d = self.rng, self.d
        doc, ent = d.doc, d.entity
        self.b.user(
            f"I also need the list of {doc}s flagged for manual review in Q3, with the reason."
        )
        total = self.b.size(150, 420)
        reasons = ("address_mismatch", "velocity_rule", "high_value_new_" + ent, "chargeback_history", "vat_id_invalid")  # fmt: skip
        full = [f"{doc}_id,{doc}_date,name,country,gross_amount_eur,flag_reason"]
        for _ in range(total):
            full.append(f"{d.prefix}-{rng.randint(1_000_000, 9_999_999)},2024-{rng.randint(7, 9):02d}-{rng.randint(1, 28):02d},"
                        f"{rng.choice(COMPANIES)},{rng.choice(('DE', 'NL', 'FR', 'IT', 'PL', 'SE'))},{rng.uniform(300, 60000):.2f},{rng.choice(reasons)}")  # fmt: skip
        route = self.pool.output_path("sql", "csv")
        shown = table(tuple(full[0].split(",")), [r.split(",") for r in full[1:]]).split("\n")
        fq = self.b.call("run_sql", {"query": f"SELECT o.{doc}_id, o.{doc}_date, c.name, c.country, o.gross_amount_eur, o.flag_reason\nFROM {d.fact} o JOIN {d.dim} c USING ({ent}_id)\nWHERE o.is_flagged AND o.{doc}_date BETWEEN DATE '2024-07-01' AND DATE '2024-09-30'\nORDER BY o.gross_amount_eur DESC"},
                         truncated(shown, 52, route))  # fmt: skip
        self.b.say(
            f"There are {total} flagged {doc}s; the harness showed the first 50, sorted by amount, and kept the full result as a CSV."
        )
        self.b.user(rng.choice(("How many of those were flagged for velocity_rule, roughly, and in which countries?",
                                "Look at the rest of that list: which flag reasons dominate below the top 50?")))  # fmt: skip
        # the CSV's header is line 1, so the 50 rows shown end at line 51
        self.recover(
            Truncated(route, fq.result_seq, full, 51),
            "truncated result names its saved CSV; read in a later turn",
            "Reading the rest of the saved CSV.",
        )
        self.b.say(
            "Below the top 50 the mix shifts toward velocity_rule and address_mismatch; "
            "Germany and the Netherlands account for most of them."
        )

    def freshness(self) -> None:
        """A side question: when the tables were last loaded."""
        rng = self.rng
        self.b.user("Before I present this: how fresh is the data in the warehouse?")
        self.b.call("run_sql", {"query": "SELECT table_name, last_loaded_at, rows_loaded, status FROM audit.load_log ORDER BY last_loaded_at DESC LIMIT 30"},
                    table(("table_name", "last_loaded_at", "rows_loaded", "status"),
                          [[n, f"2024-10-0{rng.randint(1, 9)} 0{rng.randint(1, 7)}:{rng.randint(10, 59)}:{rng.randint(10, 59)}", f"{rng.randint(100, 9_000_000):,}", rng.choice(("ok", "ok", "ok", "late"))]
                           for n, _ in pick(rng, EXTRA_TABLES, 15)]))  # fmt: skip
        self.b.say("Everything relevant loaded last night; only a couple of side tables ran late.")

    def dq(self) -> None:
        """A side question: the data quality checks."""
        rng = self.rng
        self.b.user("Any data quality problems I should mention?")
        self.b.call("run_sql", {"query": "SELECT check_name, table_name, status, failed_rows FROM audit.dq_checks WHERE run_date >= DATE '2024-09-25' ORDER BY status DESC, failed_rows DESC"},
                    table(("check_name", "table_name", "status", "failed_rows"),
                          [[f"{rng.choice(('not_null', 'unique', 'accepted_values', 'freshness', 'row_count_delta'))}_{rng.choice(('id', 'date', 'amount', 'status', 'region'))}",
                            rng.choice(EXTRA_TABLES)[0], rng.choice(("pass", "pass", "pass", "warn", "fail")), f"{rng.randint(0, 4000):,}"] for _ in range(rng.randint(20, 45))]))  # fmt: skip
        self.b.say("A few warnings on side tables, nothing on the tables behind these figures.")

    def mix(self) -> None:
        """A side question: the channel mix per region."""
        rng, d, alias = self.rng, self.d, self.alias
        self.b.user("What's the channel mix per region in Q3, as shares?")
        self.b.call("run_sql", {"query": f"SELECT region, channel, ROUND(100.0 * SUM({alias}) / SUM(SUM({alias})) OVER (PARTITION BY region), 1) AS share_pct\nFROM {d.view} v JOIN {d.fact} o USING ({d.doc}_id)\nWHERE v.{d.doc}_date BETWEEN DATE '2024-07-01' AND DATE '2024-09-30' GROUP BY 1, 2 ORDER BY 1, 2"},
                    table(("region", "channel", "share_pct"), [[r, ch, f"{rng.uniform(5, 70):.1f}"] for r in self.regions for ch in d.channels]))  # fmt: skip
        self.b.say("The mix is fairly even; one channel dominates in two regions.")

    # --- the summary for the deck ----------------------------------------------------------------
    def deck(self) -> str:
        """The deck summary: a later Q3 cell, a deferred live cell, the constraints."""
        d, best, later = self.d, self.best, self.later
        self.b.user("Great. Put it together for the deck: three bullets, with the figures.")
        honour = self.honours(self.contracts)
        live = self.live_line(
            "- Today so far: {region} has {value} EUR gross pending.\n", region=self.live_region
        )
        n = self.b.say(
            f"- Q3 {d.label} peaked in {best[1]} ({best[2]}).\n"
            f"- {later[1]} / {later[2]} in {MONTHS[int(later[0][5:7]) - 1]}: {later[4]}.\n"
            + live
            + f"- Flagged and intraday figures are in the appendix queries.\n{honour}"
        )
        self.plant_deferred_live(
            n, "cell of the latest run of the same query, reported in the closing summary"
        )
        self.b.plant(
            "evidence_detail",
            later[4],
            self.q3.result_seq,
            n,
            "a result cell reported turns later in the summary",
        )
        self.close(self.contracts, self.t1, n)
        return f"Q3 {d.measure} analysis in {d.warehouse}"


#: The script ``WORKLOADS`` runs for this workload.
build = Sql.script

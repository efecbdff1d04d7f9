"""A report's tables from per-session aggregates: DuckDB over the run's parts.

``RunTables`` joins, one policy at a time, a run's figures with one judge's verdicts (the first
of each (judge, policy, case) in ``read_verdicts``' order) and its archive costs inside DuckDB,
which spills to disk past its memory limit; what comes back to Python is one row per (policy, session) for the
session-cluster bootstraps and the paired tests, one per policy for the counts and sums, and
per-(judge, policy, label) counts for the judges' agreement — never one row per view. Every
table is the one ``tables.*_table`` gives over the whole run's rows: the counts, intervals and
tests exactly (a session's sums are added in the order its rows were written, as the per-row
bootstrap adds them), sums of USD and means over cases to the last few bits (summation order).
"""

from __future__ import annotations

import math
import shutil
import tempfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, cast

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from ..runs import Run, slug, verdict_parts
from ..schema import DECISIONS, FIGURES, VERDICTS, VIEWS
from ..tariffs import Tariff
from . import stats
from .correction import JudgeAccuracy, corrected_from_draws
from .recovery import RECOVERY_SCHEMA
from .tables import (
    AGREEMENT_SCHEMA,
    CORRECTED_SCHEMA,
    COST_FLOATS,
    COST_INTS,
    COST_SCHEMA,
    FAILURES_SCHEMA,
    FIGURE_COLUMNS,
    LABEL_COUNTS_SCHEMA,
    LOSS_COUNTS_SCHEMA,
    LOSSES_SCHEMA,
    NO_IMPACT_SCHEMA,
    PairTable,
    add_counts,
    agreement_from_counts,
    commit_kind,
    cost_row,
    judges_from_counts,
    paired_record,
    pick_examples,
    sort_failures,
    sort_reasons,
    taxonomy_from_counts,
    with_holm,
    with_show,
)

#: what DuckDB may hold in memory before it spills to its temporary folder
MEMORY_LIMIT = "128MB"
SCORED = "label IN ('no_impact', 'impact')"
#: the order rows were written in: a policy's chunk files by name, then the rows of each
WRITTEN = "ORDER BY fidx, file_row_number"


def _quote(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


class RunTables:
    """A run's report tables for one judge label (``judge``; None: no verdicts yet), and with
    several judges (``judges``) their labels' counts and agreement. Close it (or use it as a
    context manager) to remove DuckDB's temporary folder."""

    def __init__(
        self,
        run: Run,
        judge: str | None,
        judges: Sequence[str],
        *,
        seed: int,
        bootstrap: int,
        alpha: float,
        examples: int,
        calibration: JudgeAccuracy | None,
        tariff: Tariff | None,
    ) -> None:
        self.run, self.judge, self.every_judge = run, judge, list(judges)
        self.seed, self.bootstrap, self.alpha = seed, bootstrap, alpha
        self.limit, self.calibration, self.tariff = examples, calibration, tariff
        self._tmp = tempfile.mkdtemp(prefix="ctxreplay-report-")
        self.con = duckdb.connect(
            config={
                "memory_limit": MEMORY_LIMIT,
                "temp_directory": self._tmp,
                "threads": 2,
                "preserve_insertion_order": False,
            }
        )
        try:
            self._load()
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> RunTables:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.con.close()
        shutil.rmtree(self._tmp, ignore_errors=True)

    # --- the run's parts as DuckDB tables -----------------------------------------------

    def _scan(
        self,
        name: str,
        schema: pa.Schema,
        files: Sequence[Path],
        order: bool,
        groups: dict[frozenset[str], list[Path]] | None = None,
    ) -> None:
        """View ``name``: ``files`` read with ``schema``'s columns (a column a part lacks reads
        as null), with each file's place in ``files`` (``fidx``) and, with ``order``, each
        row's in its file. Parts are read in groups of the same columns (``groups``: found
        already, ``_by_columns``): DuckDB's ``union_by_name`` would open every part's footer at
        once (180 MB for 1,910 parts)."""
        self.con.register(f"{name}_schema", schema.empty_table())
        typed = (
            f"SELECT *, NULL::BIGINT AS fidx, NULL::BIGINT AS file_row_number FROM {name}_schema"
        )
        index = pa.table({"filename": [str(p) for p in files], "fidx": list(range(len(files)))})
        self.con.register(f"{name}_files", index)
        selects = [typed]
        for columns, group in (groups if groups is not None else _by_columns(files)).items():
            listed = ", ".join(_quote(str(p)) for p in group)
            wanted = ", ".join(f'"{c}"' for c in schema.names if c in columns)
            scan = f"read_parquet([{listed}], filename = true, file_row_number = {order})"
            rows = "file_row_number" if order else "NULL::BIGINT AS file_row_number"
            selects.append(
                f"SELECT {wanted}, fidx, {rows} FROM {scan} JOIN {name}_files USING (filename)"
                if wanted
                else f"SELECT fidx, {rows} FROM {scan} JOIN {name}_files USING (filename)"
            )
        wanted = ", ".join(f'"{c}"' for c in schema.names)
        union = " UNION ALL BY NAME ".join(f"({q})" for q in selects)
        self.con.execute(
            f"CREATE OR REPLACE TEMP VIEW {name} AS SELECT {wanted}, fidx, file_row_number "
            f"FROM ({union})"
        )

    def _load(self) -> None:
        """Each policy in turn (its parts only in DuckDB's tables at a time, so what DuckDB
        holds follows the largest policy, not the run), keeping what every table needs of it."""
        r = self.run
        parts = verdict_parts(r.path)
        groups = _by_columns(parts)  # their footers read once for both views
        self._scan("verd", _only(VERDICTS, VERDICT_COLUMNS), parts, True, groups)
        self._scan("lv", _only(VERDICTS, LOSS_COLUMNS), parts, True, groups)
        self.con.execute(
            "CREATE TEMP TABLE scored (policy VARCHAR, case_id VARCHAR, session_id VARCHAR, "
            "ok BOOLEAN)"
        )
        self.policies: list[str] = []  # with figures, in manifest order
        self._kept: dict[str, list[pl.DataFrame]] = {}
        self._views: dict[str, tuple[Any, ...]] = {}
        self._pairs: dict[tuple[str, str], PairTable] = {}
        for label in r.policies:
            self._add(label)
        if self.every_judge:  # verdicts of a policy the manifest does not name count too
            found = self.con.execute("SELECT DISTINCT policy FROM verd").fetchall()
            for label in sorted({p for (p,) in found} - set(r.policies)):
                self._add(label, figures=False)

    def _add(self, label: str, figures: bool = True) -> None:
        """One policy's tables (``fig``, ``vf``, ``ac``, ``o``) and what is kept of them."""
        r, con = self.run, self.con
        folder = slug(label)
        files = _parts(r.path / "figures" / folder) if figures else []
        self._scan("fig", _only(FIGURES, FIGURE_COLUMNS), files, order=True)
        archived = (r.path / "views" / folder).is_dir() and (r.path / "decisions" / folder).is_dir()
        views = _parts(r.path / "views" / folder) if archived and figures else []
        decisions = _parts(r.path / "decisions" / folder) if archived and figures else []
        self._scan("vw", _only(VIEWS, ["policy", "case_id", "archives"]), views, False)
        cols = ["policy", "case_id", "object_id", "tokens_before", "ref"]
        self._scan("dec", _only(DECISIONS, cols), decisions, False)
        # one verdict per (judge, case): the first in read_verdicts' order (its losses stay in
        # the parts: read for the judge's scored cases only, ``_lost``)
        con.execute(
            "CREATE OR REPLACE TEMP TABLE vf AS SELECT judge, policy, case_id, label, "
            f"recoverable, unscored_reason, fidx, file_row_number FROM verd "
            f"WHERE policy = {_quote(label)} QUALIFY row_number() OVER "
            f"(PARTITION BY judge, case_id {WRITTEN}) = 1"
        )
        if self.every_judge:
            self._count_labels()
        con.execute(
            """
            CREATE OR REPLACE TEMP TABLE ac AS
            WITH arch AS (
                SELECT policy, case_id, a.object_id AS object_id FROM (
                    SELECT policy, case_id, unnest(archives) AS a FROM vw
                    WHERE len(archives) > 0
                ) WHERE coalesce(a.pointer_visible, false)
            ), tok AS (
                SELECT policy, case_id, object_id, tokens_before FROM dec WHERE ref IS NOT NULL
            )
            SELECT arch.policy, arch.case_id, count(*) AS visible,
                   sum(coalesce(tok.tokens_before, 0))::BIGINT AS payload
            FROM arch LEFT JOIN tok USING (policy, case_id, object_id)
            GROUP BY arch.policy, arch.case_id
            """
        )
        judge = _quote(self.judge) if self.judge is not None else "NULL"
        con.execute(
            f"""
            CREATE OR REPLACE TEMP TABLE o AS
            WITH v AS (
                SELECT policy, case_id, label, recoverable, unscored_reason FROM vf
                WHERE judge = {judge}
            ), joined AS (
                SELECT fig.*,
                    CASE WHEN fig.planner_failure IS NOT NULL THEN 'planner_failed'
                         ELSE v.label END AS label,
                    v.recoverable, v.unscored_reason,
                    coalesce(v.recoverable, 0)::BIGINT AS rec,
                    coalesce(ac.visible, 0)::BIGINT AS visible,
                    coalesce(ac.payload, 0)::BIGINT AS payload
                FROM fig LEFT JOIN v USING (policy, case_id) LEFT JOIN ac USING (policy, case_id)
            ), costed AS (
                SELECT *, CASE WHEN visible > 0 THEN least(rec, visible) ELSE rec END AS recoveries
                FROM joined
            )
            SELECT *,
                CASE WHEN recoveries = 0 THEN 0.0
                     WHEN visible > 0 THEN recoveries * (payload::DOUBLE / visible)
                     ELSE NULL END AS recovery_payload_tokens,
                (recoveries * coalesce(view_tokens, 0))::DOUBLE AS recovery_request_tokens
            FROM costed
            """
        )
        if not self._one("SELECT count(*) FROM o"):
            return
        self.policies.append(label)
        if self.judge is not None:  # its losses, read once for the counts and the examples
            con.execute(f"CREATE OR REPLACE TEMP TABLE lost AS {self._lost()}")
        con.execute(
            f"INSERT INTO scored SELECT policy, case_id, session_id, label = 'no_impact' "
            f"FROM o WHERE {SCORED}"
        )
        keep = self._kept
        for name, sql in self._per_policy().items():
            keep.setdefault(name, []).append(self._frame(sql))
        self._views[label] = self._view_key()

    def _per_policy(self) -> dict[str, str]:
        """The queries whose rows of one policy each table keeps."""
        return {
            "sessions": SESSIONS,
            "policy": _policy_sql(),
            "failures": FAILURES,
            "commits": COMMITS,
            **(
                {"losses": LOSS_COUNTS, "examples": self._ranked()}
                if self.judge is not None
                else {}
            ),
        }

    def _kept_frame(self, name: str) -> pl.DataFrame | None:
        found = [f for f in self._kept.get(name, []) if f.height]
        return pl.concat(found, how="vertical_relaxed") if found else None

    def _one(self, sql: str) -> int:
        """The one number a query returns."""
        return int(self.con.execute(sql).fetchall()[0][0])

    def _frame(self, sql: str) -> pl.DataFrame:
        return cast(pl.DataFrame, self.con.sql(sql).pl())

    # --- the tables ---------------------------------------------------------------------

    def no_impact(self) -> pl.DataFrame:
        """``tables.no_impact_table`` of the run's rows."""
        schema = {**NO_IMPACT_SCHEMA, **(CORRECTED_SCHEMA if self.calibration else {})}
        schema.update(RECOVERY_SCHEMA)
        rows = (
            [
                self._no_impact_row(p, sessions)
                for p, sessions in zip(
                    self._policy_rows().iter_rows(named=True), self._kept["sessions"], strict=True
                )
            ]
            if self.policies
            else []
        )
        return pl.DataFrame(rows, schema=schema)

    def _policy_rows(self) -> pl.DataFrame:
        """One row per policy (in ``policies`` order): its counts, and its sums over cases."""
        return pl.concat(self._kept["policy"], how="vertical_relaxed")

    def _no_impact_row(self, p: dict[str, Any], sessions: pl.DataFrame) -> dict[str, Any]:
        seed, n_boot, alpha = self.seed, self.bootstrap, self.alpha
        prune = stats.cluster_interval(
            stats.totals_draws(
                sessions["prune"].to_numpy(), sessions["cases"].to_numpy(), seed, n_boot
            ),
            alpha,
        )
        scored = sessions.filter(pl.col("n") > 0)
        draws = stats.totals_draws(scored["k"].to_numpy(), scored["n"].to_numpy(), seed, n_boot)
        boot = stats.cluster_interval(draws, alpha)
        n, k = int(p["n"]), int(p["k"])
        w = stats.wilson(k, n, alpha)
        leaning = int(p["leaning"])
        via = stats.pct(leaning / n) if n else math.nan
        corrected: dict[str, Any] = {}
        if self.calibration is not None:
            c = corrected_from_draws(draws, self.calibration, alpha)
            corrected = {
                "corrected_no_impact_pct": stats.pct(c.estimate),
                "corrected_lo": stats.pct(c.low),
                "corrected_hi": stats.pct(c.high),
                "corrected_dropped": c.dropped,
            }
        strict = int(p["strict"]) if n else 0
        sw = stats.wilson(strict, n, alpha)
        per_case = float(p["rec_scored"]) / n if n else math.nan
        payload = _mean(p["payload_sum"], p["payload_n"])
        request = _mean(p["request_sum"], p["request_n"])
        return {
            "policy": p["policy"],
            "name": p["name"] if p["name"] is not None else p["policy"],
            "cases": int(p["cases"]),
            "not_judged": int(p["not_judged"]),
            "unscored": int(p["unscored"]),
            "planner_failed": int(p["planner_failed"]),
            "n": n,
            "no_impact": k,
            "pruning_pct": stats.pct(prune.estimate),
            "pruning_lo": stats.pct(prune.low),
            "pruning_hi": stats.pct(prune.high),
            "editable_pruning_pct": stats.pct(_mean(p["editable_sum"], p["editable_n"])),
            "no_impact_pct": stats.pct(w.estimate),
            "wilson_lo": stats.pct(w.low),
            "wilson_hi": stats.pct(w.high),
            "boot_lo": stats.pct(boot.low),
            "boot_hi": stats.pct(boot.high),
            "recovery_pct": via,
            "leans_on_recovery": bool(via > 0),
            **corrected,
            "strict_no_impact": strict,
            "strict_no_impact_pct": stats.pct(sw.estimate),
            "strict_lo": stats.pct(sw.low),
            "strict_hi": stats.pct(sw.high),
            "recoveries_per_case": per_case,
            "extra_requests_per_case": per_case,
            "recovery_payload_tokens_per_case": payload,
            "recovery_request_tokens_per_case": request,
            "recovery_tokens_per_case": payload + request,
        }

    def paired(self, reference: str, exact_below: int | None) -> pl.DataFrame:
        """``tables.paired_table`` of every policy against ``reference``."""
        ref = _quote(reference)
        sessions = self._frame(
            f"""
            WITH r AS (SELECT case_id, ok AS ref_ok FROM scored WHERE policy = {ref})
            SELECT policy, session_id, count(*) AS n,
                count(*) FILTER (WHERE ok AND ref_ok) AS both_ok,
                count(*) FILTER (WHERE ok AND NOT ref_ok) AS b,
                count(*) FILTER (WHERE NOT ok AND ref_ok) AS c,
                count(*) FILTER (WHERE NOT ok AND NOT ref_ok) AS both_impact
            FROM scored JOIN r USING (case_id) WHERE policy <> {ref}
            GROUP BY policy, session_id ORDER BY policy, session_id
            """
        )
        rows = []
        for policy in self.policies:
            if policy == reference:
                continue
            mine = sessions.filter(pl.col("policy") == policy)
            diff = stats.cluster_interval(
                stats.totals_draws(
                    (mine["b"] - mine["c"]).to_numpy(),
                    mine["n"].to_numpy(),
                    self.seed,
                    self.bootstrap,
                ),
                self.alpha,
            )
            both, b, c, neither = (int(mine[k].sum()) for k in ("both_ok", "b", "c", "both_impact"))
            rows.append(paired_record(policy, reference, (both, b, c, neither), diff, exact_below))
        return with_holm(rows, self.alpha)

    def failures(self) -> pl.DataFrame:
        """``tables.failures_table``: unscored verdicts by reason, planner failures by error."""
        found = self._kept_frame("failures")
        if found is None:
            return pl.DataFrame(schema=FAILURES_SCHEMA)
        return sort_failures(found, self.policies)

    def commit_reasons(self) -> pl.DataFrame:
        """``tables.commit_reasons``: each reason's kind found once per distinct reason."""
        found = self._kept_frame("commits")
        schema = {"policy": pl.String, "committed": pl.Boolean, "reason": pl.String}
        if found is None:
            return pl.DataFrame(schema={**schema, "cases": pl.Int64})
        kinds = {r: commit_kind(r) for r in found["commit_reason"].drop_nulls().unique()}
        return (
            found.with_columns(
                pl.col("commit_reason").replace_strict(kinds, default=None).alias("reason")
            )
            .group_by(["policy", "committed", "reason"])
            .agg(pl.col("cases").sum().cast(pl.Int64))
            .cast(schema)  # type: ignore[arg-type]
            .pipe(sort_reasons)
        )

    def cost(self, reasons: pl.DataFrame) -> pl.DataFrame:
        """``tables.cost_table`` from the policies' sums."""
        rows = [
            cost_row(
                p["policy"],
                {**p, "payload": round(p["payload_all"]), "request": round(p["request_all"])},
                reasons.filter(pl.col("policy") == p["policy"]),
                self.tariff,
            )
            for p in (self._policy_rows().iter_rows(named=True) if self.policies else ())
        ]
        return pl.DataFrame(rows, schema=COST_SCHEMA)

    def _view_key(self) -> tuple[Any, ...]:
        """A digest of one policy's (case, view tokens, committed) rows, their order aside."""
        found = self.con.execute(
            "SELECT count(*), bit_xor(hash(case_id, view_tokens, committed)), "
            "sum(hash(case_id, view_tokens, committed)::HUGEINT)::VARCHAR FROM fig"
        ).fetchall()
        return tuple(found[0])

    def same_views(self) -> list[str]:
        """``tables.same_views``: policies whose views equal an earlier policy's on every case."""
        lines: list[str] = []
        seen: dict[tuple[Any, ...], str] = {}
        for policy in self.policies:
            key = self._views[policy]
            if key in seen:
                lines.append(
                    f"{policy} made the same view as {seen[key]} on all {key[0]:,} cases "
                    f"(its own rule never changed what it kept): their rows are one result"
                )
            else:
                seen[key] = policy
        return lines

    @property
    def verdicts(self) -> int:
        """How many verdicts the report's judge gave (one per pair), of every policy."""
        if self.judge is None:
            return 0
        return self._one(
            "SELECT count(*) FROM (SELECT DISTINCT policy, case_id FROM verd "
            f"WHERE judge = {_quote(self.judge)})"
        )

    # --- the losses ---------------------------------------------------------------------

    def _lost(self) -> str:
        """Every loss of the judge's scored verdicts of the policy, with its place in its
        verdict's list."""
        return f"""
            SELECT o.policy, o.case_id, o.session_id, u.pos,
                   u.l.category AS category, u.l.anchor AS anchor,
                   u.l.source_object AS source_object, u.l.need_seq::BIGINT AS need_seq,
                   u.l.detail AS detail
            FROM o JOIN (
                SELECT lv.policy, lv.case_id, unnest(lv.losses) AS l,
                       generate_subscripts(lv.losses, 1) AS pos
                FROM lv JOIN vf USING (judge, policy, case_id, fidx, file_row_number)
                WHERE lv.judge = {_quote(self.judge or "")} AND len(lv.losses) > 0
            ) u USING (policy, case_id)
            WHERE o.{SCORED}
        """

    def _ranked(self) -> str:
        """The policy's first ``limit`` losses ranked as ``tables.rank_examples`` ranks them
        (one per (policy, category, case)): all ``pick_examples`` can take of it."""
        return f"""
            WITH firsts AS (
                SELECT * FROM lost QUALIFY row_number() OVER (
                    PARTITION BY policy, category, case_id
                    ORDER BY need_seq NULLS LAST, anchor NULLS LAST, pos) = 1
            ), s AS (
                SELECT *, row_number() OVER (
                    PARTITION BY policy, category, session_id ORDER BY case_id) - 1 AS _session
                FROM firsts
            ), r AS (
                SELECT *, row_number() OVER (
                    PARTITION BY policy, category ORDER BY _session, case_id) - 1 AS _round
                FROM s
            ), t AS (
                SELECT *, row_number() OVER (
                    PARTITION BY policy, _round ORDER BY category) - 1 AS _turn
                FROM r
            )
            SELECT policy, category, case_id, session_id, anchor, source_object, need_seq,
                   detail, _session::BIGINT AS _session, _round::BIGINT AS _round,
                   _turn::BIGINT AS _turn
            FROM t QUALIFY row_number() OVER (PARTITION BY policy ORDER BY _round, _turn)
                <= {max(int(self.limit), 0)}
        """

    def taxonomy(self) -> pl.DataFrame:
        counts = self._kept_frame("losses")
        rows = self._policy_rows() if self.policies else None
        n = dict(zip(rows["policy"], rows["n"], strict=True)) if rows is not None else {}
        return taxonomy_from_counts(
            {p: int(n.get(p, 0)) for p in self.policies},
            counts.cast(LOSS_COUNTS_SCHEMA)  # type: ignore[arg-type]
            if counts is not None
            else pl.DataFrame(schema=LOSS_COUNTS_SCHEMA),
            self.policies,
        )

    def examples(self) -> pl.DataFrame:
        """``tables.example_losses``: each policy's ranked candidates, picked across them."""
        ranked = self._kept_frame("examples")
        if ranked is None or self.limit <= 0:
            return pl.DataFrame(schema=LOSSES_SCHEMA)
        return with_show(self.run, pick_examples(ranked, self.limit, self.policies))

    # --- several judges -----------------------------------------------------------------

    def _count_labels(self) -> None:
        """Every judge's labels of the policy (a planner failure ``planner_failed``), counted,
        and every pair of judges' 2×2 table over the cases both scored."""
        labels = """
            SELECT vf.judge, vf.policy, vf.case_id,
                   CASE WHEN f.failed THEN 'planner_failed' ELSE vf.label END AS label
            FROM vf LEFT JOIN (
                SELECT DISTINCT case_id, true AS failed FROM fig WHERE planner_failure IS NOT NULL
            ) f USING (case_id)
        """
        counts = self._frame(
            f"SELECT judge, policy, label, count(*)::BIGINT AS verdicts FROM ({labels}) "
            "GROUP BY ALL"
        )
        self._kept.setdefault("labels", []).append(counts)
        cells = self._frame(
            f"""
            WITH s AS (
                SELECT judge, case_id, label = 'impact' AS impact FROM ({labels})
                WHERE {SCORED}
            )
            SELECT a.judge AS a, b.judge AS b,
                count(*) FILTER (WHERE a.impact AND b.impact) AS tt,
                count(*) FILTER (WHERE a.impact AND NOT b.impact) AS tf,
                count(*) FILTER (WHERE NOT a.impact AND b.impact) AS ft,
                count(*) FILTER (WHERE NOT a.impact AND NOT b.impact) AS ff
            FROM s a JOIN s b ON a.case_id = b.case_id AND a.judge < b.judge
            GROUP BY a.judge, b.judge
            """
        )
        add_counts(
            self._pairs,
            {
                (r["a"], r["b"]): (int(r["tt"]), int(r["tf"]), int(r["ft"]), int(r["ff"]))
                for r in cells.iter_rows(named=True)
            },
        )

    def judges(self) -> pl.DataFrame:
        counts = self._kept_frame("labels")
        return judges_from_counts(
            counts.cast(LABEL_COUNTS_SCHEMA)  # type: ignore[arg-type]
            if counts is not None
            else pl.DataFrame(schema=LABEL_COUNTS_SCHEMA),
            self.policies,
            self.alpha,
        )

    def agreement(self) -> pl.DataFrame:
        if not self.every_judge:
            return pl.DataFrame(schema=AGREEMENT_SCHEMA)
        return agreement_from_counts(self._pairs, self.every_judge)


SESSIONS = f"""
    SELECT policy, session_id, count(*) AS cases,
        sum(coalesce(pruning_rate, 0.0) {WRITTEN}) AS prune,
        count(*) FILTER (WHERE {SCORED}) AS n,
        count(*) FILTER (WHERE label = 'no_impact') AS k
    FROM o GROUP BY policy, session_id ORDER BY session_id
"""
FAILURES = """
    SELECT policy, 'unscored' AS kind, coalesce(unscored_reason, '(no reason)') AS reason,
           count(*)::BIGINT AS cases
    FROM o WHERE label = 'unscored' GROUP BY ALL
    UNION ALL
    SELECT policy, 'planner_failed' AS kind,
           coalesce(split_part(planner_failure, chr(10), 1), '(no reason)') AS reason,
           count(*)::BIGINT AS cases
    FROM o WHERE label = 'planner_failed' GROUP BY ALL
"""
COMMITS = (
    "SELECT policy, coalesce(committed, false) AS committed, commit_reason, "
    "count(*)::BIGINT AS cases FROM o GROUP BY ALL"
)
LOSS_COUNTS = (
    "SELECT policy, category, count(DISTINCT case_id)::BIGINT AS cases, "
    "count(*)::BIGINT AS losses FROM lost GROUP BY policy, category"
)


def _policy_sql() -> str:
    """One policy's counts and its sums over cases (the no-impact and cost tables' inputs)."""
    committed = "coalesce(committed, false)"
    ints = ", ".join(f"sum(coalesce({c}, 0))::BIGINT AS {c}" for c in COST_INTS)
    floats = ", ".join(f"fsum(coalesce({c}, 0.0)) AS {c}" for c in COST_FLOATS)
    return f"""
        SELECT policy,
            first(policy_name {WRITTEN}) FILTER (WHERE policy_name IS NOT NULL) AS name,
            count(*) AS cases,
            count(*) FILTER (WHERE label IS NULL) AS not_judged,
            count(*) FILTER (WHERE label = 'unscored') AS unscored,
            count(*) FILTER (WHERE label = 'planner_failed') AS planner_failed,
            count(*) FILTER (WHERE {SCORED}) AS n,
            count(*) FILTER (WHERE label = 'no_impact') AS k,
            fsum(editable_pruning) AS editable_sum, count(editable_pruning) AS editable_n,
            count(*) FILTER (WHERE label = 'no_impact' AND rec = 0) AS strict,
            count(*) FILTER (WHERE label = 'no_impact' AND rec > 0) AS leaning,
            coalesce(sum(recoveries) FILTER (WHERE {SCORED}), 0) AS rec_scored,
            fsum(recovery_payload_tokens) FILTER (WHERE {SCORED}) AS payload_sum,
            count(recovery_payload_tokens) FILTER (WHERE {SCORED}) AS payload_n,
            fsum(recovery_request_tokens) FILTER (WHERE {SCORED}) AS request_sum,
            count(recovery_request_tokens) FILTER (WHERE {SCORED}) AS request_n,
            count(*) FILTER (WHERE {committed}) AS committed,
            count(*) FILTER (WHERE {committed} AND coalesce(cache_break_tokens, 0) > 0)
                AS cache_breaks,
            coalesce(sum(coalesce(cache_break_tokens, 0)) FILTER (WHERE {committed}), 0)
                AS cache_break_tokens,
            sum(recoveries) AS recoveries,
            fsum(coalesce(recovery_payload_tokens, 0.0)) AS payload_all,
            fsum(recovery_request_tokens) AS request_all,
            count(*) FILTER (WHERE coalesce(recorded_cache, false)) AS recorded_cache,
            {ints}, {floats}
        FROM o GROUP BY policy
    """


#: the verdict columns the report reads (its losses apart)
VERDICT_COLUMNS = ["judge", "policy", "case_id", "label", "recoverable", "unscored_reason"]
LOSS_COLUMNS = ["judge", "policy", "case_id", "losses"]


def _only(schema: pa.Schema, columns: Sequence[str]) -> pa.Schema:
    return pa.schema([schema.field(c) for c in columns])


def _by_columns(files: Sequence[Path]) -> dict[frozenset[str], list[Path]]:
    """Files by the columns they hold (parts written by different versions differ), each
    group in the files' order."""
    with ThreadPoolExecutor(max_workers=4) as pool:  # footers only, read in parallel
        names = list(pool.map(lambda p: frozenset(pq.read_schema(p).names), files))
    groups: dict[frozenset[str], list[Path]] = {}
    for path, columns in zip(files, names, strict=True):
        groups.setdefault(columns, []).append(path)
    return groups


def _parts(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.parquet")) if folder.is_dir() else []


def _mean(total: Any, n: Any) -> float:
    return float(total) / int(n) if n else math.nan


__all__ = ["MEMORY_LIMIT", "RunTables"]

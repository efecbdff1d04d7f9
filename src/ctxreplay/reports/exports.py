"""Verdicts in the formats users' observability tools read.

``export_verdicts(run, to, out, judge="flow")`` writes one record per verdict of one judge:

- ``otel``: an OTLP/JSON logs document (``{"resourceLogs": [...]}``, what the OpenTelemetry
  Collector's ``otlpjsonfile`` receiver and OTLP/HTTP JSON endpoints take) holding one
  ``gen_ai.evaluation.result`` event per verdict, following the GenAI semantic conventions:
  ``gen_ai.evaluation.name`` (required), ``gen_ai.evaluation.score.value`` and
  ``gen_ai.evaluation.score.label`` (when applicable), ``gen_ai.evaluation.explanation``,
  ``error.type`` when the judge could not score, and ``gen_ai.conversation.id`` = the source
  session id. The event name is set both as the LogRecord ``eventName`` field and as the older
  ``event.name`` attribute. When the source trace's ids are known the record carries them as
  ``traceId``/``spanId`` (the spec asks for the event to be parented to the evaluated span).
- ``phoenix``: a Parquet evaluation table with ``score``, ``label``, ``explanation``, keyed by
  ``context.span_id`` or ``context.trace_id`` where the trace had them (Phoenix's
  ``SpanEvaluations``/``TraceEvaluations`` index names), plus the columns its annotation client
  takes (``name``, ``annotator_kind``, ``identifier``, ``metadata`` as JSON text) and our own
  ``case_id``/``session_id``/``policy``/``judge`` keys for rows without OTel ids.
- ``langfuse``: JSON lines in the shape of Langfuse's ``POST /api/public/scores`` body: ``id``
  (deterministic, so re-sending updates instead of duplicating), ``name``, ``value``,
  ``dataType`` (``CATEGORICAL``: no_impact | impact | unscored), ``comment``, ``metadata``, and
  ``traceId`` (+ ``observationId``) when the trace id is known, else ``sessionId``.

Every format names the evaluation ``ctxreplay.no_impact[<policy>|<judge>]``: one name per
(policy, judge), so tools that upsert on (name, target) keep each policy's verdict; cases of one
session that share a trace are told apart by ``identifier`` (Phoenix) and ``id`` (Langfuse).

Where trace ids come from: a corpus session's ``metadata`` JSON, as importers leave it —
``span_id``/``spans`` and ``trace_id``/``traceId``/``traces`` (the OTel GenAI importer records
``traces``). A list is used only when it holds exactly one id (a session stitched from several
traces does not say which one a cut belongs to); otherwise rows fall back to session keys.
"""

from __future__ import annotations

import json
import os
import re
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from ..files import atomic_path
from ..judges.base import DEFAULT_JUDGE
from ..runs import Run, judge_verdicts
from ..schema import PHOENIX, rows_table
from ..version import __version__
from .tables import ReportError

FORMATS = ("otel", "phoenix", "langfuse")
EVENT_NAME = "gen_ai.evaluation.result"
SCORES = {"no_impact": 1.0, "impact": 0.0}
_HEX32 = re.compile(r"^[0-9a-f]{32}$")
_HEX16 = re.compile(r"^[0-9a-f]{16}$")
#: judges whose verdicts come from code rather than a model (Phoenix ``annotator_kind``)
CODE_JUDGES = ("anchor", "flow", "truth")


@dataclass(frozen=True)
class ExportSummary:
    path: Path
    format: str
    judge: str
    verdicts: int
    by_span: int  # rows keyed by a span id of the source trace
    by_trace: int  # rows keyed by a trace id (no span id)
    by_session: int  # rows keyed by session (and case) only

    def render(self) -> str:
        return (
            f"exported {self.verdicts} verdicts of judge {self.judge} as {self.format} → "
            f"{self.path} (keyed by span {self.by_span}, trace {self.by_trace}, "
            f"session {self.by_session})"
        )


def evaluation_name(policy: str, judge: str) -> str:
    return f"ctxreplay.no_impact[{policy}|{judge}]"


def _one(value: Any) -> str | None:
    if isinstance(value, str) and value:
        return value
    if isinstance(value, list) and len(value) == 1 and isinstance(value[0], str) and value[0]:
        return value[0]
    return None


def trace_keys(metadata: str | dict[str, Any] | None) -> tuple[str | None, str | None]:
    """(trace id, span id) a session's metadata names unambiguously, else None."""
    if isinstance(metadata, str):
        try:
            metadata = json.loads(metadata)
        except json.JSONDecodeError:
            metadata = None
    if not isinstance(metadata, dict):
        return None, None
    trace = next(
        (t for k in ("trace_id", "traceId", "traces") if (t := _one(metadata.get(k)))), None
    )
    span = next((s for k in ("span_id", "spanId", "spans") if (s := _one(metadata.get(k)))), None)
    return trace, span if trace else None


def verdict_records(
    run: Run | str | os.PathLike[str], judge: str | None = DEFAULT_JUDGE
) -> pl.DataFrame:
    """One judge's verdicts with the keys exports need: source session id, trace and span ids.

    Columns: the VERDICTS columns, ``judge_label``, ``source_session_id``, ``trace_id``,
    ``span_id``, ``score`` (1 no_impact, 0 impact, null unscored), ``eval_name``, ``text``
    (explanation, or the reason a verdict is unscored).
    """
    r = run if isinstance(run, Run) else Run(run)
    label, verdicts = judge_verdicts(r.path, judge, ReportError)
    if label is None:
        raise ReportError(f"{r.path} has no verdicts yet; run `ctxreplay judge` first")
    verdicts = verdicts.sort(["policy", "case_id"])
    keys = _session_keys(r)
    rows = []
    for v in verdicts.iter_rows(named=True):
        source, trace, span = keys.get(v["session_id"], (v["session_id"], None, None))
        lost = sorted({loss["category"] for loss in v["losses"] or ()})
        text = v["explanation"] or v["unscored_reason"]
        if not text and lost:
            text = "lost: " + ", ".join(lost)
        rows.append(
            {
                **v,
                "source_session_id": source,
                "trace_id": trace,
                "span_id": span,
                "score": SCORES.get(v["label"]),
                "eval_name": evaluation_name(v["policy"], label),
                "text": text,
                "loss_categories": lost,
            }
        )
    return pl.DataFrame(rows, infer_schema_length=None) if rows else pl.DataFrame()


def _session_keys(run: Run) -> dict[str, tuple[str, str | None, str | None]]:
    try:
        sessions = run.corpus.sessions()
    except Exception:  # the corpus moved or is gone: exports still work on session ids
        return {}
    out = {}
    for s in sessions.select("session_id", "source_session_id", "metadata").iter_rows(named=True):
        trace, span = trace_keys(s["metadata"])
        out[s["session_id"]] = (s["source_session_id"] or s["session_id"], trace, span)
    return out


def _key_counts(records: pl.DataFrame) -> tuple[int, int, int]:
    if records.height == 0:
        return 0, 0, 0
    span = int(records["span_id"].is_not_null().sum())
    trace = int((records["trace_id"].is_not_null() & records["span_id"].is_null()).sum())
    return span, trace, records.height - span - trace


# --- OpenTelemetry --------------------------------------------------------------------------


def _any(value: Any) -> dict[str, Any]:
    """An OTLP/JSON AnyValue (64-bit ints are strings in OTLP/JSON)."""
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, list | tuple):
        return {"arrayValue": {"values": [_any(v) for v in value]}}
    return {"stringValue": str(value)}


def _attrs(items: Iterable[tuple[str, Any]]) -> list[dict[str, Any]]:
    return [{"key": k, "value": _any(v)} for k, v in items if v is not None]


def _time_ns(run: Run) -> int:
    stamp = run.manifest.get("completed_at") or run.manifest.get("created_at")
    try:
        return int(datetime.fromisoformat(str(stamp)).timestamp() * 1e9)
    except (TypeError, ValueError):
        return int(datetime.now(UTC).timestamp() * 1e9)


def otel_document(run: Run, records: pl.DataFrame) -> dict[str, Any]:
    """An OTLP/JSON logs document with one ``gen_ai.evaluation.result`` event per verdict."""
    ts = str(_time_ns(run))
    logs = []
    for v in records.iter_rows(named=True):
        record: dict[str, Any] = {
            "timeUnixNano": ts,
            "observedTimeUnixNano": ts,
            "eventName": EVENT_NAME,
            "severityNumber": 9,
            "severityText": "INFO",
            "attributes": _attrs(
                [
                    ("event.name", EVENT_NAME),
                    ("gen_ai.evaluation.name", v["eval_name"]),
                    ("gen_ai.evaluation.score.label", v["label"]),
                    ("gen_ai.evaluation.score.value", v["score"]),
                    ("gen_ai.evaluation.explanation", v["text"]),
                    ("error.type", "unscored" if v["label"] == "unscored" else None),
                    ("gen_ai.conversation.id", v["source_session_id"]),
                    ("ctxreplay.policy", v["policy"]),
                    ("ctxreplay.judge", v["judge"]),
                    ("ctxreplay.case_id", v["case_id"]),
                    ("ctxreplay.session_id", v["session_id"]),
                    ("ctxreplay.loss_categories", v["loss_categories"] or None),
                ]
            ),
        }
        trace, span = (v["trace_id"] or "").lower(), (v["span_id"] or "").lower()
        if _HEX32.match(trace):
            record["traceId"] = trace
            if _HEX16.match(span):
                record["spanId"] = span
        logs.append(record)
    m = run.manifest
    return {
        "resourceLogs": [
            {
                "resource": {
                    "attributes": _attrs(
                        [
                            ("service.name", "ctxreplay"),
                            ("ctxreplay.run", str(run.path)),
                            ("ctxreplay.corpus_fingerprint", m.get("corpus_fingerprint")),
                            ("ctxreplay.cases_fingerprint", m.get("cases_fingerprint")),
                        ]
                    )
                },
                "scopeLogs": [
                    {"scope": {"name": "ctxreplay", "version": __version__}, "logRecords": logs}
                ],
            }
        ]
    }


# --- Phoenix --------------------------------------------------------------------------------


def phoenix_table(records: pl.DataFrame) -> pa.Table:
    rows = []
    for v in records.iter_rows(named=True):
        rows.append(
            {
                "context.span_id": v["span_id"],
                "context.trace_id": v["trace_id"],
                "name": v["eval_name"],
                "annotator_kind": "CODE" if v["judge_name"] in CODE_JUDGES else "LLM",
                "score": v["score"],
                "label": v["label"],
                "explanation": v["text"],
                "identifier": f"{v['judge']}:{v['case_id']}",
                "metadata": json.dumps(_metadata(v), sort_keys=True, ensure_ascii=False),
                "case_id": v["case_id"],
                "session_id": v["session_id"],
                "source_session_id": v["source_session_id"],
                "policy": v["policy"],
                "judge": v["judge"],
            }
        )
    return rows_table(rows, PHOENIX)


def _metadata(v: dict[str, Any]) -> dict[str, Any]:
    return {
        "run": v["run"],
        "policy": v["policy"],
        "judge": v["judge"],
        "case_id": v["case_id"],
        "session_id": v["session_id"],
        "dependencies": v["dependencies"],
        "recoverable": v["recoverable"],
        "n_losses": v["n_losses"],
        "loss_categories": v["loss_categories"],
        "losses": [
            {k: loss[k] for k in ("category", "anchor", "source_object", "need_seq")}
            for loss in (v["losses"] or ())
        ][:20],
    }


# --- Langfuse -------------------------------------------------------------------------------


def langfuse_rows(run: Run, records: pl.DataFrame) -> list[dict[str, Any]]:
    """Langfuse score bodies (``POST /api/public/scores``), one per verdict."""
    base = f"{run.manifest.get('corpus_fingerprint')}:{run.manifest.get('cases_fingerprint')}"
    out = []
    for v in records.iter_rows(named=True):
        row: dict[str, Any] = {
            "id": str(
                uuid.uuid5(
                    uuid.NAMESPACE_URL,
                    f"ctxreplay:{base}:{v['judge']}:{v['policy']}:{v['case_id']}",
                )
            ),
            "name": v["eval_name"],
            "value": v["label"],
            "dataType": "CATEGORICAL",
            "comment": v["text"],
            "metadata": {**_metadata(v), "score": v["score"]},
        }
        if v["trace_id"]:
            row["traceId"] = v["trace_id"]
            if v["span_id"]:
                row["observationId"] = v["span_id"]
        else:
            row["sessionId"] = v["source_session_id"]
        out.append(row)
    return out


# --- entry point ----------------------------------------------------------------------------


def export_verdicts(
    run: Run | str | os.PathLike[str],
    to: str,
    out: str | os.PathLike[str],
    judge: str | None = DEFAULT_JUDGE,
) -> ExportSummary:
    """Write one judge's verdicts as ``otel`` (JSON), ``phoenix`` (Parquet) or ``langfuse``
    (JSONL) to ``out``."""
    if to not in FORMATS:
        raise ReportError(f"unknown export format {to!r}; formats: {', '.join(FORMATS)}")
    r = run if isinstance(run, Run) else Run(run)
    records = verdict_records(r, judge)
    path = Path(out)
    with atomic_path(path) as tmp:
        _write_export(to, tmp, r, records)
    span, trace, session = _key_counts(records)
    label = str(records["judge"][0]) if records.height else (judge or "")
    return ExportSummary(path, to, label, records.height, span, trace, session)


def _write_export(to: str, tmp: Path, run: Run, records: pl.DataFrame) -> None:
    if to == "otel":
        tmp.write_text(json.dumps(otel_document(run, records), ensure_ascii=False) + "\n")
    elif to == "phoenix":
        pq.write_table(phoenix_table(records), tmp)
    else:
        with tmp.open("w") as f:
            for row in langfuse_rows(run, records):
                f.write(json.dumps(row, ensure_ascii=False) + "\n")

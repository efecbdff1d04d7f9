"""Verdict exports: OTel gen_ai.evaluation.result events, Phoenix Parquet, Langfuse scores."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import polars as pl
import pytest

from ctxreplay.reports import ReportError, export_verdicts
from ctxreplay.reports.exports import trace_keys
from ctxreplay.runs import Run, read_verdicts


def _attrs(record: dict) -> dict:
    out = {}
    for a in record["attributes"]:
        ((_kind, value),) = a["value"].items()
        out[a["key"]] = value
    return out


def test_otel_events_one_per_verdict(small_run: Path, tmp_path: Path):
    verdicts = read_verdicts(small_run, "flow")
    summary = export_verdicts(small_run, "otel", tmp_path / "ev.json")
    assert summary.verdicts == verdicts.height and summary.by_session == verdicts.height
    doc = json.loads((tmp_path / "ev.json").read_text())
    [resource] = doc["resourceLogs"]
    [scope] = resource["scopeLogs"]
    records = scope["logRecords"]
    assert len(records) == verdicts.height
    completed = datetime.fromisoformat(Run(small_run).manifest["completed_at"])
    explanations = {
        (v["policy"], v["case_id"]): v["explanation"] for v in verdicts.iter_rows(named=True)
    }
    seen = set()
    for r in records:
        assert r["eventName"] == "gen_ai.evaluation.result"
        assert int(r["timeUnixNano"]) == int(completed.timestamp() * 1e9)  # the run's end
        a = _attrs(r)
        assert a["gen_ai.evaluation.name"] == f"ctxreplay.no_impact[{a['ctxreplay.policy']}|flow]"
        assert a["gen_ai.evaluation.score.label"] in ("no_impact", "impact")
        assert a["gen_ai.evaluation.score.value"] == (
            1.0 if a["gen_ai.evaluation.score.label"] == "no_impact" else 0.0
        )
        assert (
            a["gen_ai.evaluation.explanation"]
            == (explanations[a["ctxreplay.policy"], a["ctxreplay.case_id"]])
        )
        assert a["gen_ai.conversation.id"] == a["ctxreplay.session_id"]  # synthetic: same id
        seen.add((a["ctxreplay.policy"], a["ctxreplay.case_id"]))
        assert "traceId" not in r
    assert seen == set(zip(verdicts["policy"], verdicts["case_id"], strict=True))


def test_otel_unscored_verdicts_have_no_score_value(small_run: Path, tmp_path: Path):
    export_verdicts(small_run, "otel", tmp_path / "ev.json", judge="edited")
    records = json.loads((tmp_path / "ev.json").read_text())["resourceLogs"][0]["scopeLogs"][0][
        "logRecords"
    ]
    unscored = [
        _attrs(r) for r in records if _attrs(r)["gen_ai.evaluation.score.label"] == "unscored"
    ]
    assert len(unscored) == 3
    for a in unscored:
        assert "gen_ai.evaluation.score.value" not in a
        assert a["error.type"] == "unscored"
        assert a["gen_ai.evaluation.explanation"] == "test: made unscored"


def test_phoenix_parquet_one_row_per_verdict(small_run: Path, tmp_path: Path):
    verdicts = read_verdicts(small_run, "flow")
    export_verdicts(small_run, "phoenix", tmp_path / "ev.parquet")
    frame = pl.read_parquet(tmp_path / "ev.parquet")
    assert frame.height == verdicts.height
    for col in ("score", "label", "explanation", "context.span_id", "context.trace_id", "name"):
        assert col in frame.columns
    assert set(frame["annotator_kind"].to_list()) == {"CODE"}
    assert frame.select("name", "identifier").n_unique() == frame.height  # Phoenix's upsert key
    joined = frame.join(verdicts, on=["policy", "case_id"])
    assert joined.height == frame.height
    assert (joined["label"] == joined["label_right"]).all()
    assert ((joined["score"] == 1.0) == (joined["label"] == "no_impact")).all()
    # no OTel ids in a synthetic corpus: keyed by our case and session ids
    assert frame["context.span_id"].is_null().all() and frame["context.trace_id"].is_null().all()
    meta = json.loads(frame["metadata"][0])
    assert meta["case_id"] == frame["case_id"][0]


def test_langfuse_rows_one_per_verdict(small_run: Path, tmp_path: Path):
    verdicts = read_verdicts(small_run, "flow")
    export_verdicts(small_run, "langfuse", tmp_path / "scores.jsonl")
    rows = [json.loads(line) for line in (tmp_path / "scores.jsonl").read_text().splitlines()]
    assert len(rows) == verdicts.height
    assert len({r["id"] for r in rows}) == len(rows)
    for r in rows:
        assert {"id", "name", "value", "dataType", "comment", "sessionId"} <= set(r)
        assert "traceId" not in r
        assert r["dataType"] == "CATEGORICAL" and r["value"] in ("no_impact", "impact")
        assert r["metadata"]["case_id"].startswith(r["sessionId"])
    again = tmp_path / "again.jsonl"
    export_verdicts(small_run, "langfuse", again)
    assert [json.loads(x)["id"] for x in again.read_text().splitlines()] == [r["id"] for r in rows]


def test_exports_key_by_the_source_trace_when_known(otel_run: Path, tmp_path: Path):
    verdicts = read_verdicts(otel_run, "flow")
    assert verdicts.height == 2  # one case (conv-B's second request) × noop and tool-prune
    summary = export_verdicts(otel_run, "phoenix", tmp_path / "p.parquet")
    assert summary.by_trace == verdicts.height
    frame = pl.read_parquet(tmp_path / "p.parquet")
    assert frame["context.trace_id"].is_not_null().all()
    assert (frame["source_session_id"] != frame["session_id"]).all()  # conv-… ids from the trace
    export_verdicts(otel_run, "langfuse", tmp_path / "l.jsonl")
    rows = [json.loads(line) for line in (tmp_path / "l.jsonl").read_text().splitlines()]
    assert [r["traceId"] for r in rows] == ["0xaaa", "0xaaa"]  # conv-B's trace
    assert not any("sessionId" in r for r in rows)
    export_verdicts(otel_run, "otel", tmp_path / "o.json")
    doc = json.loads((tmp_path / "o.json").read_text())
    for r in doc["resourceLogs"][0]["scopeLogs"][0]["logRecords"]:
        assert _attrs(r)["gen_ai.conversation.id"].startswith("conv-")


def test_trace_keys_only_when_unambiguous():
    assert trace_keys('{"traces": ["abc"]}') == ("abc", None)
    assert trace_keys({"traces": ["a", "b"]}) == (None, None)
    assert trace_keys({"trace_id": "t", "span_id": "s"}) == ("t", "s")
    assert trace_keys({"span_id": "s"}) == (None, None)  # a span id without its trace
    assert trace_keys("not json") == (None, None)
    assert trace_keys(None) == (None, None)


def test_unknown_format_and_judge(small_run: Path, tmp_path: Path):
    with pytest.raises(ReportError, match="formats"):
        export_verdicts(small_run, "csv", tmp_path / "x")
    with pytest.raises(ReportError, match="no verdicts from judge"):
        export_verdicts(small_run, "otel", tmp_path / "x", judge="llm")

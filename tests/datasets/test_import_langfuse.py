"""Langfuse observation exports: JSON, JSONL (blob storage, snake_case), CSV, trace detail.

The fixtures under tests/fixtures/langfuse/ follow Langfuse's own schema: the observation fields
of ``packages/shared/src/domain/observations.ts`` (``ObservationSchema``: ``id``, ``traceId``,
``type`` GENERATION/SPAN/EVENT/AGENT/TOOL..., ``startTime``, ``parentObservationId``, ``input``,
``output``, ``usageDetails``...) and the public API's ``ObservationV2`` / ``ObservationsView``
(``providedModelName``, ``sessionId``, ``usage {input, output, total, unit}``) as generated in
``genai-rs/langfuse-client-base`` (``src/models/observation_v2.rs``, ``docs/ObservationsView.md``);
the CSV is the batch export's shape (``worker/src/features/batchExport``: one column per field,
objects as JSON text); the trace document is ``GET /api/public/traces/{id}`` (a trace with its
``observations``).
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_export_roundtrip import assert_same_tables, roundtrip

from ctxreplay.datasets.importers import MIN_SCORE, AmbiguousFormat, detect, get_importer
from ctxreplay.datasets.importers.langfuse import LangfuseImporter, langfuse_usage
from ctxreplay.datasets.ingest import import_paths
from ctxreplay.datasets.messages import Part, Session, Usage
from ctxreplay.datasets.rejects import Reject
from ctxreplay.datasets.store import Corpus

FIX = Path(__file__).resolve().parent.parent / "fixtures"
LF = FIX / "langfuse"


def read(path: Path) -> tuple[list[Session], list[Reject], LangfuseImporter]:
    importer = get_importer("langfuse")
    assert isinstance(importer, LangfuseImporter)
    items = list(importer.read(path))
    sessions = [i for i in items if isinstance(i, Session)]
    rejects = [i for i in items if isinstance(i, Reject)]
    assert len(sessions) + len(rejects) == len(items)
    return sessions, rejects, importer


def corpus_of(paths: list[Path], tmp: Path) -> tuple[Any, Corpus]:
    summary = import_paths(paths, tmp / "c", progress=False)
    assert summary.records == summary.sessions + summary.rejects + sum(summary.skipped.values())
    assert summary.unaccounted == 0
    return summary, Corpus(tmp / "c")


def row_of(corpus: Corpus, source_id: str) -> dict[str, Any]:
    (row,) = [
        r for r in corpus.sessions().iter_rows(named=True) if r["source_session_id"] == source_id
    ]
    return row


def obs(oid: str, kind: str, start: str, **extra: Any) -> dict[str, Any]:
    return {"id": oid, "traceId": extra.pop("traceId", "t"), "type": kind, "startTime": start,
            "parentObservationId": None, **extra}  # fmt: skip


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def bot(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def write_jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


# --- the fixtures -------------------------------------------------------------------------------


def test_json_export_rebuilds_the_session_from_its_generations(tmp_path: Path) -> None:
    summary, corpus = corpus_of([LF / "observations.json"], tmp_path)
    assert (summary.records, summary.sessions, summary.rejects) == (6, 1, 0)
    assert dict(summary.skipped) == {
        "in_session": 2,  # the two earlier generations
        "not_a_model_call": 2,  # the AGENT and the EVENT
        "tool_in_history": 1,  # the TOOL observation: the next generation's input holds it
    }
    row = row_of(corpus, "chat-42")
    assert (row["n_messages"], row["n_tool_calls"], row["n_tool_results"]) == (7, 1, 1)
    assert row["tokens"] > 0 and row["usage_prompt_tokens"] == 52 + 94 + 140
    assert json.loads(row["metadata"]) == {
        "calls": 3,
        "records": [1, 3, 5],
        "traces": ["tr-a1", "tr-a2"],
        "models": ["gpt-4o", "gpt-4o-2024-08-06"],
        "environments": ["default"],
        "trace_names": ["weather-agent"],
        "user_ids": ["u-7"],
    }
    messages = corpus.load_session(row["session_id"])
    assert [(m.role, m.parts) for m in messages] == [
        ("system", (Part.text("You are a weather assistant. Use tools."),)),
        ("user", (Part.text("What is the weather in Oslo?"),)),
        ("assistant", (Part.call("call_w1", "get_weather", '{"city":"Oslo"}'),)),
        ("tool", (Part.response("call_w1", '{"temp_c": -3, "sky": "snow"}', "get_weather"),)),
        ("assistant", (Part.text("It is -3 °C and snowing in Oslo."),)),
        ("user", (Part.text("And tomorrow?"),)),
        ("assistant", (Part.text("Tomorrow: clear skies, -5 °C."),)),
    ]
    # each generation's usage and end time sit on the message it produced
    assert [(m.usage, m.timestamp) for m in messages if m.role == "assistant"] == [
        (Usage(52, None, 18), "2025-05-02T10:00:01.200Z"),
        (Usage(94, 64, 12), "2025-05-02T10:00:02.400Z"),  # total 106: cache is apart from input
        (Usage(140, None, 9), "2025-05-02T10:05:00.900Z"),
    ]
    assert all(m.visible and not m.flags for m in messages)


def test_blob_export_snake_case_anthropic_blocks_and_a_trailing_tool_run(tmp_path: Path) -> None:
    summary, corpus = corpus_of([LF / "observations.jsonl"], tmp_path)
    assert (summary.records, summary.sessions, summary.rejects) == (7, 2, 0)
    assert dict(summary.skipped) == {
        "trace_record": 1,
        "not_a_model_call": 1,
        "in_session": 2,  # the first generation and the write_file tool run
        "tool_in_history": 1,  # read_file: the second generation's input holds its result
    }
    row = row_of(corpus, "sess-b")  # the session id is only on the trace row
    assert json.loads(row["metadata"]) == {
        "calls": 2,
        "records": [2, 4, 5],
        "traces": ["tr-b1"],
        "models": ["claude-sonnet-4-5"],
        "tool_runs": 1,
        "environments": ["production"],
        "trace_names": ["repo-fixer"],
        "user_ids": ["dev-3"],
    }
    messages = corpus.load_session(row["session_id"])
    fixed = '{"path":"utils.py","content":"def add(a, b):\\n    return a + b\\n"}'
    assert [(m.role, m.parts) for m in messages] == [
        ("system", (Part.text("You fix bugs in the repository."),)),
        ("user", (Part.text("The tests fail in utils.py."),)),
        (
            "assistant",
            (
                Part("reasoning", content="Read the file first."),
                Part.call("toolu_1", "read_file", '{"path":"utils.py"}'),
            ),
        ),
        ("user", (Part.response("toolu_1", "def add(a, b):\n    return a - b\n", "read_file"),)),
        (
            "assistant",
            (Part.text("add() subtracts; fixing it."), Part.call("toolu_2", "write_file", fixed)),
        ),
        # the run ended after the tool ran: its TOOL observation answers the last call
        ("tool", (Part.response("toolu_2", "wrote 2 lines", "write_file"),)),
    ]
    assert [m.usage for m in messages if m.usage] == [Usage(1240, 1200, 25), Usage(1300, 1240, 48)]
    assert messages[-1].timestamp == "2025-06-11T08:00:05.300Z"
    other = row_of(corpus, "tr-b2")  # no session: the trace is the session
    assert [(m.role, m.text) for m in corpus.load_session(other["session_id"])] == [
        ("user", "Summarize the fix in one line."),
        ("assistant", "add() now adds."),
    ]


def test_csv_export_with_json_cells(tmp_path: Path) -> None:
    summary, corpus = corpus_of([LF / "observations.csv"], tmp_path)
    assert (summary.records, summary.sessions, summary.rejects) == (3, 1, 0)
    assert dict(summary.skipped) == {"in_session": 1, "not_a_model_call": 1}
    row = row_of(corpus, "tr-c")
    messages = corpus.load_session(row["session_id"])
    assert [(m.role, m.text, m.usage) for m in messages] == [
        ("system", "Answer briefly.", None),
        ("user", 'Count the words in "alpha, beta",\nplease.', None),
        ("assistant", "There are 2 words.", Usage(21, None, 7)),
        ("user", "Now say it in French.", None),
        ("assistant", "Il y a 2 mots.\n(deux mots)", Usage(40, None, 8)),  # a cell on two lines
    ]
    assert json.loads(row["metadata"])["models"] == ["gpt-4.1-mini"]


def test_trace_detail_document_with_an_image_and_legacy_usage(tmp_path: Path) -> None:
    summary, corpus = corpus_of([LF / "trace.json"], tmp_path)
    assert (summary.records, summary.sessions, summary.rejects) == (2, 1, 0)  # its 2 observations
    assert dict(summary.skipped) == {"not_a_model_call": 1}
    row = row_of(corpus, "sess-d")
    assert row["image_count"] == 1
    (question, answer) = corpus.load_session(row["session_id"])
    assert question.parts == (
        Part.text("What is in this picture?"),
        Part("uri", uri="https://example.com/cat.png", modality="image"),
    )
    assert (answer.text, answer.usage, answer.flags) == (
        "A cat on a sofa.",
        Usage(850, None, 7),
        (),
    )
    assert json.loads(row["metadata"])["user_ids"] == ["u-9"]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("observations.json", (6, 1, 0)),
        ("observations.jsonl", (7, 2, 0)),
        ("observations.csv", (3, 1, 0)),
        ("trace.json", (2, 1, 0)),
    ],
)
def test_every_record_is_accounted_for(
    name: str, expected: tuple[int, int, int], tmp_path: Path
) -> None:
    summary, _ = corpus_of([LF / name], tmp_path)
    assert (summary.records, summary.sessions, summary.rejects) == expected
    assert summary.by_format == {"langfuse": expected[1]}


def test_roundtrip_through_export(tmp_path: Path) -> None:
    a, b, _, _ = roundtrip([LF], tmp_path, sessions=5)
    assert_same_tables(a, b)


def test_detection() -> None:
    langfuse = get_importer("langfuse")
    for path in sorted(LF.iterdir()):
        assert detect(path) == "langfuse", path
    others = [p for p in FIX.rglob("*") if p.is_file() and p.parent.name != "langfuse"]
    assert len(others) > 50
    for path in others:
        assert langfuse.sniff(path, path.read_bytes()[: 1 << 20]) < MIN_SCORE, path
        try:
            assert detect(path) != "langfuse", path
        except AmbiguousFormat as e:  # never because of this format
            assert "langfuse" not in {name for name, _ in e.candidates}, path


# --- grouping and history -------------------------------------------------------------------


def test_generations_that_disagree_are_split(tmp_path: Path) -> None:
    rows = [
        obs("g1", "GENERATION", "2025-01-01T00:00:00Z", sessionId="s", input=[user("a")], output=bot("b")),
        obs("g2", "GENERATION", "2025-01-01T00:00:01Z", sessionId="s",
            input=[user("a"), bot("REGENERATED"), user("c")], output=bot("d")),
    ]  # fmt: skip
    sessions, rejects, _ = read(write_jsonl(tmp_path / "split.jsonl", rows))
    assert rejects == []
    longest, other = sessions
    assert [m.text for m in longest.messages] == ["a", "REGENERATED", "c", "d"]
    assert [m.text for m in other.messages] == ["a", "b"]
    assert (longest.key, other.key) == ("langfuse:session:s", "langfuse:session:s#2")
    assert (longest.metadata["split"], other.metadata["split"]) == (
        {"part": 1, "of": 2},
        {"part": 2, "of": 2},
    )
    assert all("conversation_split" in s.messages[0].flags for s in sessions)


def test_session_comes_from_a_trace_row_or_another_observation_of_the_trace(tmp_path: Path) -> None:
    rows = [
        obs("g1", "GENERATION", "1", traceId="t1", input=[user("a")], output=bot("b")),
        obs("s1", "SPAN", "1", traceId="t2", sessionId="from-span"),
        obs("g2", "GENERATION", "2", traceId="t2", input=[user("x")], output=bot("y")),
        {"id": "t1", "timestamp": "2025-01-01T00:00:00Z", "sessionId": "from-trace", "userId": "u"},
    ]
    sessions, rejects, importer = read(write_jsonl(tmp_path / "keys.jsonl", rows))
    assert rejects == []
    assert sorted((s.source_session_id, s.key) for s in sessions) == [
        ("from-span", "langfuse:session:from-span"),
        ("from-trace", "langfuse:session:from-trace"),
    ]
    assert importer.ignored_records == [1, 3]
    assert dict(importer.tally.skipped) == {"not_a_model_call": 1, "trace_record": 1}


def test_usage_details_are_disjoint_unless_total_says_otherwise() -> None:
    assert langfuse_usage(
        {"usageDetails": {"input": 30, "input_cached_tokens": 64, "output": 12}}
    ) == (
        Usage(94, 64, 12),
        False,
    )
    included = {"input": 94, "input_cached_tokens": 64, "output": 12, "total": 106}
    assert langfuse_usage({"usageDetails": included}) == (Usage(94, 64, 12), False)
    reasoning = {"input": 5, "output": 3, "output_reasoning_tokens": 40, "total": 48}
    assert langfuse_usage({"usage_details": reasoning}) == (Usage(5, None, 43), False)
    assert langfuse_usage({"usage": {"input": 8, "output": 2, "total": 10, "unit": "TOKENS"}}) == (
        Usage(8, None, 2),
        False,
    )
    assert langfuse_usage({"inputUsage": 0, "outputUsage": 0, "totalUsage": 0}) == (None, False)
    assert langfuse_usage({"usageDetails": {"input": "many", "output": 3}}) == (
        Usage(None, None, 3),
        True,
    )


# --- bad input ------------------------------------------------------------------------------


def test_malformed_records_are_rejected_with_their_bytes_and_the_rest_imports(
    tmp_path: Path,
) -> None:
    good = [
        obs("g1", "GENERATION", "2025-01-01T00:00:00Z", sessionId="s", input=[user("a")], output=bot("b")),
        obs("g2", "GENERATION", "2025-01-01T00:00:02Z", sessionId="s",
            input=[user("a"), bot("b"), user("c")], output=bot("d")),
    ]  # fmt: skip
    bad_role = obs("g3", "GENERATION", "2025-01-01T00:00:01Z", sessionId="s",
                   input=[{"role": "wizard", "content": "x"}], output=bot("y"))  # fmt: skip
    no_type = {"id": "z", "traceId": "t", "type": 7}
    path = tmp_path / "bad.jsonl"
    lines = [
        json.dumps(good[0]),
        "{not json",
        json.dumps(bad_role),
        json.dumps(no_type),
        json.dumps(good[1]),
    ]
    path.write_text("\n".join(lines) + "\n")
    summary, corpus = corpus_of([path], tmp_path)
    assert (summary.records, summary.sessions, summary.rejects) == (5, 1, 3)
    rejects = corpus.rejects().sort("record").to_dicts()
    assert [(r["record"], r["line"], r["reason"], r["json_path"]) for r in rejects] == [
        (1, 2, "invalid_json", "$"),
        (2, 3, "unknown_role", "$.input[0].role"),
        (3, 4, "wrong_type", "$.type"),
    ]
    assert [r["raw"] for r in rejects] == [lines[1].encode(), lines[2].encode(), lines[3].encode()]
    assert rejects[1]["session_id"] == "s"
    (row,) = corpus.sessions().to_dicts()
    messages = corpus.load_session(row["session_id"])
    assert [m.text for m in messages] == ["a", "b", "c", "d"]
    assert "conversation_incomplete" in messages[0].flags  # a call of the session was rejected
    assert (
        json.loads(row["metadata"])["rejected_calls"] == 2
    )  # the bad role and, by its trace, the bad type


def test_a_session_that_fails_validation_rejects_every_observation_of_it(tmp_path: Path) -> None:
    orphan = {"role": "tool", "tool_call_id": "nobody", "content": "x"}
    rows = [
        obs("g1", "GENERATION", "1", sessionId="s", input=[user("a")], output=bot("b")),
        obs("g2", "GENERATION", "2", sessionId="s", input=[user("a"), bot("b"), orphan], output=bot("c")),
        obs("g3", "GENERATION", "3", sessionId="ok", input=[user("fine")], output=bot("yes")),
    ]  # fmt: skip
    path = write_jsonl(tmp_path / "orphan.jsonl", rows)
    sessions, rejects, importer = read(path)
    assert [s.source_session_id for s in sessions] == ["ok"]
    assert sorted((r.record, r.reason) for r in rejects) == [
        (0, "orphan_tool_result"),
        (1, "orphan_tool_result"),
    ]
    raws = {r.record: r.raw for r in rejects}
    assert raws == {0: json.dumps(rows[0]).encode(), 1: json.dumps(rows[1]).encode()}
    assert importer.tally.seen == len(sessions) + len(rejects) + sum(
        importer.tally.skipped.values()
    )


def test_csv_rows_with_the_wrong_cell_count_are_rejected_with_their_lines(tmp_path: Path) -> None:
    text = (LF / "observations.csv").read_text()
    header, *rows = text.splitlines(keepends=True)
    broken = "c9,tr-c,2025-07-01T12:00:05.000Z,,x,EVENT\n"
    path = tmp_path / "broken.csv"
    path.write_text(header + rows[0] + broken + "".join(rows[1:]))
    sessions, rejects, importer = read(path)
    (reject,) = rejects
    assert (reject.record, reject.line, reject.reason) == (1, 3, "malformed")
    assert reject.raw == broken.encode()
    (s,) = sessions
    assert len(s.messages) == 5
    assert s.source_record == 3  # record indexes count the broken row
    assert importer.tally.seen == 4


def test_an_empty_or_header_only_csv_gives_no_session(tmp_path: Path) -> None:
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    _, rejects, _ = read(empty)
    assert [r.reason for r in rejects] == ["empty_session"]
    header = tmp_path / "header.csv"
    header.write_text((LF / "observations.csv").read_text().splitlines()[0] + "\n")
    assert read(header)[:2] == ([], [])


# --- CSV is not JSON records: its own property test ---------------------------------------------


@settings(
    max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
@given(
    kind=st.sampled_from(("truncate", "flip", "insert", "drop_line")),
    seed=st.integers(0, 2**32 - 1),
)
def test_mutated_csv_never_raises_and_accounts_for_every_row(kind: str, seed: int) -> None:
    rng = random.Random(seed)
    data = bytearray((LF / "observations.csv").read_bytes())
    if kind == "truncate":
        data = data[: rng.randrange(len(data))]
    elif kind == "flip":
        for at in rng.sample(range(len(data)), 3):
            data[at] ^= rng.randint(1, 255)
    elif kind == "insert":
        at = rng.randrange(len(data))
        data[at:at] = rng.choice([b'"', b",", b"\n", b"\xff", b"\x00", b'{"'])
    else:
        lines = bytes(data).split(b"\n")
        del lines[rng.randrange(len(lines))]
        data = bytearray(b"\n".join(lines))
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "m.csv"
        path.write_bytes(bytes(data))
        sessions, rejects, importer = read(path)
    for r in rejects:
        assert r.reason and isinstance(r.raw, bytes)
    tally = importer.tally
    assert tally.seen == len(sessions) + len(rejects) + sum(tally.skipped.values())

"""langsmith importer: runs from JSONL, JSON and Parquet exports, threads, tool runs, rejects.

The fixtures (``tests/fixtures/langsmith``, written by its ``make_fixture.py``) follow the run
schema of langsmith-sdk ``python/langsmith/schemas.py`` (``RunBase``, ``Run``: ``trace_id``,
``dotted_order``, ``session_id`` = the project, token counts), the LangSmith docs' "Run (span)
data format", "Log custom LLM traces" (the accepted output shapes) and "Set up threads"
(``metadata.session_id`` / ``thread_id`` / ``conversation_id``), and what LangChain's tracer
records (langchain ``langchain_core/tracers/langchain.py``: ``inputs={"messages": [[dumpd(m)]]}``;
``tracers/core.py``: ``outputs = LLMResult.model_dump()``), and ``langsmith/wrappers/_openai.py``
(``usage`` moved to ``usage_metadata``).
"""

from __future__ import annotations

import importlib.util
import json
import random
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_export_roundtrip import assert_same_tables, roundtrip

from ctxreplay.datasets.importers import AmbiguousFormat, detect, get_importer
from ctxreplay.datasets.importers.langsmith import LangSmithImporter, chat_messages
from ctxreplay.datasets.ingest import import_paths
from ctxreplay.datasets.messages import Message, Part, Session, Usage
from ctxreplay.datasets.rejects import SKIPS, Reject
from ctxreplay.datasets.store import Corpus

from builders import FIXTURES

LS = FIXTURES / "langsmith"
AGENT = LS / "langchain_agent.jsonl"
WRAPPER = LS / "openai_wrapper.jsonl"
API = LS / "runs_api.json"
BAD = LS / "bad.jsonl"
PARQUET = LS / "bulk_export.parquet"
ALL = [AGENT, WRAPPER, API, BAD, PARQUET]
PROJECT = "5e3b4eca-0000-4000-8000-00000000aaaa"


def _make_fixture() -> ModuleType:
    spec = importlib.util.spec_from_file_location("ls_make_fixture", LS / "make_fixture.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


MAKE = _make_fixture()


def read(path: Path) -> tuple[list[Session], list[Reject], LangSmithImporter]:
    importer = get_importer("langsmith")
    assert isinstance(importer, LangSmithImporter)
    items = list(importer.read(path))
    sessions = [i for i in items if isinstance(i, Session)]
    rejects = [i for i in items if isinstance(i, Reject)]
    assert len(sessions) + len(rejects) == len(items)
    tally = importer.tally
    assert tally.seen == len(sessions) + len(rejects) + sum(tally.skipped.values())
    return sessions, rejects, importer


def view(m: Message) -> tuple[Any, ...]:
    return (m.role, m.parts, m.usage, m.timestamp)


def write_jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


# --- record kinds, imported into a corpus ------------------------------------------------------


def test_langgraph_thread_of_two_traces_is_one_session(tmp_path: Path) -> None:
    summary = import_paths([AGENT], tmp_path / "c", progress=False)
    assert (summary.records, summary.sessions, summary.rejects) == (12, 1, 0)
    assert summary.skipped == {"not_a_model_call": 7, "in_session": 2, "result_in_session": 2}
    assert summary.unaccounted == 0
    corpus = Corpus(tmp_path / "c")
    (row,) = corpus.sessions().to_dicts()
    assert row["source_format"] == "langsmith"
    assert row["source_session_id"] == "thread-weather-1"
    assert (row["n_messages"], row["n_tool_calls"], row["n_tool_results"]) == (9, 3, 3)
    assert row["tokens"] > 0
    assert (row["usage_prompt_tokens"], row["usage_completion_tokens"]) == (373, 70)
    assert row["usage_cached_tokens"] == 128
    meta = json.loads(row["metadata"])
    assert meta == {
        "calls": 3,
        "records": [2, 6, 9, 10, 11],  # the three llm runs and the two tool runs used
        "traces": ["0195f0a1-0000-7000-8000-0000000000a0", "0195f0a1-0000-7000-8000-0000000000b0"],
        "models": ["gpt-4o"],
        "providers": ["openai"],
        "grouping": "thread",
        "thread": "thread-weather-1",
        "projects": [PROJECT],
        "tags": ["seq:step:1"],
        "tool_runs": 2,
        "runtime": {
            "sdk": "langsmith-py",
            "sdk_version": "0.3.45",
            "library": "langsmith",
            "runtime_version": "3.11.9",
            "langchain_version": "0.3.25",
            "langchain_core_version": "0.3.63",
        },
    }
    messages = corpus.load_session(row["session_id"])
    weather = Part.call("call_P1", "get_weather", {"city": "Paris"})
    assert [view(m) for m in messages] == [
        ("system", (Part.text("You are a helpful weather assistant."),), None, None),
        ("user", (Part.text("What's the weather in Paris?"),), None, None),
        ("assistant", (weather,), Usage(82, 0, 15), "2025-03-01T10:00:01.400000Z"),
        ("tool", (Part.response("call_P1", "18°C and sunny", "get_weather"),), None, None),
        (
            "assistant",
            (Part.text("It's 18°C and sunny in Paris."),),
            Usage(131, 0, 14),
            "2025-03-01T10:00:03.800000Z",
        ),
        ("user", (Part.text("And in Rome tomorrow?"),), None, None),
        (
            "assistant",
            (
                Part.call("call_R1", "get_forecast", {"city": "Rome", "day": "tomorrow"}),
                Part.call("call_R2", "get_weather", {"city": "Rome"}),
            ),
            Usage(160, 128, 41),
            "2025-03-01T10:05:02Z",
        ),
        # the trace ended after its tools ran: their tool runs answer the open calls
        (
            "tool",
            (Part.response("call_R1", "Rain, 14°C", "get_forecast"),),
            None,
            "2025-03-01T10:05:02.600000Z",
        ),
        (
            "tool",
            (Part.response("call_R2", "16°C, cloudy", "get_weather"),),
            None,
            "2025-03-01T10:05:02.400000Z",
        ),
    ]
    assert all(m.visible and not m.flags for m in messages)
    # turn 1 was recorded with dumpd, turn 2 with message_to_dict: the same messages
    assert messages[0].source_path == "$.inputs.messages[0][0]"
    assert messages[6].source_path == "$.outputs.generations[0][0].message"
    assert messages[7].source_path == "$.outputs.output"


def test_openai_and_anthropic_wrappers_and_the_threads_example(tmp_path: Path) -> None:
    sessions, rejects, importer = read(WRAPPER)
    assert rejects == []
    assert importer.tally.skipped == {"not_a_model_call": 2, "in_session": 1}
    assert importer.ignored_records == [0, 2]  # the "Chat Bot" root runs
    by_id = {s.source_session_id: s for s in sessions}
    chat = by_id["f47ac10b-58cc-4372-a567-0e02b2c3d479"]  # the thread key was on the root runs
    assert chat.key == (
        "thread:5e3b4eca-0000-4000-8000-00000000bbbb:f47ac10b-58cc-4372-a567-0e02b2c3d479"
    )
    assert [view(m) for m in chat.messages] == [
        ("user", (Part.text("Hi, my name is Bob"),), None, None),
        (
            "assistant",
            (Part.text("Hello Bob! How can I help you today?"),),
            Usage(13, 0, 10),
            "2025-03-02T09:00:00.900000Z",
        ),
        ("user", (Part.text("What is my name?"),), None, None),
        (
            "assistant",
            (Part.text("Your name is Bob."),),
            Usage(34, 0, 6),
            "2025-03-02T09:01:00.800000Z",
        ),
    ]
    assert chat.metadata["records"] == [1, 3] and chat.metadata["grouping"] == "thread"
    units = by_id["0195f0b2-0000-7000-8000-000000000005"]  # no thread: its trace is the session
    assert units.metadata["grouping"] == "trace" and "thread" not in units.metadata
    assert [view(m) for m in units.messages] == [
        ("system", (Part.text("You convert units."),), None, None),
        ("user", (Part.text("How many km is 26.2 miles?"),), None, None),
        (
            "assistant",
            (Part.call("call_c1", "convert", '{"value": 26.2, "from": "mi", "to": "km"}'),),
            None,
            None,
        ),
        ("tool", (Part.response("call_c1", "42.16", "convert"),), None, None),
        (
            "assistant",  # a bare {role, content} output; usage from the run's own counts
            (Part.text("26.2 miles is about 42.16 km."),),
            Usage(57, None, 12),
            "2025-03-02T10:00:00.500000Z",
        ),
    ]
    claude = by_id["0195f0b2-0000-7000-8000-000000000006"]
    assert claude.metadata["models"] == ["claude-sonnet-4-20250514"]
    assert claude.metadata["providers"] == ["anthropic"]
    assert [view(m) for m in claude.messages] == [
        ("system", (Part.text("Answer in one sentence."),), None, None),
        ("user", (Part.text("Is 7919 prime?"),), None, None),
        (
            "assistant",
            (
                Part("reasoning", content="Check with the tool."),
                Part.call("toolu_01", "is_prime", {"n": 7919}),
            ),
            None,
            None,
        ),
        ("user", (Part.response("toolu_01", "true", "is_prime"),), None, None),
        (
            "assistant",  # Anthropic usage: the prompt includes the cache reads
            (Part.text("Yes, 7919 is prime."),),
            Usage(320, 300, 9),
            "2025-03-02T11:00:01Z",
        ),
    ]


def test_runs_api_document_with_child_runs_and_a_split_trace() -> None:
    sessions, rejects, importer = read(API)
    assert rejects == []
    assert importer.tally.seen == 5  # one document, two root runs and their three children
    assert importer.tally.skipped == {"not_a_model_call": 2}
    tides, title, tutor = sessions
    assert tides.source_session_id == "conv-tides" and tides.metadata["grouping"] == "thread"
    assert [view(m) for m in tides.messages] == [
        ("user", (Part.text("Write one sentence about tides."),), None, None),
        (
            "assistant",  # a completion model: inputs.prompts, generations[0][0].text
            (Part.text("Tides are driven by the Moon's gravity."),),
            Usage(9, None, 11),
            "2025-03-03T08:00:00.900000Z",
        ),
    ]
    assert tides.messages[1].source_path == "$.runs[0].child_runs[0].outputs.generations[0][0]"
    # the title call shares the trace but not the history: two sessions, both flagged
    trace = "0195f0c3-0000-7000-8000-000000000010"
    assert (title.key, tutor.key) == (f"trace:{trace}", f"trace:{trace}#2")
    assert title.source_session_id == tutor.source_session_id == trace
    assert [m.text for m in title.messages] == [
        "Give the conversation a three-word title.",
        "Explain eclipses briefly.",
        "Eclipses Explained Briefly",
    ]
    assert tutor.messages[0].text == "You are an astronomy tutor."
    assert title.metadata["split"] == {"part": 1, "of": 2}
    assert tutor.metadata["split"] == {"part": 2, "of": 2}
    for s in (title, tutor):
        assert s.messages[0].flags == ("conversation_split",)


# --- LangChain's message shapes --------------------------------------------------------------


def _conversation(shape: str) -> list[Any]:
    """One conversation with a tool call, in each of the shapes LangSmith stores messages."""
    call = {"name": "lookup", "args": {"q": "tides"}, "id": "call_1", "type": "tool_call"}
    if shape == "role":
        return [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Look up tides."},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "lookup", "arguments": '{"q":"tides"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "Moon-driven."},
        ]
    made = {"constructor": MAKE.dumpd, "data": MAKE.to_dict}[shape]
    return [
        made("system", "Be brief."),
        made("human", "Look up tides."),
        made("ai", "", tool_calls=[call]),
        made("tool", "Moon-driven.", tool_call_id="call_1", name="lookup"),
    ]


def test_langchain_messages_of_all_three_shapes_read_the_same() -> None:
    read_as = {s: chat_messages(_conversation(s), "$") for s in ("constructor", "data", "role")}
    expected = [
        ("system", (Part.text("Be brief."),)),
        ("user", (Part.text("Look up tides."),)),
        ("assistant", (Part.call("call_1", "lookup", {"q": "tides"}),)),
        ("tool", (Part.response("call_1", "Moon-driven.", "lookup"),)),
    ]
    got = {s: [(m.role, m.parts) for m in ms] for s, ms in read_as.items()}
    assert got["constructor"] == got["data"] == expected
    assert got["role"][:3] == expected[:3]
    assert got["role"][3] == ("tool", (Part.response("call_1", "Moon-driven."),))  # no name


def test_calls_recorded_in_different_shapes_make_one_thread(tmp_path: Path) -> None:
    """Three calls of one thread, each recorded in another shape: one session, no split."""
    human, ai, tool = MAKE.dumpd, MAKE.to_dict, MAKE.fields
    first = [human("human", "Look up tides.")]
    out1 = MAKE.ai("", [MAKE.call("lookup", {"q": "tides"}, "call_1")], MAKE.usage(5, 2), "m1")
    second = [
        ai("human", "Look up tides."),
        MAKE.ai(
            "", [MAKE.call("lookup", {"q": "tides"}, "call_1")], MAKE.usage(5, 2), "m1", shape=ai
        ),
        ai("tool", "Moon-driven.", tool_call_id="call_1"),
    ]
    third = [
        tool("human", "Look up tides."),
        tool("ai", "", tool_calls=[MAKE.call("lookup", {"q": "tides"}, "call_1")]),
        tool("tool", "Moon-driven.", tool_call_id="call_1"),
        tool("ai", "Tides follow the Moon."),
        tool("human", "Thanks!"),
    ]
    meta = {"conversation_id": "c-shapes"}
    times = [f"2025-05-01T00:00:0{i}.000000" for i in range(6)]
    runs = [
        MAKE.run(
            "r-1",
            "llm",
            "m",
            times[0],
            times[1],
            None,
            {"messages": [first]},
            MAKE.llm_result(out1, MAKE.usage(5, 2)),
            meta,
        ),
        MAKE.run(
            "r-2",
            "llm",
            "m",
            times[2],
            times[3],
            None,
            {"messages": [second]},
            MAKE.llm_result(
                MAKE.ai("Tides follow the Moon.", [], MAKE.usage(9, 4), "m2"), MAKE.usage(9, 4)
            ),
            meta,
        ),
        MAKE.run(
            "r-3",
            "llm",
            "m",
            times[4],
            times[5],
            None,
            {"messages": [third]},
            {"role": "assistant", "content": "You're welcome."},
            meta,
        ),
    ]
    (s,), rejects, importer = read(write_jsonl(tmp_path / "shapes.jsonl", runs))
    assert rejects == [] and importer.tally.skipped == {"in_session": 2}
    assert s.key == f"thread:{PROJECT}:c-shapes" and s.metadata["traces"] == ["r-1", "r-2", "r-3"]
    assert [(m.role, m.text) for m in s.messages] == [
        ("user", "Look up tides."),
        ("assistant", ""),
        ("tool", ""),
        ("assistant", "Tides follow the Moon."),
        ("user", "Thanks!"),
        ("assistant", "You're welcome."),
    ]
    assert [m.usage for m in s.messages] == [None, Usage(5, 0, 2), None, Usage(9, 0, 4), None, None]


# --- Parquet --------------------------------------------------------------------------------


def test_jsonl_and_parquet_of_the_same_runs_give_the_same_corpus(tmp_path: Path) -> None:
    runs = [*MAKE.langchain_agent(), *MAKE.openai_wrapper()]
    jsonl = write_jsonl(tmp_path / "runs.jsonl", runs)
    built = tmp_path / "runs.parquet"
    MAKE.write_parquet(runs, built, row_group_size=3)
    assert pq.ParquetFile(built).num_row_groups == 6
    a = import_paths([jsonl], tmp_path / "a", progress=False)
    b = import_paths([built], tmp_path / "b", progress=False)
    assert (a.records, a.sessions, a.skipped) == (b.records, b.sessions, b.skipped)
    assert (b.records, b.sessions, b.rejects) == (18, 4, 0)
    assert_same_tables(Corpus(tmp_path / "a"), Corpus(tmp_path / "b"))
    # the committed export (another row grouping) reads as its JSONL twin
    c = import_paths([AGENT], tmp_path / "c", progress=False)
    d = import_paths([PARQUET], tmp_path / "d", progress=False)
    assert (d.records, d.sessions, d.rejects) == (12, 1, 0)
    assert c.skipped == d.skipped
    assert_same_tables(Corpus(tmp_path / "c"), Corpus(tmp_path / "d"))


def test_parquet_is_read_a_row_group_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    def whole(*_: Any, **__: Any) -> None:
        raise AssertionError("the whole file was read at once")

    monkeypatch.setattr(pq.ParquetFile, "read", whole)
    monkeypatch.setattr(pq, "read_table", whole)
    groups: list[int] = []
    original = pq.ParquetFile.read_row_group

    def one(self: pq.ParquetFile, i: int, *args: Any, **kw: Any) -> pa.Table:
        groups.append(i)
        return original(self, i, *args, **kw)

    monkeypatch.setattr(pq.ParquetFile, "read_row_group", one)
    (s,), rejects, _ = read(PARQUET)
    assert rejects == [] and len(s.messages) == 9
    assert groups == [0, 1, 2]  # 12 rows in groups of 5


def _bad_table() -> pa.Table:
    """Four rows: a good call, and three a bulk export could hold damaged."""
    rows = MAKE.bad()[:1] * 4
    ids = [f"0195f0d4-0000-7000-8000-0000000001{i:02d}" for i in range(4)]
    inputs = [json.dumps(r["inputs"]) for r in rows]
    inputs[1] = '{"messages": [{"role": "user", "content": "pi'  # text cut short
    names = [b"ChatOpenAI", b"ChatOpenAI", b"Chat\xffOpenAI", b"ChatOpenAI"]  # not UTF-8
    seconds = [1741075201, 1741075201, 1741075201, 10**15]  # the last is after the year 9999
    return pa.table(
        {
            "id": pa.array(ids),
            "trace_id": pa.array(ids),
            "run_type": pa.array(["llm"] * 4),
            "name": pa.array(names, pa.binary()),
            "dotted_order": pa.array([f"20250304T080000000000Z{i}" for i in ids]),
            "inputs": pa.array(inputs),
            "outputs": pa.array([json.dumps(r["outputs"]) for r in rows]),
            "extra": pa.array([json.dumps(r["extra"]) for r in rows]),
            "end_time": pa.array(seconds, pa.timestamp("s")),
        }
    )


def test_parquet_rows_that_cannot_be_read_are_rejected_with_the_row_as_json(
    tmp_path: Path,
) -> None:
    path = tmp_path / "bad.parquet"
    pq.write_table(_bad_table(), path, row_group_size=2)
    sessions, rejects, _ = read(path)
    assert [s.source_session_id for s in sessions] == ["0195f0d4-0000-7000-8000-000000000100"]
    assert sessions[0].messages[-1].timestamp == "2025-03-04T08:00:01Z"
    by_record = {r.record: r for r in rejects}
    assert {k: (r.reason, r.json_path) for k, r in by_record.items()} == {
        1: ("invalid_json", "$.inputs"),
        2: ("invalid_utf8", "$.name"),
        3: ("out_of_range", "$.end_time"),
    }
    for r in rejects:
        row = json.loads(r.raw.decode("utf-8", "surrogateescape"))
        assert row["id"] == f"0195f0d4-0000-7000-8000-0000000001{r.record:02d}"
        assert r.session_id == row["id"]
    assert json.loads(by_record[1].raw)["inputs"].endswith('"content": "pi')
    assert by_record[2].raw.count(b"Chat\xffOpenAI") == 1  # the exact bytes of the value
    assert "row 1 of row group 1" in by_record[3].detail  # the value as arrow shows it
    summary = import_paths([path], tmp_path / "c", progress=False)
    assert (summary.records, summary.sessions, summary.rejects) == (4, 1, 3)
    assert summary.unaccounted == 0


def test_a_damaged_parquet_file_is_one_reject(tmp_path: Path) -> None:
    cut = tmp_path / "cut.parquet"
    cut.write_bytes(PARQUET.read_bytes()[:5000])
    assert detect(cut) is None  # no format claims it: the import says unknown_format
    sessions, (reject,), importer = read(cut)
    assert sessions == [] and importer.tally.seen == 1
    assert reject.reason == "unreadable_file"
    assert reject.detail.startswith("not a readable Parquet file")
    assert reject.raw == cut.read_bytes()
    summary = import_paths([cut], tmp_path / "c", fmt="langsmith", progress=False)
    assert (summary.records, summary.rejects, summary.unaccounted) == (1, 1, 0)


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2**32 - 1), kind=st.sampled_from(["flip", "truncate", "row"]))
def test_mutated_parquet_never_raises_and_accounts_for_every_row(seed: int, kind: str) -> None:
    """Parquet is not JSON records: its own property test (bytes flipped or cut, or a row's
    values replaced by values of other types)."""
    rng = random.Random(seed)
    runs = MAKE.langchain_agent()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "m.parquet"
        if kind == "row":
            victim = rng.randrange(len(runs))
            key = rng.choice([k for k in runs[victim] if k not in MAKE.TIME_COLUMNS])
            runs[victim][key] = rng.choice([42, "text", "{", [], {"k": 1}, None, '{"a": [1'])
        MAKE.write_parquet(runs, path, row_group_size=4)
        data = bytearray(path.read_bytes())
        if kind == "flip":
            for at in rng.sample(range(len(data)), rng.randint(1, 8)):
                data[at] ^= rng.randint(1, 255)
        elif kind == "truncate":
            data = data[: rng.randrange(len(data))]
        path.write_bytes(bytes(data))
        read(path)  # never raises; seen == sessions + rejects + skipped (checked in read)


# --- accounting, round trip, detection, bad input ------------------------------------------------


def test_accounting_on_every_fixture(tmp_path: Path) -> None:
    for n, path in enumerate(ALL):
        summary = import_paths([path], tmp_path / f"c{n}", progress=False)
        assert summary.records == summary.sessions + summary.rejects + sum(summary.skipped.values())
        assert summary.unaccounted == 0
        assert set(summary.skipped) <= set(SKIPS)
    summary = import_paths(ALL, tmp_path / "all", progress=False)
    assert (summary.files, summary.records, summary.sessions) == (5, 43, 8)
    assert summary.rejected == {
        "invalid_json": 2,
        "wrong_type": 2,
        "missing_field": 1,
        "malformed": 1,
        "orphan_tool_result": 1,
        "duplicate_session": 1,  # the Parquet export of the agent thread, already read as JSONL
    }
    assert summary.skipped == {"not_a_model_call": 18, "in_session": 5, "result_in_session": 4}


def test_roundtrip_through_export(tmp_path: Path) -> None:
    a, b, _, _ = roundtrip([AGENT, WRAPPER, API, BAD], tmp_path, sessions=8)
    assert set(a.sessions()["source_format"]) == {"langsmith"}
    assert_same_tables(a, b)


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.name)
def test_fixtures_are_detected_without_format(path: Path) -> None:
    assert detect(path) == "langsmith"


def _other_fixtures() -> list[Path]:
    return sorted(p for p in FIXTURES.rglob("*") if p.is_file() and LS not in p.parents)


def test_no_other_fixture_is_taken_for_langsmith() -> None:
    importer = get_importer("langsmith")
    for path in _other_fixtures():
        if path.suffix and path.suffix not in importer.suffixes:
            continue
        head = path.read_bytes()[: 1 << 20]
        assert importer.sniff(path, head) == 0.0, path
        try:
            assert detect(path) != "langsmith", path
        except AmbiguousFormat as e:  # between other formats: not this importer's question
            assert "langsmith" not in str(e), path


BAD_LINES = {  # line: (reason, JSON path)
    2: ("invalid_json", "$"),
    3: ("missing_field", "$"),
    4: ("wrong_type", "$.inputs.messages"),
    5: ("invalid_json", "$.inputs"),
    6: ("orphan_tool_result", "$.inputs.messages[0][1]"),
    7: ("malformed", "$.outputs"),
    8: ("wrong_type", "$"),
}


def test_bad_runs_are_rejected_with_their_bytes_and_the_rest_imports() -> None:
    sessions, rejects, _ = read(BAD)
    lines = BAD.read_bytes().split(b"\n")
    assert {r.line: (r.reason, r.json_path) for r in rejects} == BAD_LINES
    for r in rejects:
        assert r.line is not None and r.raw == lines[r.line - 1]
        assert r.source_format == "langsmith"
    by_line = {r.line: r for r in rejects}
    assert by_line[3].session_id == "0195f0d4-0000-7000-8000-000000000002"
    assert by_line[4].session_id == "0195f0d4-0000-7000-8000-000000000001"  # its trace
    (good,) = sessions
    assert [m.text for m in good.messages] == ["ping", "pong"]
    # a call of its trace was rejected: the session says so
    assert good.messages[0].flags == ("conversation_incomplete",)
    assert good.metadata["rejected_calls"] == 1


def test_runs_of_no_trace_are_their_own_sessions_and_odd_values_are_flagged(
    tmp_path: Path,
) -> None:
    user = {"messages": [{"role": "user", "content": "hi"}]}
    rows = [
        {"run_type": "llm", "inputs": user, "outputs": "hello", "end_time": "not a time"},
        {
            "run_type": "llm",
            "inputs": {"prompt": "2+2="},
            "outputs": {"output": "4"},
            "prompt_tokens": "many",
            "completion_tokens": 1,
            "start_time": 1740823200.5,
        },
    ]
    sessions, rejects, _ = read(write_jsonl(tmp_path / "loose.jsonl", rows))
    assert rejects == []
    first, second = sessions
    assert first.source_session_id == "loose:0" and first.key is not None
    assert first.key.startswith("run:")
    assert first.messages[-1].flags == ("timestamp_invalid",)
    assert first.messages[-1].timestamp == "not a time"  # text kept as written
    assert [m.text for m in second.messages] == ["2+2=", "4"]
    assert second.messages[-1].flags == ("usage_out_of_range",)
    assert second.messages[-1].usage == Usage(None, None, 1)


def test_legacy_function_calls_pair_across_calls(tmp_path: Path) -> None:
    """A ``function_call`` has no id: it is named by its place in the messages, the same in the
    call that made it and in the next call that repeats it with its ``FunctionMessage``."""
    fc = {"name": "get_weather", "arguments": '{"city": "Oslo"}'}
    asked = MAKE.dumpd("human", "Weather in Oslo?")
    called = MAKE.dumpd("ai", "", additional_kwargs={"function_call": fc})
    answer = {
        "lc": 1,
        "type": "constructor",
        "id": ["langchain", "schema", "messages", "FunctionMessage"],
        "kwargs": {"content": "cold", "name": "get_weather"},
    }
    runs = [
        MAKE.run("f-1", "llm", "m", "2025-06-01T00:00:00", "2025-06-01T00:00:01", None,
                 {"messages": [[asked]]}, MAKE.llm_result(called, MAKE.usage(6, 3)), {}),
        MAKE.run("f-2", "llm", "m", "2025-06-01T00:00:02", "2025-06-01T00:00:03", None,
                 {"messages": [[asked, called, answer]]}, {"output": "It is cold."}, {},
                 trace_id="f-1"),
    ]  # fmt: skip
    (s,), rejects, importer = read(write_jsonl(tmp_path / "legacy.jsonl", runs))
    assert rejects == [] and importer.tally.skipped == {"in_session": 1}
    assert [view(m)[:2] for m in s.messages] == [
        ("user", (Part.text("Weather in Oslo?"),)),
        ("assistant", (Part.call("function_call_1", "get_weather", '{"city": "Oslo"}'),)),
        ("tool", (Part.response("function_call_1", "cold", "get_weather"),)),
        ("assistant", (Part.text("It is cold."),)),
    ]

"""Import isolation: whatever one record holds (JSON nested thousands deep, numbers past int64,
NaN and infinite times, an importer bug), it becomes a reject or a flagged value for that record;
a file that fails as a whole is a reject and the next file imports; the corpus appears whole or
not at all."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ctxreplay.datasets.importers.openai_chat import OpenAIChatImporter
from ctxreplay.datasets.ingest import account_file, import_paths
from ctxreplay.datasets.messages import Message, Part, Session
from ctxreplay.datasets.rejects import Reject
from ctxreplay.datasets.store import Corpus, CorpusError, CorpusWriter
from ctxreplay.datasets.tokenizer import get_tokenizer

from builders import FIXTURES

DEEP = 3000  # past Python's recursion limit when parsed recursively


def deep(n: int = DEEP) -> Any:
    """A JSON value nested ``n`` lists deep (built without recursion)."""
    value: Any = []
    for _ in range(n):
        value = [value]
    return value


def dumps(value: Any) -> str:
    """JSON text of values nested deeper than ``json.dumps`` recurses."""
    text = json.dumps(value, default=lambda o: "@DEEP@")
    return text.replace('"@DEEP@"', "[" * DEEP + "]" * DEEP)


class Deep:
    """Stands for a value nested ``DEEP`` levels (written by ``dumps``)."""


def _openai(i: int, extra: Any = None) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "user", "content": f"hi {i}"}
    if extra is not None:
        message["meta"] = extra
    return {"id": f"s{i}", "messages": [message, {"role": "assistant", "content": "yo"}]}


def _anthropic(i: int, extra: Any = None) -> dict[str, Any]:
    use = {"type": "tool_use", "id": f"t{i}", "name": "f", "input": {"x": extra or 1}}
    return {
        "id": f"a{i}",
        "system": "sys",
        "messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [use]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{i}"}]},
        ],
    }


def _tau(i: int, extra: Any = None) -> dict[str, Any]:
    return {"task_id": i, "trial": 0, "info": {"x": extra}, "traj": _openai(i)["messages"]}


def _openhands(i: int, extra: Any = None) -> dict[str, Any]:
    event = {"kind": "MessageEvent", "source": "user", "extra": extra,
             "llm_message": {"role": "user", "content": [{"type": "text", "text": "hi"}]}}  # fmt: skip
    return {"instance_id": f"i{i}", "instruction": "do", "history": [event]}


def _otel(i: int, extra: Any = None) -> dict[str, Any]:
    messages = [{"role": "user", "parts": [{"type": "text", "content": "hi"}]}]
    return {
        "name": "chat",
        "start_time": str(1_700_000_000 + i),
        "attributes": {
            "gen_ai.conversation.id": f"c{i}",
            "gen_ai.input.messages": messages,
            "gen_ai.output.messages": [{"role": "assistant", "parts": [], "x": extra}],
        },
    }


LINE_FORMATS = {
    "openai-chat": _openai,
    "anthropic-messages": _anthropic,
    "tau-bench": _tau,
    "openhands": _openhands,
    "otel-genai": _otel,
}


@pytest.mark.parametrize("fmt", sorted(LINE_FORMATS))
@pytest.mark.parametrize("layout", ["jsonl", "array"])
def test_deep_nesting_rejects_its_record_only(fmt: str, layout: str, tmp_path: Path) -> None:
    make = LINE_FORMATS[fmt]
    texts = [dumps(make(0)), dumps(make(1, Deep())), dumps(make(2))]
    if layout == "jsonl":
        path = tmp_path / "deep.jsonl"
        path.write_text("\n".join(texts) + "\n")
    else:
        path = tmp_path / "deep.json"
        path.write_text("[\n" + ",\n".join(texts) + "\n]\n")
    summary = import_paths([path], tmp_path / "c", fmt=fmt, progress=False)
    assert dict(summary.rejected) == {"nesting_too_deep": 1}
    assert summary.sessions == 2
    (row,) = Corpus(tmp_path / "c").rejects().to_dicts()
    assert row["record"] == 1 and row["raw"] == texts[1].encode()


def test_deep_nesting_in_one_tau2_simulation(tmp_path: Path) -> None:
    doc = json.loads((FIXTURES / "tau2-bench" / "results_small.json").read_text())
    good = doc["simulations"][0]
    doc["simulations"] = [
        {**good, "id": "a"},
        {**good, "id": "deep", "extra": Deep()},
        {**good, "id": "b"},
    ]
    path = tmp_path / "results.json"
    path.write_text(dumps(doc))
    summary = import_paths([path], tmp_path / "c", fmt="tau2-bench", progress=False)
    assert dict(summary.rejected) == {"nesting_too_deep": 1}
    assert summary.sessions == 2
    (row,) = Corpus(tmp_path / "c").rejects().to_dicts()
    assert row["record"] == 1 and row["json_path"].startswith("$.simulations[1]")


def test_deep_nesting_in_a_swe_agent_file(tmp_path: Path) -> None:
    doc = json.loads((FIXTURES / "swe-agent" / "textual.traj").read_text())
    doc["history"][1]["extra"] = Deep()
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "deep.traj").write_text(dumps(doc))
    (tmp_path / "in" / "ok.traj").write_text((FIXTURES / "swe-agent" / "textual.traj").read_text())
    summary = import_paths([tmp_path / "in"], tmp_path / "c", progress=False)
    assert (summary.sessions, dict(summary.rejected)) == (1, {"nesting_too_deep": 1})


def test_deeply_nested_tool_arguments_reject_the_session(tmp_path: Path) -> None:
    record = _openai(0)
    call = {"id": "c", "type": "function", "function": {"name": "f", "arguments": "@ARGS@"}}
    record["messages"][1] = {"role": "assistant", "content": None, "tool_calls": [call]}
    record["messages"].append({"role": "tool", "tool_call_id": "c", "content": "ok"})
    text = json.dumps(record).replace('"@ARGS@"', json.dumps("[" * DEEP + "]" * DEEP))
    path = tmp_path / "args.jsonl"
    path.write_text(text + "\n" + json.dumps(_openai(1)) + "\n")
    summary = import_paths([path], tmp_path / "c", fmt="openai-chat", progress=False)
    assert (summary.sessions, dict(summary.rejected)) == (1, {"nesting_too_deep": 1})


BIG = 2**70


@pytest.mark.parametrize(
    ("fmt", "record"),
    [
        (
            "openai-chat",
            {"id": "u", "messages": [
                {"role": "user", "content": "q"},
                {"role": "assistant", "content": "a", "usage": {"prompt_tokens": BIG, "completion_tokens": 3}},
            ]},
        ),
        (
            "anthropic-messages",
            {"id": "u", "system": "s", "messages": [
                {"role": "user", "content": "q"},
                {"role": "assistant", "content": [{"type": "text", "text": "a"}], "usage": {"input_tokens": BIG, "output_tokens": -4}},
            ]},
        ),
        (
            "otel-genai",
            {"name": "chat", "start_time": "1700000000", "attributes": {
                "gen_ai.conversation.id": "u", "gen_ai.usage.input_tokens": BIG,
                "gen_ai.usage.output_tokens": 1.5e300,
                "gen_ai.input.messages": [{"role": "user", "parts": [{"type": "text", "content": "q"}]}],
                "gen_ai.output.messages": [{"role": "assistant", "parts": [{"type": "text", "content": "a"}]}],
            }},
        ),
    ],
)  # fmt: skip
def test_token_counts_out_of_range_are_dropped_and_flagged(
    fmt: str, record: dict[str, Any], tmp_path: Path
) -> None:
    path = tmp_path / "usage.jsonl"
    path.write_text(json.dumps(record) + "\n")
    summary = import_paths([path], tmp_path / "c", fmt=fmt, progress=False)
    assert (summary.sessions, summary.rejects) == (1, 0)
    corpus = Corpus(tmp_path / "c")
    (row,) = corpus.sessions().to_dicts()
    assert "usage_out_of_range" in row["flags"]
    assert row["usage_prompt_tokens"] is None  # dropped, never stored wrapped or clipped
    messages = corpus.messages()
    assert messages["usage_prompt_tokens"].drop_nulls().to_list() == []


def test_tau2_usage_out_of_range(tmp_path: Path) -> None:
    doc = json.loads((FIXTURES / "tau2-bench" / "results_small.json").read_text())
    sim = doc["simulations"][0]
    message = next(m for m in sim["messages"] if m["role"] == "assistant")
    message["usage"] = {"prompt_tokens": BIG, "completion_tokens": 2}
    path = tmp_path / "results.json"
    path.write_text(json.dumps(doc))
    before = import_paths(
        [FIXTURES / "tau2-bench" / "results_small.json"], tmp_path / "a", progress=False
    )
    summary = import_paths([path], tmp_path / "c", progress=False)
    assert (summary.sessions, summary.rejects) == (before.sessions, before.rejects)
    flags = Corpus(tmp_path / "c").sessions()["flags"].to_list()
    assert any(f and "usage_out_of_range" in f for f in flags)


@pytest.mark.parametrize(
    "time", ["NaN", "Infinity", "-Infinity", "1e30", '"1e30"', '"99999-01-01"', "true"]
)
def test_otel_times_that_are_not_times_are_dropped_and_flagged(time: str, tmp_path: Path) -> None:
    span = json.dumps(_otel(0)).replace('"1700000000"', time)
    ok = json.dumps(_otel(1))
    path = tmp_path / "spans.jsonl"
    path.write_text(span + "\n" + ok + "\n")
    summary = import_paths([path], tmp_path / "c", fmt="otel-genai", progress=False)
    assert (summary.sessions, summary.rejects) == (2, 0)
    sessions = {r["source_session_id"]: r for r in Corpus(tmp_path / "c").sessions().to_dicts()}
    assert "timestamp_invalid" in sessions["c0"]["flags"]
    assert not sessions["c1"]["flags"]


@pytest.mark.parametrize("field", ["endTimeUnixNano", "end_time"])
def test_otel_end_time_out_of_range(field: str, tmp_path: Path) -> None:
    span = _otel(0)
    span[field] = 1e30
    path = tmp_path / "spans.jsonl"
    path.write_text(json.dumps(span) + "\n")
    summary = import_paths([path], tmp_path / "c", fmt="otel-genai", progress=False)
    assert summary.sessions == 1
    assert "timestamp_invalid" in Corpus(tmp_path / "c").sessions()["flags"].item().to_list()


def test_message_times_of_other_formats(tmp_path: Path) -> None:
    record = _openai(0)
    record["messages"][0]["timestamp"] = float("nan")
    record["messages"][1]["timestamp"] = 1_700_000_000
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(record) + "\n")
    import_paths([path], tmp_path / "c", fmt="openai-chat", progress=False)
    messages = Corpus(tmp_path / "c").messages()
    assert messages["timestamp"].to_list() == [None, "2023-11-14T22:13:20Z"]
    assert messages["flags"].to_list()[0] == ["timestamp_invalid"]


def test_an_importer_bug_rejects_the_record_not_the_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = OpenAIChatImporter.sessions_from_record

    def buggy(self: OpenAIChatImporter, path: Path, record: Any) -> Any:
        if record.index == 1:
            raise RuntimeError("boom")
        return original(self, path, record)

    monkeypatch.setattr(OpenAIChatImporter, "sessions_from_record", buggy)
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(_openai(i)) + "\n" for i in range(3)))
    summary = import_paths([path], tmp_path / "c", fmt="openai-chat", progress=False)
    assert (summary.sessions, dict(summary.rejected)) == (2, {"import_error": 1})
    (row,) = Corpus(tmp_path / "c").rejects().to_dicts()
    assert "RuntimeError: boom" in row["detail"] and row["record"] == 1


def test_a_file_that_fails_as_a_whole_is_a_reject_and_the_next_file_imports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = OpenAIChatImporter.read

    def failing(self: OpenAIChatImporter, path: Path) -> Any:
        if path.name == "bad.jsonl":
            yield from []
            raise OSError("disk on fire")
        yield from original(self, path)

    monkeypatch.setattr(OpenAIChatImporter, "read", failing)
    for name in ("bad.jsonl", "good.jsonl"):
        (tmp_path / name).write_text(json.dumps(_openai(0)) + "\n")
    summary = import_paths(
        [tmp_path / "bad.jsonl", tmp_path / "good.jsonl"],
        tmp_path / "c",
        fmt="openai-chat",
        progress=False,
    )
    assert (summary.sessions, dict(summary.rejected)) == (1, {"import_error": 1})
    sources = Corpus(tmp_path / "c").manifest["sources"]
    assert sources[0]["incomplete"] and sources[0]["rejects"] == 1
    assert sources[1]["sessions"] == 1


def test_unreadable_file_is_a_reject(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "locked.jsonl"
    path.write_text(json.dumps(_openai(0)) + "\n")
    ok = tmp_path / "ok.jsonl"
    ok.write_text(json.dumps(_openai(1)) + "\n")
    open_path = Path.open  # files are read as streams: every read opens the file first

    def locked(self: Path, *args: Any, **kwargs: Any) -> Any:
        if self.name == "locked.jsonl":
            raise PermissionError(13, "Permission denied", str(self))
        return open_path(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", locked)
    summary = import_paths([path, ok], tmp_path / "c", fmt="openai-chat", progress=False)
    assert (summary.sessions, dict(summary.rejected)) == (1, {"unreadable_file": 1})
    monkeypatch.undo()
    assert Corpus(tmp_path / "c").manifest["sources"][0]["records"] == 1


def _session(record: int, sid: str = "x") -> Session:
    messages = [Message("user", (Part.text("hi"),)), Message("assistant", (Part.text("yo"),))]
    return Session("openai-chat", sid, messages, source_location="f.jsonl", source_record=record)


def test_a_session_that_cannot_be_stored_becomes_a_reject(tmp_path: Path) -> None:
    writer = CorpusWriter(tmp_path / "c", get_tokenizer())
    assert writer.add(_session(0, "fine")) is None
    assert writer.add(_session(2**70, "huge")) is None  # only the flush finds out
    writer.flush()
    (late,) = writer.take_late_rejects()
    assert late.reason == "unstorable" and late.session_id == "huge"
    writer.close([])
    corpus = Corpus(tmp_path / "c")
    assert corpus.sessions()["source_session_id"].to_list() == ["fine"]
    assert corpus.rejects()["reason"].to_list() == ["unstorable"]
    assert corpus.manifest["counts"]["sessions"] == 1


def test_a_failed_import_leaves_no_corpus_and_keeps_the_old_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = FIXTURES / "openai_chat" / "object.json"
    out = tmp_path / "c"
    import_paths([source], out, progress=False)
    before = (out / "manifest.json").read_bytes()

    def broken(self: CorpusWriter) -> None:
        raise OSError("no space left on device")

    monkeypatch.setattr(CorpusWriter, "flush", broken)
    with pytest.raises(OSError):
        import_paths([source], out, overwrite=True, progress=False)
    with pytest.raises(OSError):
        import_paths([source], tmp_path / "new", progress=False)
    monkeypatch.undo()
    assert (out / "manifest.json").read_bytes() == before  # the old corpus, untouched
    assert not (tmp_path / "new").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c"]  # no build folders left


def test_a_killed_import_leaves_no_corpus_and_does_not_block_the_next(tmp_path: Path) -> None:
    out = tmp_path / "c"
    script = f"""
import os, sys
sys.path.insert(0, {str(FIXTURES.parent)!r})
from builders import convo
from ctxreplay.datasets.messages import Session
from ctxreplay.datasets.store import CorpusWriter
from ctxreplay.datasets.tokenizer import get_tokenizer
writer = CorpusWriter({str(out)!r}, get_tokenizer())
writer.add(Session("openai-chat", "a", convo("a", 2)))
writer.flush()
os._exit(9)  # killed before close
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 9, done.stderr
    assert not out.exists()
    left = [p.name for p in tmp_path.iterdir()]
    assert len(left) == 1 and left[0].startswith(".c.build-")
    summary = import_paths([FIXTURES / "openai_chat" / "object.json"], out, progress=False)
    assert summary.sessions == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c"]  # the stale build was removed


def test_an_existing_corpus_needs_overwrite(tmp_path: Path) -> None:
    source = FIXTURES / "openai_chat" / "object.json"
    import_paths([source], tmp_path / "c", progress=False)
    with pytest.raises(CorpusError, match="--overwrite"):
        import_paths([source], tmp_path / "c", progress=False)
    summary = import_paths([source], tmp_path / "c", overwrite=True, progress=False)
    assert summary.sessions == 1


def test_every_importer_accounts_for_every_fixture_without_raising() -> None:
    """Each importer, on every fixture of every format (mostly the wrong format): each record
    seen is a session, a reject or a counted skip, and nothing raises."""
    files = [f for f in sorted(FIXTURES.rglob("*")) if f.is_file()]
    for fmt in (
        "openai-chat",
        "anthropic-messages",
        "tau-bench",
        "tau2-bench",
        "swe-agent",
        "openhands",
        "otel-genai",
    ):
        for f in files:
            account = account_file(f, fmt, _validated_only)
            assert account.records >= 1, (fmt, f)
            assert account.unaccounted == 0, (fmt, f, account)


def _validated_only(item: Any) -> Any:
    return item if isinstance(item, Reject) else len(item.messages)


def test_a_corpus_moved_aside_by_a_killed_import_is_put_back(tmp_path: Path) -> None:
    """Killed between moving the old corpus out and the new one in: the next writer restores."""
    import_paths([FIXTURES / "openai_chat" / "object.json"], tmp_path / "c", progress=False)
    before = (tmp_path / "c" / "manifest.json").read_bytes()
    aside = tmp_path / ".c.old-999999999-x.tmp"
    aside.mkdir()
    (tmp_path / "c").rename(aside / "corpus")
    with pytest.raises(CorpusError, match="--overwrite"):  # it is back, and it is kept
        import_paths([FIXTURES / "openai_chat" / "object.json"], tmp_path / "c", progress=False)
    assert (tmp_path / "c" / "manifest.json").read_bytes() == before
    assert not aside.exists()

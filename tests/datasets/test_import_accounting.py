"""Nothing lost silently: empty sessions are rejects, unknown events are counted and flagged, a
JSON array is read past a malformed element, a bad byte rejects only its session, conversations
that share an id but disagree are split; and for every file, records seen = sessions + rejects +
skipped (by reason), on every fixture and on the public corpora."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ctxreplay.datasets.importers import AmbiguousFormat, detect
from ctxreplay.datasets.info import file_accounts, render_info
from ctxreplay.datasets.ingest import import_paths
from ctxreplay.datasets.store import Corpus

from builders import FIXTURES, corpus_path


def _openai(i: int) -> dict[str, Any]:
    return {"id": f"s{i}", "messages": [{"role": "user", "content": f"q{i}"}, {"role": "assistant", "content": "a"}]}  # fmt: skip


# --- empty sessions -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fmt", "record"),
    [
        ("anthropic-messages", {"id": "e", "system": "You are terse.", "messages": []}),
        ("openai-chat", {"id": "e", "messages": [{"role": "system", "content": "only this"}]}),
        ("openhands", {"instance_id": "e", "instruction": "Do the task.", "history": []}),
        ("tau-bench", {"task_id": 1, "trial": 0, "traj": []}),
    ],
)
def test_empty_sessions_are_rejects(fmt: str, record: dict[str, Any], tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    path.write_text(json.dumps(record) + "\n")
    summary = import_paths([path], tmp_path / "c", fmt=fmt, progress=False)
    assert (summary.sessions, dict(summary.rejected)) == (0, {"empty_session": 1})


def test_empty_tau2_simulation_is_a_reject(tmp_path: Path) -> None:
    doc = json.loads((FIXTURES / "tau2-bench" / "results_small.json").read_text())
    doc["simulations"].append({**doc["simulations"][0], "id": "empty", "messages": []})
    path = tmp_path / "results.json"
    path.write_text(json.dumps(doc))
    before = import_paths([FIXTURES / "tau2-bench" / "results_small.json"], tmp_path / "a", progress=False)  # fmt: skip
    summary = import_paths([path], tmp_path / "c", progress=False)
    assert summary.sessions == before.sessions
    assert summary.rejected["empty_session"] == before.rejected["empty_session"] + 1


# --- unknown event kinds ----------------------------------------------------------------------


def test_unknown_openhands_events_are_counted_flagged_and_shown(tmp_path: Path) -> None:
    rows = [json.loads(line) for line in (FIXTURES / "openhands" / "output_small.jsonl").read_text().splitlines()]  # fmt: skip
    rows[0]["history"].insert(2, {"kind": "HologramEvent", "id": "h1", "payload": "?"})
    rows[0]["history"].append({"kind": "HologramEvent", "id": "h2"})
    path = tmp_path / "output.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    import_paths([path], tmp_path / "c", progress=False)
    corpus = Corpus(tmp_path / "c")
    row = corpus.sessions().filter(source_session_id="inst-a").to_dicts()[0]
    assert "unknown_event_kind" in row["flags"]
    assert json.loads(row["metadata"])["unknown_events"] == {"HologramEvent": 2}
    text = render_info(corpus)
    assert "unknown_event_kind" in text and "does not know" in text


# --- JSON arrays past a malformed element -------------------------------------------------------


@pytest.mark.parametrize(
    ("broken", "sessions"),
    [
        ('{"id": "bad", "messages": [{"role": "user", "content": oops}]}', 19),  # a bad token
        ('{"id": "bad", "messages": [{"role": "user", "content": "x" ]}', 19),  # a lost brace
        ('{"id": "bad", "messages": [{"role": "user", "content": "cut}]}', 19),  # a lost quote
        ('{"id": "bad" "messages": []}', 19),  # a lost comma
        # a brace too many: the element itself is whole (a session), the stray brace a reject
        ('{"id": "bad", "messages": [{"role": "user", "content": "x"}]}}', 20),
    ],
)
@pytest.mark.parametrize("pretty", [True, False])
def test_an_array_is_read_past_a_malformed_element(
    broken: str, sessions: int, pretty: bool, tmp_path: Path
) -> None:
    elements = [json.dumps(_openai(i)) for i in range(20)]
    elements[10] = broken
    path = tmp_path / "sessions.json"
    path.write_text(
        "[\n" + ",\n".join(elements) + "\n]\n" if pretty else "[" + ",".join(elements) + "]"
    )
    summary = import_paths([path], tmp_path / "c", fmt="openai-chat", progress=False)
    assert summary.sessions == sessions  # every good element, the 9 after the broken one too
    assert summary.rejects == 1
    (row,) = Corpus(tmp_path / "c").rejects().to_dicts()
    assert row["json_path"] == ("$[10]" if sessions == 19 else "$[11]")
    assert (b'"bad"' if sessions == 19 else b"}") in row["raw"]
    (source,) = Corpus(tmp_path / "c").manifest["sources"]
    assert source["records"] == 20 + (sessions == 20)


def test_text_after_the_array_is_rejected_not_dropped(tmp_path: Path) -> None:
    path = tmp_path / "sessions.json"
    stray = '{"id": "stray", "messages": []}\n'
    path.write_text(json.dumps([_openai(0), _openai(1)], indent=1) + "\n" + stray)
    summary = import_paths([path], tmp_path / "c", fmt="openai-chat", progress=False)
    assert (summary.sessions, dict(summary.rejected)) == (2, {"invalid_json": 1})
    (row,) = Corpus(tmp_path / "c").rejects().to_dicts()
    assert b"stray" in row["raw"]


# --- encoding errors reject only their session ----------------------------------------------


def _forty_simulations(tmp_path: Path) -> tuple[Path, bytes]:
    doc = json.loads((FIXTURES / "tau2-bench" / "results_small.json").read_text())
    sim = doc["simulations"][0]
    doc["simulations"] = [{**sim, "id": f"sim-{i:02d}"} for i in range(40)]
    data = json.dumps(doc, indent=1).encode()
    at = data.index(b'"content": "', data.index(b'"sim-17"')) + len(b'"content": "')
    return tmp_path / "results.json", data[:at] + b"\xff" + data[at:]


def test_one_bad_byte_rejects_one_tau2_simulation_of_forty(tmp_path: Path) -> None:
    path, data = _forty_simulations(tmp_path)
    path.write_bytes(data)
    assert detect(path) == "tau2-bench"
    summary = import_paths([path], tmp_path / "c", progress=False)
    assert (summary.sessions, dict(summary.rejected)) == (39, {"invalid_utf8": 1})
    (row,) = Corpus(tmp_path / "c").rejects().to_dicts()
    assert row["session_id"] == "sim-17" and row["json_path"].startswith("$.simulations[17]")


def test_a_truncated_tau2_file_keeps_the_simulations_before_the_cut(tmp_path: Path) -> None:
    path, data = _forty_simulations(tmp_path)
    data = data.replace(b"\xff", b"")
    cut = data.index(b'"sim-30"')
    path.write_bytes(data[:cut])
    summary = import_paths([path], tmp_path / "c", fmt="tau2-bench", progress=False)
    assert (summary.sessions, dict(summary.rejected)) == (30, {"truncated": 1})


def test_a_bad_byte_in_one_otlp_span_rejects_that_span(tmp_path: Path) -> None:
    doc = json.loads((FIXTURES / "otel" / "otlp_spans.json").read_text())
    spans = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
    other = json.loads(json.dumps(spans[0]))
    for attr in other["attributes"]:
        if attr["key"] == "gen_ai.conversation.id":
            attr["value"]["stringValue"] = "conv-2"
    spans.append(other)
    data = json.dumps(doc).encode()
    at = data.rindex(b"Fix the failing test.")
    path = tmp_path / "otlp.json"
    path.write_bytes(data[:at] + b"\xfe" + data[at:])
    summary = import_paths([path], tmp_path / "c", progress=False)
    assert dict(summary.rejected) == {"invalid_utf8": 1}
    assert Corpus(tmp_path / "c").sessions()["source_session_id"].to_list() == ["conv-1"]


# --- OTel conversations ---------------------------------------------------------------------------


def _span(start: str, conv: str, inputs: list[str], outputs: list[str]) -> dict[str, Any]:
    def msgs(texts: list[str], first: str) -> list[dict[str, Any]]:
        roles = [first, "assistant" if first == "user" else "user"]
        return [
            {"role": roles[i % 2], "parts": [{"type": "text", "content": t}]}
            for i, t in enumerate(texts)
        ]

    return {
        "name": "chat",
        "start_time": start,
        "attributes": {
            "gen_ai.conversation.id": conv,
            "gen_ai.input.messages": msgs(inputs, "user"),
            "gen_ai.output.messages": msgs(outputs, "assistant"),
        },
    }


def test_unrelated_conversations_sharing_an_id_are_split(tmp_path: Path) -> None:
    rows = [
        _span("1", "dup", ["weather?"], ["sunny"]),
        _span("2", "dup", ["weather?", "sunny", "tomorrow?"], ["rain"]),
        _span("3", "dup", ["translate hi"], ["hola"]),  # another conversation, same id
        _span("4", "dup", ["translate hi", "hola", "and bye?"], ["adios"]),
    ]
    path = tmp_path / "spans.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    summary = import_paths([path], tmp_path / "c", progress=False)
    assert (summary.sessions, summary.rejects) == (2, 0)
    assert summary.skipped == {"in_session": 2}
    corpus = Corpus(tmp_path / "c")
    texts = sorted(
        tuple(m.text for m in corpus.load_session(sid)) for sid in corpus.sessions()["session_id"]
    )
    assert texts == [
        ("translate hi", "hola", "and bye?", "adios"),
        ("weather?", "sunny", "tomorrow?", "rain"),
    ]
    assert all("conversation_split" in f for f in corpus.sessions()["flags"].to_list())
    (source,) = corpus.manifest["sources"]
    assert (source["records"], source["sessions"], source["skipped"]) == (4, 2, {"in_session": 2})


def test_a_rejected_call_flags_its_conversation(tmp_path: Path) -> None:
    good = _span("1", "c", ["a"], ["b"])
    bad = _span("2", "c", ["a", "b", "c"], ["d"])
    bad["attributes"]["gen_ai.input.messages"] = "[{not json"
    path = tmp_path / "spans.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    summary = import_paths([path], tmp_path / "c", progress=False)
    assert (summary.sessions, dict(summary.rejected)) == (1, {"invalid_json": 1})
    row = Corpus(tmp_path / "c").sessions().to_dicts()[0]
    assert "conversation_incomplete" in row["flags"]
    assert json.loads(row["metadata"])["rejected_calls"] == 1


def test_spans_without_model_calls_are_counted(tmp_path: Path) -> None:
    rows = [
        {"name": "http", "attributes": {"http.method": "GET"}},
        {},
        _span("1", "c", ["a"], ["b"]),
    ]
    path = tmp_path / "spans.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    summary = import_paths([path], tmp_path / "c", fmt="otel-genai", progress=False)
    assert summary.sessions == 1
    assert summary.skipped == {"no_model_call": 1, "no_spans": 1}


# --- the accounting, file by file -------------------------------------------------------------


#: formats whose records are units inside a file's JSON values (or not JSON at all)
NESTED_UNITS = frozenset({"otel-genai", "langfuse", "phoenix", "langsmith", "opencode", "goose"})


def _independent_count(path: Path, fmt: str | None) -> int | None:
    """Records of a file, counted here without the importers (None where it takes a parser)."""
    try:
        text = path.read_text()
    except (UnicodeDecodeError, OSError):
        return None
    if fmt is None:
        return 1  # no importer: the file is one record (rejected unknown_format)
    if fmt in NESTED_UNITS:
        return None  # records are spans, observations, runs or rows inside records
    if path.suffix == ".jsonl":
        return sum(1 for line in text.splitlines() if line.strip())
    try:
        value = json.loads(text)
    except ValueError:
        return None
    if fmt == "tau2-bench":
        sims = value.get("simulations") if isinstance(value, dict) else None
        return len(sims) if isinstance(sims, list) and sims else 1
    if fmt == "inspect-ai":  # a .json log: its samples (a .eval archive is not text: None)
        samples = value.get("samples") if isinstance(value, dict) else None
        return len(samples) if isinstance(samples, list) and samples else 1
    if fmt == "gemini-cli" and isinstance(value, list):
        return len(value)  # a checkpoint's turns, or the prompt log's entries
    if fmt in ("swe-agent",) or not isinstance(value, list):
        return 1
    if value and isinstance(value[0], dict) and "role" in value[0]:
        return 1  # a bare message list is one session
    return len(value)


def assert_accounted(out: Path) -> Corpus:
    corpus = Corpus(out)
    frame = file_accounts(corpus.manifest)
    assert frame["balanced"].all(), frame.filter(~frame["balanced"])
    sources = corpus.manifest["sources"]
    assert sum(s["sessions"] for s in sources) == corpus.sessions().height
    assert sum(s["rejects"] for s in sources) == corpus.rejects().height
    for s in sources:
        assert s["records"] == s["sessions"] + s["rejects"] + sum(s["skipped"].values()), s
        expected = _independent_count(Path(s["path"]), s["format"])
        if expected is not None:
            assert s["records"] == expected, s
    assert "every file balances" in render_info(corpus)
    return corpus


FIXTURE_FILES = sorted(str(f.relative_to(FIXTURES)) for f in FIXTURES.rglob("*") if f.is_file())


@pytest.mark.parametrize("name", FIXTURE_FILES)
def test_every_fixture_balances(name: str, tmp_path: Path) -> None:
    path = FIXTURES / name
    try:
        fmt = None if detect(path) else "openai-chat"  # undetectable files: forced, still counted
    except AmbiguousFormat:
        pytest.fail(f"{name} is ambiguous")
    import_paths([path], tmp_path / "c", fmt=fmt, progress=False)
    assert_accounted(tmp_path / "c")


def test_all_fixtures_together_balance(tmp_path: Path) -> None:
    import_paths([FIXTURES], tmp_path / "c", progress=False)
    corpus = assert_accounted(tmp_path / "c")
    not_read = sum(corpus.manifest.get("not_read", {}).values())
    assert len(corpus.manifest["sources"]) + not_read == len(FIXTURE_FILES)


PUBLIC = ["tau-bench", "tau2-bench", "swe-agent", "openhands", "claude-code", "codex-cli", "inspect-ai"]  # fmt: skip


@pytest.mark.corpora
@pytest.mark.parametrize("folder", PUBLIC)
def test_public_corpora_balance(folder: str, tmp_path: Path) -> None:
    path = corpus_path(folder)
    summary = import_paths([path], tmp_path / "c", progress=False)
    corpus = assert_accounted(tmp_path / "c")
    assert summary.records == sum(s["records"] for s in corpus.manifest["sources"])
    assert summary.unaccounted == 0

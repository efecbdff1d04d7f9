"""inspect_ai importer: hand-written ``.json`` and ``.eval`` logs, damaged archives and logs, and
the public logs (one agentic browser sample, two ``.eval`` archives of 30 and 10 samples)."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import pytest

from ctxreplay.datasets.export import export_corpus
from ctxreplay.datasets.importers import detect, get_importer, scores
from ctxreplay.datasets.importers.inspect_ai import ARCHIVE_SCORE, DATA_MIME, LOG_SCORE, usage_of
from ctxreplay.datasets.ingest import import_paths
from ctxreplay.datasets.messages import Message, Part, Session, Usage
from ctxreplay.datasets.rejects import Reject
from ctxreplay.datasets.store import Corpus

from builders import FIXTURES, corpus_path, read_items

FIX = FIXTURES / "inspect-ai"
LOG = FIX / "log.json"
ARCHIVE = FIX / "archive.eval"
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="

# --- the .eval fixture: what archive.eval holds (``write_eval`` builds it) ----------------------

EVAL = {
    "eval_id": "ev-arith",
    "run_id": "run-arith",
    "created": "2025-06-01T09:00:00+00:00",
    "task": "arith",
    "task_id": "task-arith",
    "model": "anthropic/claude-sonnet-4-0",
    "config": {"epochs": 2},
}
HEADER = {"version": 2, "status": "success", "eval": EVAL, "plan": {"steps": []}, "results": {}}
START = {"version": 2, "eval": EVAL, "plan": {"steps": []}}


def _arith(epoch: int) -> dict[str, Any]:
    """Sample 1 of the arith task: a calculator call on epoch 1, a plain answer on epoch 2."""
    user = {"id": f"u{epoch}", "role": "user", "source": "input", "content": "What is 2+2?"}
    if epoch == 2:
        messages = [user, {"id": "x2", "role": "assistant", "content": "4"}]
        events: list[Any] = []
    else:
        messages = [
            user,
            {
                "id": "x1",
                "role": "assistant",
                "content": "",
                "tool_calls": [{"id": "k1", "function": "calc", "arguments": {"expr": "2+2"}}],
            },
            {"id": "r1", "role": "tool", "tool_call_id": "k1", "function": "calc", "content": "4"},
            {"id": "x3", "role": "assistant", "content": [{"type": "text", "text": "It is 4."}]},
        ]
        events = [
            {
                "event": "model",
                "timestamp": "2025-06-01T09:00:01+00:00",
                "completed": "2025-06-01T09:00:02+00:00",
                "tools": [{"name": "calc", "description": "attachment://calc-doc"}],
                "output": {
                    "choices": [{"message": {"id": "x1"}}],
                    "usage": {"input_tokens": 10, "output_tokens": 3, "total_tokens": 13},
                },
            }
        ]
    return {
        "id": 1,
        "epoch": epoch,
        "messages": messages,
        "scores": {"match": {"value": "C" if epoch == 1 else "I", "answer": "4"}},
        "events": events,
        "attachments": {"calc-doc": "Evaluate an arithmetic expression."},
    }


def write_eval(path: Path, members: dict[str, Any], stored: bool = False) -> Path:
    """An ``.eval`` archive of ``members`` (JSON values, or bytes written as they are)."""
    method = zipfile.ZIP_STORED if stored else zipfile.ZIP_DEFLATED
    with zipfile.ZipFile(path, "w", method) as archive:
        for name, value in members.items():
            data = value if isinstance(value, bytes) else json.dumps(value, indent=2).encode()
            archive.writestr(zipfile.ZipInfo(name, date_time=(2025, 6, 1, 9, 0, 0)), data)
    return path


def arith_members() -> dict[str, Any]:
    return {
        "_journal/start.json": START,
        "samples/1_epoch_1.json": _arith(1),
        "samples/1_epoch_2.json": _arith(2),
        "summaries.json": [{"id": 1, "epoch": 1}, {"id": 1, "epoch": 2}],
        "reductions.json": [],
        "header.json": HEADER,
    }


def _shape(m: Message) -> tuple[Any, ...]:
    return (m.role, m.parts, m.is_error, m.usage, m.timestamp, m.flags)


def _by_id(sessions: list[Session]) -> dict[str, Session]:
    return {s.source_session_id: s for s in sessions}


# --- the .json fixture ---------------------------------------------------------------------------


def test_fixtures_are_detected_by_inspect_ai_alone() -> None:
    assert scores(LOG) == [("inspect-ai", LOG_SCORE)]
    assert scores(ARCHIVE) == [("inspect-ai", ARCHIVE_SCORE)]
    assert detect(LOG) == detect(ARCHIVE) == "inspect-ai"


def test_log_sample_becomes_exact_messages() -> None:
    sessions, rejects = read_items("inspect-ai", LOG)
    assert rejects == []
    s = _by_id(sessions)["weather/epoch-1"]
    at = "2025-05-01T10:00:"
    assert [_shape(m) for m in s.messages] == [
        ("system", (Part.text("You are a weather agent."),), False, None, None, ()),
        ("user", (Part.text("What is the weather in Oslo and Paris?"),), False, None, None, ()),
        (
            "assistant",
            (
                Part("reasoning", content="Look both cities up."),
                Part.text("Checking both cities."),
                Part.call("c1", "get_weather", '{"city":"Oslo"}'),
                Part.call("c2", "get_weather", '{"city":"Paris","unit":"c"}'),
            ),
            False,
            Usage(120, None, 30),
            f"{at}02+00:00",
            (),
        ),
        (
            "tool",
            (Part.response("c1", "Oslo: 3C, snow", "get_weather"),),
            False,
            None,
            f"{at}02.500000+00:00",
            (),
        ),
        (  # an error result: what inspect's providers send the model
            "tool",
            (Part.response("c2", "Error: Command timed out before completing.", "get_weather"),),
            True,
            None,
            f"{at}32+00:00",
            (),
        ),
        (
            "assistant",
            (Part.call("c3", "radar", '{"city":"Oslo"}'),),
            False,
            Usage(200, 100, 10),  # OpenAI-style: input includes the cache read
            f"{at}34+00:00",
            (),
        ),
        (  # the image was condensed into an attachment: resolved
            "tool",
            (
                Part.response("c3", "Radar for Oslo:", "radar"),
                Part("blob", content=PNG, mime_type="image/png", modality="image"),
            ),
            False,
            None,
            f"{at}35+00:00",
            (),
        ),
        (
            "assistant",
            (Part.text("Oslo has 3C and snow; Paris timed out."),),
            False,
            Usage(350, 250, 20),  # Anthropic-style: cache reads and writes added back
            f"{at}37+00:00",
            (),
        ),
    ]
    assert [m.source_path for m in s.messages][-1] == "$.samples[0].messages[7]"
    assert s.workload == "inspect-ai/weather_task"
    assert s.source_record == 0


def test_log_metadata() -> None:
    sessions, _ = read_items("inspect-ai", LOG)
    meta = _by_id(sessions)["weather/epoch-1"].metadata
    header = {k: meta[k] for k in ("task", "task_id", "run_id", "eval_id", "created", "model")}
    assert header == {
        "task": "weather_task",
        "task_id": "task-1",
        "run_id": "run-1",
        "eval_id": "ev-1",
        "created": "2025-05-01T10:00:00+00:00",
        "model": "openai/gpt-4o-mini",
    }
    assert (meta["status"], meta["sample_id"], meta["epoch"]) == ("success", "weather", 1)
    assert meta["output_model"] == "gpt-4o-mini-2024-07-18"
    assert meta["target"] == "snow"
    score = meta["scores"]["includes"]
    assert (score["value"], score["answer"]) == ("C", "Oslo has 3C and snow; Paris timed out.")
    assert score["explanation"].startswith("The answer mentions snow.")
    assert len(score["explanation"]) < 600  # 1,040 characters, clipped
    assert meta["sample_metadata"] == {"difficulty": "easy"}
    assert meta["model_usage"]["anthropic/claude-sonnet-4-0"]["input_tokens_cache_write"] == 50
    assert (meta["total_time"], meta["working_time"]) == (39.5, 38.25)
    # four requests: three made the agent's messages, one was the scorer's grader
    assert (meta["model_calls"], meta["model_calls_matched"]) == (4, 3)
    assert [t["name"] for t in meta["tools"]] == ["get_weather", "radar"]
    assert meta["tools"][0]["description"].startswith("Get the current weather")  # resolved
    assert meta["tools"][0]["parameters"]["required"] == ["city"]
    assert meta["tool_errors"] == {"timeout": 1}
    assert meta["attachments_resolved"] == 2
    assert "unresolved_attachments" not in meta and "log_header" not in meta


def test_epochs_are_separate_sessions_with_their_own_scores() -> None:
    sessions, _ = read_items("inspect-ai", LOG)
    assert [s.source_session_id for s in sessions] == [
        "weather/epoch-1",
        "weather/epoch-2",
        "2/epoch-1",
    ]
    assert len({s.key for s in sessions}) == 3
    assert all("run-1" in (s.key or "") and "task-1" in (s.key or "") for s in sessions)
    second = _by_id(sessions)["weather/epoch-2"]
    assert second.metadata["scores"] == {
        "includes": {
            "value": "I",
            "answer": "I cannot check the weather right now.",
            "explanation": "No snow.",
        }
    }
    assert second.metadata["epoch"] == 2


def test_redacted_reasoning_data_and_reasoning_usage() -> None:
    sessions, _ = read_items("inspect-ai", LOG)
    s = _by_id(sessions)["weather/epoch-2"]
    assert [_shape(m) for m in s.messages] == [
        ("user", (Part.text("What is the weather in Oslo and Paris?"),), False, None, None, ()),
        (
            "assistant",
            (
                Part("reasoning", content="ZW5jcnlwdGVkLXJlYXNvbmluZw==", name="redacted"),
                Part(
                    "reasoning", content="Thought about which city to check first.", name="summary"
                ),
                Part(
                    "file",
                    content='{"kind": "compaction", "blob": "abc"}',
                    mime_type=DATA_MIME,
                    modality="data",
                ),
                Part.text("I cannot check the weather right now."),
            ),
            False,
            Usage(10, None, 35),  # Google-style: reasoning outside output_tokens, added back
            "2025-05-01T10:01:04+00:00",
            (),
        ),
    ]
    assert (s.metadata["redacted_reasoning"], s.metadata["data_parts"]) == (1, 1)
    assert "tools" not in s.metadata  # its request carried no tools


def test_image_url_server_tool_and_sample_error() -> None:
    sessions, _ = read_items("inspect-ai", LOG)
    s = _by_id(sessions)["2/epoch-1"]
    assert [_shape(m) for m in s.messages] == [
        (
            "user",
            (
                Part.text("Describe this picture."),
                Part("uri", uri="https://example.com/cat.png", modality="image"),
            ),
            False,
            None,
            None,
            (),
        ),
        (  # a server-side web search: its call and its result, in the assistant message
            "assistant",
            (
                Part.call("ws1", "web_search", '{"query":"cat picture"}'),
                Part.response("ws1", "Cats are small mammals.", "web_search"),
                Part.text("A cat sitting on a mat."),
            ),
            False,
            None,
            None,
            (),
        ),
    ]
    meta = s.metadata
    assert meta["sample_id"] == 2 and meta["target"] == ["a cat", "cat"]
    assert meta["error"] == "LimitExceeded: message limit of 2 reached"
    assert meta["limit"] == {"type": "message", "limit": 2}
    assert meta["model_calls"] == 0 and "model_calls_matched" not in meta


def test_usage_rules() -> None:
    assert usage_of({"input_tokens": 5, "output_tokens": 2, "total_tokens": 7}) == Usage(5, None, 2)
    # the total matches no sum: the recorded numbers are kept
    assert usage_of({"input_tokens": 5, "output_tokens": 2, "total_tokens": 99}) == Usage(
        5, None, 2
    )
    both = {
        "input_tokens": 5,
        "output_tokens": 2,
        "total_tokens": 20,
        "input_tokens_cache_read": 4,
        "input_tokens_cache_write": 1,
        "reasoning_tokens": 8,
    }
    assert usage_of(both) == Usage(10, 4, 10)
    assert usage_of({"input_tokens": 1.5, "output_tokens": 2}) is None
    assert usage_of({"total_tokens": 3}) is None


# --- damage in .json logs -------------------------------------------------------------------------


def _log() -> dict[str, Any]:
    return json.loads(LOG.read_text())


def test_a_bad_sample_rejects_only_itself(tmp_path: Path) -> None:
    log = _log()
    log["samples"][1]["messages"] = "lost"
    path = tmp_path / "log.json"
    path.write_text(json.dumps(log))
    importer = get_importer("inspect-ai")
    items = list(importer.read(path))
    sessions = [i for i in items if isinstance(i, Session)]
    (reject,) = [i for i in items if isinstance(i, Reject)]
    assert [s.source_session_id for s in sessions] == ["weather/epoch-1", "2/epoch-1"]
    assert (reject.reason, reject.json_path, reject.record) == (
        "wrong_type",
        "$.samples[1].messages",
        1,
    )
    assert json.loads(reject.raw) == log["samples"][1]
    assert importer.tally.seen == 3


def test_bad_bytes_reject_their_sample_and_a_cut_log_keeps_what_came_before(tmp_path: Path) -> None:
    text = LOG.read_bytes()
    at = text.index(b"I cannot check the weather right now.")
    path = tmp_path / "utf8.json"
    path.write_bytes(text[:at] + b"\xff" + text[at:])
    sessions, rejects = read_items("inspect-ai", path)
    assert [s.source_session_id for s in sessions] == ["weather/epoch-1", "2/epoch-1"]
    assert [(r.reason, r.record) for r in rejects] == [("invalid_utf8", 1)]
    assert (rejects[0].json_path or "").startswith("$.samples[1].")
    cut = tmp_path / "cut.json"
    cut.write_bytes(text[: text.index(b'"u-cat-1"')])
    sessions, rejects = read_items("inspect-ai", cut)
    assert [s.source_session_id for s in sessions] == ["weather/epoch-1", "weather/epoch-2"]
    assert [(r.reason, r.json_path) for r in rejects] == [("truncated", "$.samples[2]")]


def test_an_unreadable_header_field_is_left_out_and_said(tmp_path: Path) -> None:
    log = _log()
    log["samples"][0]["messages"][6]["content"][1]["image"] = "attachment://gone"
    text = json.dumps(log).encode()
    path = tmp_path / "log.json"
    path.write_bytes(text.replace(b'"task": "weather_task"', b'"task": "weather\xff_task"'))
    sessions, rejects = read_items("inspect-ai", path)
    assert rejects == [] and len(sessions) == 3
    meta = sessions[0].metadata
    assert meta["log_header"] == "task is not UTF-8"
    assert "task" not in meta and meta["run_id"] == "run-1"
    assert sessions[0].workload == "inspect-ai"
    # a reference its sample's attachments do not hold stays as written, counted
    assert sessions[0].messages[6].parts[1] == Part(
        "uri", uri="attachment://gone", modality="image"
    )
    assert meta["unresolved_attachments"] == 1


def test_header_only_logs_are_rejected_saying_why(tmp_path: Path) -> None:
    log = _log()
    del log["samples"]
    log["status"] = "started"
    path = tmp_path / "started.json"
    path.write_text(json.dumps(log))
    assert detect(path) == "inspect-ai"
    summary = import_paths([path], tmp_path / "c", progress=False)
    assert (summary.records, summary.sessions, dict(summary.rejected)) == (
        1,
        0,
        {"empty_session": 1},
    )
    (row,) = Corpus(tmp_path / "c").rejects().to_dicts()
    assert "no samples (status 'started')" in row["detail"]
    archive = write_eval(
        tmp_path / "started.eval", {"header.json": {**HEADER, "status": "started"}}
    )
    _, rejects = read_items("inspect-ai", archive)
    assert [(r.reason, r.source_location) for r in rejects] == [("empty_session", str(archive))]
    assert "no samples (status 'started')" in rejects[0].detail
    assert json.loads(rejects[0].raw)["status"] == "started"


def test_words_in_message_text_never_change_the_format(tmp_path: Path) -> None:
    def salt(v: Any) -> Any:
        if isinstance(v, dict):
            return {k: salt(x) for k, x in v.items()}
        if isinstance(v, list):
            return [salt(x) for x in v]
        if isinstance(v, str) and " " in v:
            return v + ' "simulations": [], "resourceSpans": [], "traj": [], "kind": "ActionEvent"'
        return v

    path = tmp_path / "salted.json"
    path.write_text(json.dumps(salt(_log())))
    assert detect(path) == "inspect-ai"


# --- .eval archives -------------------------------------------------------------------------------


def test_committed_archive_holds_what_write_eval_builds() -> None:
    with zipfile.ZipFile(ARCHIVE) as archive:
        held = {n: json.loads(archive.read(n)) for n in archive.namelist()}
    assert held == json.loads(json.dumps(arith_members()))


def test_archive_samples_become_sessions() -> None:
    importer = get_importer("inspect-ai")
    items = list(importer.read(ARCHIVE))
    assert all(isinstance(i, Session) for i in items)
    sessions = [i for i in items if isinstance(i, Session)]
    assert importer.tally.seen == 2
    one, two = sessions
    assert (one.source_session_id, two.source_session_id) == ("1/epoch-1", "1/epoch-2")
    assert [_shape(m) for m in one.messages] == [
        ("user", (Part.text("What is 2+2?"),), False, None, None, ()),
        (
            "assistant",
            (Part.call("k1", "calc", '{"expr":"2+2"}'),),
            False,
            Usage(10, None, 3),
            "2025-06-01T09:00:02+00:00",
            (),
        ),
        ("tool", (Part.response("k1", "4", "calc"),), False, None, None, ()),
        ("assistant", (Part.text("It is 4."),), False, None, None, ()),
    ]
    assert [_shape(m) for m in two.messages] == [
        ("user", (Part.text("What is 2+2?"),), False, None, None, ()),
        ("assistant", (Part.text("4"),), False, None, None, ()),
    ]
    assert one.messages[1].source_path == "$.messages[1]"
    assert one.source_location == str(ARCHIVE)
    assert one.metadata["member"] == "samples/1_epoch_1.json"
    assert one.metadata["tools"] == [
        {"name": "calc", "description": "Evaluate an arithmetic expression."}
    ]
    assert (one.metadata["task"], one.metadata["run_id"]) == ("arith", "run-arith")
    assert (one.metadata["scores"], two.metadata["scores"]) == (
        {"match": {"value": "C", "answer": "4"}},
        {"match": {"value": "I", "answer": "4"}},
    )
    assert one.workload == "inspect-ai/arith"


def test_a_running_or_crashed_archive_reads_its_journal_header(tmp_path: Path) -> None:
    members = arith_members()
    del members["header.json"]
    sessions, rejects = read_items("inspect-ai", write_eval(tmp_path / "run.eval", members))
    assert rejects == [] and len(sessions) == 2
    assert sessions[0].metadata["log_header"] == "from _journal/start.json"
    assert sessions[0].metadata["task"] == "arith"
    del members["_journal/start.json"]
    sessions, rejects = read_items("inspect-ai", write_eval(tmp_path / "bare.eval", members))
    assert rejects == [] and len(sessions) == 2
    assert sessions[0].metadata["log_header"] == "missing"
    assert "task" not in sessions[0].metadata and sessions[0].workload == "inspect-ai"


def test_bad_members_are_rejects_naming_archive_and_member(tmp_path: Path) -> None:
    cut = b'{"id": 2, "epoch": 1, "messages": [{"role": "user", "content": "hi"'
    odd = {
        "id": 3,
        "epoch": 1,
        "messages": [{"role": "user", "content": "a"}, {"role": "robot", "content": "b"}],
    }
    bad_bytes = b'{"id": 4, "epoch": 1, "messages": [{"role": "user", "content": "caf\xe9"}]}'
    members = {
        "header.json": HEADER,
        "samples/1_epoch_1.json": _arith(1),
        "samples/2_epoch_1.json": cut,
        "samples/3_epoch_1.json": odd,
        "samples/4_epoch_1.json": bad_bytes,
    }
    path = write_eval(tmp_path / "bad.eval", members)
    importer = get_importer("inspect-ai")
    items = list(importer.read(path))
    sessions = [i for i in items if isinstance(i, Session)]
    rejects = [i for i in items if isinstance(i, Reject)]
    assert [s.source_session_id for s in sessions] == ["1/epoch-1"]
    assert [(r.source_location, r.record, r.reason, r.json_path) for r in rejects] == [
        (f"{path}::samples/2_epoch_1.json", 1, "truncated", "$"),
        (f"{path}::samples/3_epoch_1.json", 2, "unknown_role", "$.messages[1].role"),
        (f"{path}::samples/4_epoch_1.json", 3, "invalid_utf8", "$.messages[0].content"),
    ]
    assert rejects[0].raw == cut  # the member's exact bytes
    assert rejects[2].raw == bad_bytes
    assert json.loads(rejects[1].raw) == odd
    assert rejects[1].session_id == "3"
    assert importer.tally.seen == 4


def test_damaged_archives_are_rejects_not_crashes(tmp_path: Path) -> None:
    data = ARCHIVE.read_bytes()
    cases = {"cut.eval": data[: len(data) // 2], "text.eval": b"not an archive at all\n"}
    for name, body in cases.items():
        (tmp_path / name).write_bytes(body)
    stored = write_eval(tmp_path / "crc.eval", arith_members(), stored=True)
    raw = stored.read_bytes()
    at = raw.index(b'"What is 2+2?"', raw.index(b"samples/1_epoch_2.json"))
    stored.write_bytes(raw[:at] + b"'" + raw[at + 1 :])  # one byte of epoch 2 changed: CRC fails
    summary = import_paths(sorted(tmp_path.glob("*.eval")), tmp_path / "c", progress=False)
    corpus = Corpus(tmp_path / "c")
    rejects = {(r["source_location"], r["reason"]): r for r in corpus.rejects().to_dicts()}
    assert set(rejects) == {
        (str(tmp_path / "cut.eval"), "truncated"),
        (str(tmp_path / "text.eval"), "unreadable_file"),
        (f"{stored}::samples/1_epoch_2.json", "unreadable_file"),
    }
    crc = rejects[f"{stored}::samples/1_epoch_2.json", "unreadable_file"]
    assert "CRC" in crc["detail"]
    assert crc["raw"].startswith(b"{") and b"'What is 2+2?\"" in crc["raw"]  # the bytes as stored
    assert rejects[str(tmp_path / "cut.eval"), "truncated"]["raw"] == cases["cut.eval"]
    # the intact member of the damaged archive still imports
    assert corpus.sessions()["source_session_id"].to_list() == ["1/epoch-1"]
    assert (summary.records, summary.sessions, summary.rejects) == (4, 1, 3)


def test_import_of_the_fixture_folder_reads_both_kinds(tmp_path: Path) -> None:
    summary = import_paths([FIX], tmp_path / "c", progress=False)
    assert (summary.records, summary.sessions, summary.rejects) == (5, 5, 0)
    assert summary.by_format == {"inspect-ai": 5}
    rows = Corpus(tmp_path / "c").sessions().sort("source_session_id").to_dicts()
    assert [
        (r["source_session_id"], r["n_messages"], r["n_tool_calls"], r["n_tool_results"])
        for r in rows
    ] == [
        ("1/epoch-1", 4, 1, 1),
        ("1/epoch-2", 2, 0, 0),
        ("2/epoch-1", 2, 1, 1),
        ("weather/epoch-1", 8, 3, 3),
        ("weather/epoch-2", 2, 0, 0),
    ]


def test_export_and_reimport_give_the_same_messages(tmp_path: Path) -> None:
    import_paths([FIX], tmp_path / "a", progress=False)
    assert export_corpus(tmp_path / "a", tmp_path / "a.jsonl") == 5
    second = import_paths([tmp_path / "a.jsonl"], tmp_path / "b", fmt="openai-chat", progress=False)
    assert (second.sessions, second.rejects) == (5, 0)
    a, b = Corpus(tmp_path / "a"), Corpus(tmp_path / "b")
    columns = [
        "session_id",
        "seq",
        "role",
        "parts",
        "is_error",
        "tokens",
        "image_count",
        "file_count",
        "usage_prompt_tokens",
        "usage_cached_tokens",
        "usage_completion_tokens",
        "timestamp",
        "flags",
    ]
    assert (
        a.messages()
        .select(columns)
        .sort(["session_id", "seq"])
        .equals(b.messages().select(columns).sort(["session_id", "seq"]))
    )
    meta = ["session_id", "source_session_id", "workload", "metadata"]
    assert (
        a.sessions()
        .select(meta)
        .sort("session_id")
        .equals(b.sessions().select(meta).sort("session_id"))
    )


# --- the public logs ------------------------------------------------------------------------------


def _expected(sample: dict[str, Any]) -> dict[str, Any]:
    """What a sample should give, counted from its JSON with nothing but ``json``."""
    messages = sample["messages"]
    items = [c for m in messages if isinstance(m["content"], list) for c in m["content"]]
    ids = {m.get("id") for m in messages if m["role"] == "assistant"}
    matched = sum(
        1
        for e in sample["events"]
        if e["event"] == "model" and e["output"]["choices"][0]["message"].get("id") in ids
    )
    return {
        "roles": [m["role"] for m in messages],
        "calls": [c["id"] for m in messages for c in m.get("tool_calls") or []],
        "results": [m["tool_call_id"] for m in messages if m["role"] == "tool"],
        "reasoning": sum(1 for c in items if c["type"] == "reasoning"),
        "usage": matched,
    }


def _got(s: Session) -> dict[str, Any]:
    return {
        "roles": [m.role for m in s.messages],
        "calls": [p.id for m in s.messages for p in m.calls],
        "results": [p.id for m in s.messages for p in m.responses],
        "reasoning": sum(1 for m in s.messages for p in m.parts if p.type == "reasoning"),
        "usage": sum(1 for m in s.messages if m.usage is not None),
    }


@pytest.mark.corpora
def test_real_browser_log() -> None:
    path = corpus_path(
        "inspect-ai",
        "UKGovernmentBEIS",
        "inspect_ai",
        "tests",
        "analysis",
        "test_logs",
        "2025-05-12T20-27-36-04-00_browser.json",
    )
    assert detect(path) == "inspect-ai"
    (sample,) = json.loads(path.read_text())["samples"]
    (s,), rejects = read_items("inspect-ai", path)
    assert rejects == []
    assert _got(s) == _expected(sample)
    assert len(s.messages) == 10 and len(_got(s)["calls"]) == 4
    # each result's body is the recorded content, and each usage the event's
    bodies = [m["content"] for m in sample["messages"] if m["role"] == "tool"]
    assert [p.content for m in s.messages for p in m.responses] == bodies
    events = {
        e["output"]["choices"][0]["message"]["id"]: e["output"]["usage"]
        for e in sample["events"]
        if e["event"] == "model"
    }
    recorded = [events[m["id"]] for m in sample["messages"] if m["role"] == "assistant"]
    assert [
        (m.usage.prompt_tokens, m.usage.cached_tokens, m.usage.completion_tokens)
        for m in s.messages
        if m.usage is not None
    ] == [(u["input_tokens"], u["input_tokens_cache_read"], u["output_tokens"]) for u in recorded]
    tools = next(e["tools"] for e in sample["events"] if e["event"] == "model")
    assert not any(t["description"].startswith("attachment://") for t in tools)
    assert s.metadata["tools"] == [
        {k: t[k] for k in ("name", "description", "parameters")} for t in tools
    ]
    assert s.metadata["scores"]["includes"]["value"] == "C"


@pytest.mark.corpora
def test_real_eval_archives(tmp_path: Path) -> None:
    folder = corpus_path("inspect-ai")
    archives = sorted(folder.rglob("*.eval"))
    assert len(archives) == 2
    expected: dict[tuple[str, str], dict[str, Any]] = {}
    for archive in archives:
        with zipfile.ZipFile(archive) as z:
            task = json.loads(z.read("header.json"))["eval"]["task"]
            for name in z.namelist():
                if name.startswith("samples/"):
                    sample = json.loads(z.read(name))
                    expected[task, f"{sample['id']}/epoch-{sample['epoch']}"] = _expected(sample)
    got: dict[tuple[str, str], dict[str, Any]] = {}
    for archive in archives:
        assert detect(archive) == "inspect-ai"
        sessions, rejects = read_items("inspect-ai", archive)
        assert rejects == []
        got.update({(s.metadata["task"], s.source_session_id): _got(s) for s in sessions})
    assert got == expected
    assert len(got) == 40
    # the whole folder through the import: the .json log and both archives
    summary = import_paths([folder], tmp_path / "c", progress=False)
    assert (summary.records, summary.sessions, summary.rejects) == (41, 41, 0)
    messages = sum(len(e["roles"]) for e in expected.values()) + 10
    assert summary.messages == messages

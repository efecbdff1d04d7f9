"""Cline, Roo Code and Kilo Code task folders: hand-written fixtures of the three variants.

The shapes come from the agents' sources: Cline (cline/cline) ``src/core/storage/disk.ts``
(``GlobalFileNames``: api_conversation_history.json, ui_messages.json, task_metadata.json,
context_history.json), ``src/shared/ExtensionMessage.ts`` (``ClineMessage``, ``ClineApiReqInfo``:
tokensIn/tokensOut/cacheWrites/cacheReads/cost, ``conversationHistoryDeletedRange``),
``src/core/context/context-tracking/ContextTrackerTypes.ts`` (``TaskMetadata``), the
``ContextManager``'s context_history serialisation, and its tools written as XML in the text with
``[tool for 'x'] Result:`` answers; Roo Code (RooCodeInc/Roo-Code)
``src/core/task-persistence/apiMessages.ts`` (``ts``, ``condenseParent``/``condenseId``/
``isSummary``, ``truncationParent``/``truncationId``/``isTruncationMarker``),
``src/core/condense/index.ts`` (the summary: a synthetic reasoning block, the summary text, the
kept ``tool_use`` blocks; inserted before the kept messages, ``ts`` one less than the first
kept), the sliding-window marker ``[Sliding window truncation: N messages hidden to reduce
context]``, ``packages/types`` ``contextCondense``/``contextTruncation`` UI events and
``apiProtocol`` in ``api_req_started``, ``src/shared/globalFileNames.ts`` (history_item.json),
``rooMessage.ts`` (the ``{version: 2, messages}`` AI SDK format); Kilo Code (Kilo-Org/kilocode)
is a Roo Code fork with the same files, under ``kilocode.kilo-code``.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

from test_export_roundtrip import assert_same_tables, roundtrip

from ctxreplay.datasets.cases import build_cases, parse_trigger, prefix_of
from ctxreplay.datasets.importers import CEDED_SCORE, detect, get_importer, scores
from ctxreplay.datasets.importers.cline import TASK_FOLDER_SCORE
from ctxreplay.datasets.importers.sniffing import SNIFF_BYTES
from ctxreplay.datasets.ingest import import_paths
from ctxreplay.datasets.messages import ENCRYPTED_REASONING_MIME, Part, Usage
from ctxreplay.datasets.rejects import Reject
from ctxreplay.datasets.store import Corpus

from builders import FIXTURES, read_items

FMT = "cline"
CL = FIXTURES / "cline"
CLINE = CL / "saoudrizwan.claude-dev" / "tasks" / "1718000000000"
ROO = CL / "rooveterinaryinc.roo-cline" / "tasks" / "0a7c1e52-6b1f-4f0e-9d2b-3c4e5f6a7b8c"
KILO = CL / "kilocode.kilo-code" / "tasks" / "5d2f8e10-1c3b-4a7d-8e9f-0a1b2c3d4e5f"
HISTORY = "api_conversation_history.json"
ENC = ENCRYPTED_REASONING_MIME
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
#: UI events of each fixture's ui_messages.json (each a record skipped ``task_sidecar``)
UI_EVENTS = {CLINE: 11, ROO: 23, KILO: 12}


def _one(folder: Path):
    (s,), rejects = read_items(FMT, folder / HISTORY)
    assert rejects == []
    return s


def _shape(m) -> tuple:
    return (m.role, tuple(p.type for p in m.parts), m.flags)


# --- detection ---------------------------------------------------------------------------------


def test_every_file_of_a_task_folder_is_detected_as_cline() -> None:
    files = sorted(f for f in CL.rglob("*") if f.is_file())
    assert len(files) == 11
    for f in files:
        assert detect(f) == FMT, f


def test_other_formats_fixtures_are_not_taken() -> None:
    sniffer = get_importer(FMT)
    for f in sorted(FIXTURES.rglob("*")):
        if f.is_file() and CL not in f.parents:
            assert sniffer.sniff(f, f.read_bytes()[:SNIFF_BYTES]) == 0.0, f
            assert detect(f) != FMT, f


def test_a_history_alone_keeps_the_format_it_had(tmp_path: Path) -> None:
    """Without its siblings a plain message array is Anthropic's; Roo's keys still name it."""
    alone = tmp_path / "export" / HISTORY
    alone.parent.mkdir()
    shutil.copy(CLINE / HISTORY, alone)
    assert detect(alone) == "anthropic-messages"
    assert get_importer(FMT).sniff(alone, alone.read_bytes()) == 0.0
    shutil.copy(ROO / HISTORY, alone)
    assert detect(alone) == FMT  # condenseParent, isSummary, isTruncationMarker
    beside = tmp_path / "task"
    shutil.copytree(CLINE, beside)
    assert get_importer("anthropic-messages").sniff(beside / HISTORY, b"") == 0.0  # empty head
    head = (beside / HISTORY).read_bytes()
    assert get_importer(FMT).sniff(beside / HISTORY, head) == TASK_FOLDER_SCORE
    # by its shape the file is Anthropic's too; cline refines that format, so it steps back
    assert get_importer("anthropic-messages").sniff(beside / HISTORY, head) > CEDED_SCORE
    assert dict(scores(beside / HISTORY))["anthropic-messages"] == CEDED_SCORE


# --- Cline: XML tools in text, usage by order, a truncation range -------------------------------


def test_cline_task_keeps_textual_tools_as_text() -> None:
    s = _one(CLINE)
    assert (s.source_session_id, s.key, s.workload) == (
        "1718000000000",
        "cline/1718000000000",
        "cline",
    )
    assert [_shape(m) for m in s.messages] == [
        ("user", ("text", "text"), ()),
        ("assistant", ("text",), ()),
        ("user", ("text", "text", "text"), ()),
        ("assistant", ("text",), ()),
        ("user", ("text", "text", "text", "blob"), ()),
        ("assistant", ("text",), ()),
    ]
    read, result = s.messages[1], s.messages[2]
    assert read.text == (
        "<thinking>\nI need to see how cli.py parses its arguments.\n</thinking>\n\n"
        "<read_file>\n<path>cli.py</path>\n</read_file>"
    )
    assert result.parts[0] == Part.text("[read_file for 'cli.py'] Result:")
    assert s.messages[4].parts[3] == Part(
        "blob", content=PNG, mime_type="image/png", modality="image"
    )
    assert all(not m.calls and not m.responses for m in s.messages)  # no call made up
    # no ts in the history: the three requests pair with the three answers in order; Cline's
    # tokensIn leaves cached input out (4 < 9800 cache writes), so the prompt adds it back
    assert [m.usage for m in s.messages] == [
        None, Usage(9804, 0, 85), None, Usage(10223, 9800, 210), None, Usage(11430, 10220, 40),
    ]  # fmt: skip
    assert [m.timestamp for m in s.messages] == [None] * 6


def test_cline_task_metadata() -> None:
    s = _one(CLINE)
    meta = dict(s.metadata)
    assert meta == {
        "variant": "cline",
        "variant_evidence": "path",
        "task_id": "1718000000000",
        "models": ["claude-3-5-sonnet-20241022"],
        "providers": ["anthropic"],
        "modes": ["act"],
        "files_in_context": 2,
        "files_in_context_paths": ["cli.py"],
        "files_in_context_sources": {"cline_edited": 1, "read_tool": 1},
        "versions": ["3.17.9"],
        "hosts": ["Visual Studio Code 1.95.3"],
        "os": ["linux 6.8.0-45-generic x64"],
        "context_edited_messages": [2],
        "requests": 3,
        "token_totals": {"tokens_in": 1217, "tokens_out": 335, "cache_writes": 10220, "cache_reads": 20020},
        "token_convention": "input_excludes_cache",
        "usage_messages": 3,
        "cost_usd": 0.053068,
        "deleted_ranges": [{"range": [2, 3], "timestamp": "2024-06-10T06:13:29.600000Z"}],
        "ui_messages": 11,
        "ui_events": {
            "ask:completion_result": 1, "ask:tool": 1, "say:api_req_started": 3,
            "say:checkpoint_created": 1, "say:completion_result": 1, "say:task": 1,
            "say:text": 1, "say:tool": 1, "say:user_feedback": 1,
        },
        "sidecars": ["ui_messages.json", "task_metadata.json", "context_history.json"],
        "records": [0, 1, 2, 3, 4, 5],  # the array elements the session is made of
    }  # fmt: skip


def test_the_variant_without_its_extension_id_comes_from_the_files(tmp_path: Path) -> None:
    for n, (source, variant) in enumerate(
        ((CLINE, "cline"), (ROO, "roo-code"), (KILO, "roo-code"))
    ):
        copy = tmp_path / f"copy{n}" / source.name
        shutil.copytree(source, copy)
        s = _one(copy)
        assert (s.metadata["variant"], s.metadata["variant_evidence"]) == (variant, "structure")
        assert s.key == f"{variant}/{source.name}"
    bare = tmp_path / "bare"
    bare.mkdir()
    shutil.copy(CLINE / HISTORY, bare / HISTORY)
    s = _one(bare)
    assert (s.metadata["variant"], s.metadata["variant_evidence"]) == ("cline", "default")
    assert "ui_messages" not in s.metadata and s.messages[1].usage is None


# --- Roo Code: condense and sliding-window truncation ------------------------------------------


def test_roo_condense_and_truncation_are_recorded_compactions() -> None:
    s = _one(ROO)
    assert s.key == "roo-code/0a7c1e52-6b1f-4f0e-9d2b-3c4e5f6a7b8c"
    assert [_shape(m) for m in s.messages] == [
        ("user", ("text", "text"), ()),
        ("assistant", ("reasoning", "tool_call"), ()),  # condensed: kept, visible
        ("user", ("tool_call_response",), ()),
        ("assistant", ("text", "tool_call"), ()),
        ("user", ("tool_call_response",), ()),
        ("assistant", ("text",), ()),
        ("assistant", ("reasoning", "text"), ("compaction_summary",)),  # isSummary
        ("user", ("text",), ()),  # truncated: kept, visible
        ("assistant", ("tool_call",), ()),
        ("user", ("tool_call_response",), ()),
        ("user", ("text",), ("compaction_summary",)),  # isTruncationMarker
        ("assistant", ("text",), ()),
        ("user", ("text",), ()),
        ("assistant", ("tool_call",), ()),
        ("user", ("tool_call_response",), ()),
        ("assistant", ("tool_call",), ("unanswered_tool_call",)),
    ]
    assert all(m.visible for m in s.messages)
    assert s.messages[1].parts == (
        Part("reasoning", content="Read settings.py first."),
        Part.call("toolu_01", "read_file", {"path": "settings.py"}),
    )
    assert s.messages[2].parts == (
        Part.response("toolu_01", "File: settings.py\n1 | import os\n2 | DEBUG = os.environ.get('DEBUG') == '1'", "read_file"),
    )  # fmt: skip
    assert s.messages[6].text.startswith("1. Previous Conversation:")
    assert s.messages[10].text == "[Sliding window truncation: 4 messages hidden to reduce context]"
    assert s.messages[6].timestamp == "2025-06-15T15:06:45.999000Z"
    # ts on every message: each request pairs with the answer timed before the next request;
    # Roo's tokensIn already holds the cached input (it is never below cache reads + writes)
    assert {m.seq: m.usage for m in s.messages if m.usage} == {
        1: Usage(12010, 0, 60), 3: Usage(12480, 12000, 140), 5: Usage(12650, 12450, 35),
        8: Usage(12720, 12630, 30), 11: Usage(2150, 0, 25), 13: Usage(2400, 2100, 80),
        15: Usage(1450, 1300, 45),
    }  # fmt: skip
    meta = s.metadata
    assert meta["compactions"] == [
        {"kind": "condense", "trigger": None, "pre_tokens": 12800, "post_tokens": 2100,
         "timestamp": "2025-06-15T15:06:48.500000Z", "summary_seq_index": 6, "hidden_messages": 5},
        {"kind": "truncation", "trigger": None, "pre_tokens": 2600, "post_tokens": 1400,
         "timestamp": "2025-06-15T15:06:52.500000Z", "summary_seq_index": 10, "hidden_messages": 4},
    ]  # fmt: skip
    assert (meta["condensed_messages"], meta["truncated_messages"]) == (5, 4)
    assert (meta["token_convention"], meta["cost_usd"], meta["condense_cost_usd"]) == (
        "input_includes_cache", 0.0757, 0.0213,
    )  # fmt: skip
    assert (meta["cwd"], meta["modes"], meta["task_number"], meta["api_protocols"]) == (
        "/home/dev/app", ["code"], 2, ["anthropic"],
    )  # fmt: skip
    assert meta["sidecars"] == ["ui_messages.json", "task_metadata.json", "history_item.json"]
    assert meta["files_in_context_sources"] == {"roo_edited": 2}


def test_cases_cut_before_each_summary_and_start_again_at_it(tmp_path: Path) -> None:
    import_paths([ROO / HISTORY], tmp_path / "c", progress=False)
    corpus = Corpus(tmp_path / "c")
    cases = build_cases(corpus, [parse_trigger("compactions")])
    assert cases["cut"].to_list() == [6, 10]
    assert cases["future_start"].to_list() == [7, 11]
    (sid,) = corpus.sessions()["session_id"].to_list()
    visible = [m for m in corpus.load_session(sid) if m.visible]
    assert [m.seq for m in prefix_of(visible, 13)] == [10, 11, 12]
    assert [m.seq for m in prefix_of(visible, 8)] == [6, 7]


def test_a_summary_repeating_a_condensed_call_pairs_the_result_with_its_copy(
    tmp_path: Path,
) -> None:
    """Roo keeps the ``tool_use`` of a kept ``tool_result`` in the summary (native tools)."""
    call = {"type": "tool_use", "id": "toolu_02", "name": "write_to_file", "input": {"path": "a"}}
    history = [
        {"role": "user", "content": "<task>\nwrite a\n</task>", "ts": 1000},
        {"role": "assistant", "content": [call], "ts": 2000, "condenseParent": "c"},
        {"role": "assistant", "content": [{"type": "text", "text": "Summary."}, call], "ts": 2999,
         "isSummary": True, "condenseId": "c"},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_02", "content": "ok"}], "ts": 3000},
    ]  # fmt: skip
    path = tmp_path / "t1" / HISTORY
    path.parent.mkdir()
    path.write_text(json.dumps(history))
    (s,), rejects = read_items(FMT, path)
    assert rejects == []
    hidden, summary, result = s.messages[1:]
    assert hidden.calls[0].id == "toolu_02#condensed-2"
    assert hidden.flags == ("call_id_renamed", "unanswered_tool_call")
    assert (summary.calls[0].id, summary.flags) == ("toolu_02", ("compaction_summary",))
    assert result.responses[0] == Part.response("toolu_02", "ok", "write_to_file")


# --- Kilo Code: OpenAI protocol, reasoning, an orphan ------------------------------------------


def test_kilo_task() -> None:
    s = _one(KILO)
    assert (s.key, s.workload) == ("kilo-code/5d2f8e10-1c3b-4a7d-8e9f-0a1b2c3d4e5f", "kilo-code")
    m = s.messages
    assert [_shape(x) for x in m] == [
        ("user", ("text", "blob", "text"), ()),
        ("user", ("text",), ("orphan_tool_result",)),
        ("assistant", ("reasoning", "text", "tool_call"), ()),
        ("user", ("tool_call_response",), ()),
        ("assistant", ("tool_call", "tool_call"), ()),
        ("user", ("tool_call_response", "tool_call_response"), ()),
        ("assistant", ("reasoning", "reasoning"), ()),
        ("assistant", ("text",), ()),
    ]
    # a result whose call a deleted turn took away: kept as text, with its content
    assert m[1].parts == (Part.text("Exit code: 1\nTests: 1 failed, 41 passed"),)
    assert s.metadata["orphan_results"] == ["call_k0"]
    assert m[2].parts[0] == Part("reasoning", content="The CI log says a snapshot is obsolete.")
    assert (
        m[3].is_error
        and m[3].responses[0].content == "1 snapshot obsolete\nTests: 1 failed, 41 passed"
    )
    assert [p.id for p in m[4].calls] == [p.id for p in m[5].responses] == ["call_k2", "call_k3"]
    assert m[6].parts == (  # a standalone reasoning item (OpenAI's Responses API)
        Part("reasoning", content="Explain the fix.", name="summary"),
        Part("reasoning", content="gAAAAABpENCRYPTEDKILO", mime_type=ENC),
    )
    # OpenAI protocol: tokensIn includes the cached input
    assert [x.usage for x in m] == [
        None, None, Usage(8200, 0, 120), None, Usage(8600, 8192, 95), None, None, Usage(8900, 8576, 60),
    ]  # fmt: skip
    meta = s.metadata
    assert (meta["variant"], meta["variant_evidence"], meta["api_protocols"]) == (
        "kilo-code", "path", ["openai"],
    )  # fmt: skip
    assert meta["token_totals"] == {"tokens_in": 25700, "tokens_out": 275, "cache_writes": 0, "cache_reads": 16768}  # fmt: skip
    assert meta["ui_events"]["say:api_req_deleted"] == 1
    assert "compactions" not in meta


def test_roo_versioned_document(tmp_path: Path) -> None:
    """Roo's newest histories: ``{version: 2, messages}`` of AI SDK model messages."""
    doc = {"version": 2, "messages": [
        {"role": "user", "content": [{"type": "text", "text": "<task>\nlist\n</task>"},
                                     {"type": "image", "image": "data:image/png;base64," + PNG, "mediaType": "image/png"}], "ts": 1000},
        {"type": "reasoning", "encrypted_content": "gAAAAQ", "id": "rs_1", "ts": 1500},
        {"role": "assistant", "content": [{"type": "reasoning", "text": "ls it"},
                                          {"type": "tool-call", "toolCallId": "c1", "toolName": "list_files", "input": {"path": "."}}], "ts": 2000},
        {"role": "tool", "content": [{"type": "tool-result", "toolCallId": "c1", "toolName": "list_files",
                                      "output": {"type": "error-text", "value": "permission denied"}}], "ts": 3000},
        {"role": "assistant", "content": "I cannot list it.", "ts": 4000},
    ]}  # fmt: skip
    path = tmp_path / "t2" / HISTORY
    path.parent.mkdir()
    path.write_text(json.dumps(doc))
    (ui := path.parent / "ui_messages.json").write_text(
        json.dumps([{"ts": 1000, "type": "say", "say": "text", "text": "list"}])
    )
    assert detect(ui) == FMT
    (s,), rejects = read_items(FMT, path)
    assert rejects == []
    assert [_shape(m) for m in s.messages] == [
        ("user", ("text", "blob"), ()),
        ("assistant", ("reasoning",), ()),
        ("assistant", ("reasoning", "tool_call"), ()),
        ("tool", ("tool_call_response",), ()),
        ("assistant", ("text",), ()),
    ]
    assert s.messages[0].parts[1] == Part(
        "blob", content=PNG, mime_type="image/png", modality="image"
    )
    assert s.messages[3].is_error
    assert s.messages[3].parts == (Part.response("c1", "permission denied", "list_files"),)
    assert s.messages[2].source_path == "$.messages[2]"


# --- the import: corpus, accounting, round trip ---------------------------------------------------


def test_import_the_three_task_folders(tmp_path: Path) -> None:
    summary = import_paths([CL], tmp_path / "c", progress=False)
    sidecar_records = (
        sum(UI_EVENTS.values()) + 3 + 1 + 1
    )  # task_metadata ×3, history_item, context_history
    assert (summary.sessions, summary.rejects) == (3, 0)
    assert summary.skipped == Counter({"task_sidecar": sidecar_records})
    assert summary.records == summary.sessions + summary.rejects + sum(summary.skipped.values())
    assert summary.records == 3 + sidecar_records
    assert summary.unaccounted == 0
    assert summary.by_format == {FMT: 3}
    corpus = Corpus(tmp_path / "c")
    rows = {r["source_session_id"]: r for r in corpus.sessions().to_dicts()}
    assert {k: (r["workload"], r["n_messages"], r["n_tool_calls"], r["n_tool_results"]) for k, r in rows.items()} == {
        "1718000000000": ("cline", 6, 0, 0),
        ROO.name: ("roo-code", 16, 5, 4),
        KILO.name: ("kilo-code", 8, 3, 3),
    }  # fmt: skip
    for r in rows.values():
        assert r["tokens"] > 0 and r["usage_prompt_tokens"] > 0 and r["usage_completion_tokens"] > 0
    assert rows["1718000000000"]["usage_prompt_tokens"] == 9804 + 10223 + 11430
    messages = corpus.load_session(rows[ROO.name]["session_id"])
    assert [m.seq for m in messages if "compaction_summary" in m.flags] == [6, 10]
    assert all(m.tokens > 0 for m in messages)


def test_every_file_balances_alone(tmp_path: Path) -> None:
    for i, f in enumerate(sorted(x for x in CL.rglob("*") if x.is_file())):
        summary = import_paths([f], tmp_path / str(i), progress=False)
        assert summary.unaccounted == 0, f
        assert summary.records == summary.sessions + summary.rejects + sum(summary.skipped.values())
        if f.name == HISTORY:
            assert (summary.records, summary.sessions) == (1, 1)
        else:
            assert summary.sessions == summary.rejects == 0
            expected = UI_EVENTS[f.parent] if f.name == "ui_messages.json" else 1
            assert summary.skipped == Counter({"task_sidecar": expected}), f


def test_round_trip_through_export(tmp_path: Path) -> None:
    a, b, _, _ = roundtrip([CL], tmp_path, 3)
    assert_same_tables(a, b)


# --- bad input ---------------------------------------------------------------------------------------


def test_a_sidecar_without_its_history_is_counted_not_a_session(tmp_path: Path) -> None:
    folder = tmp_path / "lonely"
    folder.mkdir()
    shutil.copy(CLINE / "ui_messages.json", folder / "ui_messages.json")
    shutil.copy(CLINE / "task_metadata.json", folder / "task_metadata.json")
    summary = import_paths([folder], tmp_path / "c", progress=False)
    assert (summary.sessions, summary.rejects) == (0, 0)
    assert summary.skipped == Counter({"task_without_history": 11 + 1})
    assert summary.unaccounted == 0


def test_a_truncated_history_keeps_what_was_written(tmp_path: Path) -> None:
    folder = tmp_path / "t"
    shutil.copytree(ROO, folder)
    data = (ROO / HISTORY).read_bytes()
    cut = data.index(b'{"role": "user", "content": "[Sliding window')
    (folder / HISTORY).write_bytes(data[: cut + 30])
    importer = get_importer(FMT)
    items = list(importer.read(folder / HISTORY))
    (reject,) = [i for i in items if isinstance(i, Reject)]
    (s,) = [i for i in items if not isinstance(i, Reject)]
    assert (reject.reason, reject.record, reject.raw) == ("truncated", 10, data[cut : cut + 30])
    assert len(s.messages) == 10 and s.metadata["rejected_records"] == 1
    assert s.metadata["records"] == list(range(10))
    assert importer.tally.seen == 2 and not importer.tally.skipped


def test_a_message_that_cannot_be_read_rejects_the_task_with_its_bytes(tmp_path: Path) -> None:
    history = json.loads((KILO / HISTORY).read_text())
    history[4]["content"][1]["input"] = 7  # a tool_use whose input is not an object
    folder = tmp_path / "k"
    shutil.copytree(KILO, folder)
    (folder / HISTORY).write_text(json.dumps(history))
    summary = import_paths([folder / HISTORY], tmp_path / "c", progress=False)
    assert (summary.records, summary.sessions, summary.rejects) == (1, 0, 1)
    (row,) = Corpus(tmp_path / "c").rejects().to_dicts()
    assert (row["reason"], row["json_path"], row["record"]) == (
        "wrong_type",
        "$[4].content[1].input",
        None,
    )
    assert row["raw"] == (folder / HISTORY).read_bytes()


def test_an_empty_history_and_junk_are_accounted(tmp_path: Path) -> None:
    folder = tmp_path / "e"
    shutil.copytree(CLINE, folder)
    (folder / HISTORY).write_text("[]")
    assert detect(folder / HISTORY) == FMT
    importer = get_importer(FMT)
    assert list(importer.read(folder / HISTORY)) == []
    assert (importer.tally.seen, importer.tally.skipped) == (1, Counter({"no_session": 1}))
    (folder / HISTORY).write_text('{"version": 2, "messages": "nope"}')
    (reject,) = list(get_importer(FMT).read(folder / HISTORY))
    assert (reject.reason, reject.json_path) == ("wrong_type", "$.messages")
    (folder / "ui_messages.json").write_text('[{"ts": 1, "type": "say", "say": "text"}, {"ts": ')
    importer = get_importer(FMT)
    items = list(importer.read(folder / "ui_messages.json"))
    assert [i.reason for i in items] == ["truncated"]
    assert (importer.tally.seen, importer.tally.skipped) == (2, Counter({"task_sidecar": 1}))


def test_the_extension_s_task_lists_are_counted_not_rejected(tmp_path: Path) -> None:
    """A whole global-storage folder: Cline's ``state/taskHistory.json`` and Roo Code's
    ``tasks/_index.json`` list the tasks; they are read as one record each, counted."""
    root = tmp_path / "globalStorage"
    shutil.copytree(CL, root)
    cline = root / "saoudrizwan.claude-dev"
    (cline / "state").mkdir()
    (cline / "state" / "taskHistory.json").write_text('[{"id": "1718000000000", "task": "x"}]')
    roo = root / "rooveterinaryinc.roo-cline" / "tasks" / "_index.json"
    roo.write_text('{"version": 1, "entries": []}')
    for path in (cline / "state" / "taskHistory.json", roo):
        assert detect(path) == FMT
    summary = import_paths([root], tmp_path / "c", progress=False)
    assert (summary.sessions, summary.rejects, summary.unaccounted) == (3, 0, 0)
    assert summary.skipped["task_index"] == 2

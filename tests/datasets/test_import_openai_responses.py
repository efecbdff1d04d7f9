"""OpenAI Responses API items: logged calls, chains, stored conversations and item lists."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxreplay.datasets.importers import detect, get_importer
from ctxreplay.datasets.importers.openai_responses import messages_from_items
from ctxreplay.datasets.ingest import import_paths
from ctxreplay.datasets.messages import ENCRYPTED_REASONING_MIME, Part, Usage
from ctxreplay.datasets.rejects import Reject
from ctxreplay.datasets.store import Corpus

from builders import FIXTURES, corpus_path, read_items

RS = FIXTURES / "openai-responses"
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
UNKNOWN = "application/vnd.ctxreplay.unknown-part+json"


@pytest.mark.parametrize(
    "name",
    ["calls.jsonl", "chain.jsonl", "conversation.json", "input_items_desc.json", "items.json"],
)
def test_fixtures_are_detected(name: str) -> None:
    assert detect(RS / name) == "openai-responses"


@pytest.mark.parametrize(
    "path",
    [
        "openai_chat/object.json",
        "openai_chat/sessions.jsonl",
        "anthropic/session.json",
        "anthropic/sessions.jsonl",
        "otel/flat_spans.jsonl",
        "openhands/output_small.jsonl",
        "tau-bench/gpt-test-airline.json",
        "codex-cli/rollout-2025-10-01T10-00-00-0199aaaa-0000-7000-8000-000000000001.jsonl",
    ],
)
def test_other_formats_are_not_taken(path: str) -> None:
    source = FIXTURES / path
    assert get_importer("openai-responses").sniff(source, source.read_bytes()) < 0.5
    assert detect(source) != "openai-responses"


def test_stateless_calls_rebuild_one_conversation_without_repeats() -> None:
    (s,), rejects = read_items("openai-responses", RS / "calls.jsonl")
    assert rejects == []
    assert s.source_session_id == "calls"  # no id links the calls: the file is the conversation
    got = [(m.role, m.text, m.usage) for m in s.messages]
    assert got == [
        ("system", "You are a weather bot.", None),
        ("developer", "Answer in one line.", None),
        ("user", "What is the weather in Oslo?", None),
        ("assistant", "", Usage(120, 0, 40)),
        ("tool", "", None),
        ("assistant", "It is -3 °C and snowing in Oslo.", Usage(180, 128, 12)),
        ("user", "yes", None),
        ("assistant", "Anything else?", Usage(200, 128, 5)),
        ("system", "You are a weather bot. Be brief.", None),  # the instructions changed
        ("user", "yes", None),  # said again: a new item, kept
        ("assistant", "Bye.", Usage(215, 192, 3)),
    ]
    first = s.messages[3]
    assert first.parts == (
        Part("reasoning", content="Need the weather tool.", name="summary"),
        Part("reasoning", content="gAAAAABoRESPONSESONE", mime_type=ENCRYPTED_REASONING_MIME),
        Part.call("call_W1", "get_weather", '{"city":"Oslo"}'),
    )
    assert s.messages[4].parts == (
        Part.response("call_W1", '{"temp_c": -3, "sky": "snow"}', "get_weather"),
    )
    # of the inputs, 4 (call 2), 6 (call 3: with the answer echoed as a string) and 8 (call 4)
    # items were history
    assert s.metadata == {
        "calls": 4,
        "records": [0, 1, 2, 3],
        "grouped_by": "dedupe",
        "models": ["gpt-5", "gpt-5-mini"],
        "repeated_items": 4 + 6 + 8,
        "encrypted_reasoning": {"items": 1, "bytes": 20},
    }


def test_chains_branches_and_conversations() -> None:
    (chain, conv), rejects = read_items("openai-responses", RS / "chain.jsonl")
    assert rejects == []
    assert chain.source_session_id == "resp_a1"
    got = [(m.role, m.text, m.visible, m.flags) for m in chain.messages]
    assert got == [
        ("user", "Name a prime.", True, ()),
        ("assistant", "7", True, ()),
        ("user", "Another?", False, ("abandoned_branch",)),
        ("assistant", "9", False, ("abandoned_branch",)),
        ("user", "Another prime, please?", True, ()),
        ("assistant", "11", True, ()),
    ]
    assert chain.messages[4].source_path == "$.request.input[0]"
    assert chain.messages[5].source_path == "$.response.output[0]"
    assert chain.messages[5].usage == Usage(22, 0, 2)
    assert chain.metadata["abandoned_branches"] == 1
    assert conv.source_session_id == "conv_77"
    assert [m.text for m in conv.messages] == [
        "Remember: blue.",
        "Noted.",
        "Which colour?",
        "Blue.",
    ]
    assert conv.metadata["records"] == [3, 4]


def test_stored_conversation_maps_every_item_kind() -> None:
    (s,), rejects = read_items("openai-responses", RS / "conversation.json")
    assert rejects == []
    assert s.source_session_id == "conv_stored_1"
    m = s.messages
    assert [x.role for x in m] == ["system", "user", "assistant", "tool", "assistant", "tool",
                                   "assistant", "tool", "assistant", "tool", "assistant", "tool",
                                   "assistant", "tool", "assistant", "tool", "assistant", "user"]  # fmt: skip
    assert m[1].parts == (
        Part.text("Check this screen and the report."),
        Part("blob", content=PNG, mime_type="image/png", modality="image", name="high"),
        Part("file", id="file-r1", modality="file", name="report.pdf"),
        Part("uri", uri="https://example.com/cat.png", modality="image"),  # detail auto: default
    )
    assert (m[1].image_count, m[1].file_count) == (2, 1)
    assert m[2].parts[:3] == (
        Part("reasoning", content="Look first.", name="summary"),
        Part("reasoning", content="I should take a screenshot."),
        Part("reasoning", content="gAAAAABoSTOREDCONV", mime_type=ENCRYPTED_REASONING_MIME),
    )
    computer = m[2].parts[3]
    assert (computer.id, computer.name, computer.mime_type) == (
        "call_K1",
        "computer",
        "application/vnd.openai.computer_call",
    )
    assert json.loads(computer.arguments or "") == {
        "action": {"type": "screenshot"},
        "pending_safety_checks": [],
    }
    shot, image = m[3].parts
    assert (shot.type, shot.content, shot.mime_type) == (
        "tool_call_response",
        "",
        "application/vnd.openai.computer-screenshot",
    )
    assert json.loads(shot.arguments or "")["acknowledged_safety_checks"][0]["id"] == "sc_1"
    assert image == Part("blob", content=PNG, mime_type="image/png", modality="image")
    assert m[5].parts == (Part.response("call_L1", "total: 42", "local_shell"),)
    # items that carry their own result: a call and its result
    assert m[6].calls == (
        Part("tool_call", id="mcp_1", name="search", arguments='{"q":"report"}',
             mime_type="application/vnd.openai.mcp_call"),
    )  # fmt: skip
    assert m[7].parts == (
        Part("tool_call_response", id="mcp_1", content="found 2 pages", name="search",
             arguments='{"server_label":"docs","error":null}'),
    )  # fmt: skip
    assert m[9].is_error and m[9].responses[0].content == "page 9 does not exist"
    assert m[11].responses[0].mime_type == "application/json"
    assert json.loads(m[11].responses[0].content or "")[0]["text"] == "Revenue: 42"
    # a web search holds no result: kept whole as an unknown part
    web, patch = m[12].parts
    assert (web.mime_type, json.loads(web.content or "")["id"]) == (UNKNOWN, "ws_1")
    assert patch.name == "apply_patch" and m[12].flags == (
        "unknown_part_type",
    )  # free-form input: no JSON flag
    # a list output of text then an image: a result and its image (how any importer says it)
    assert m[15].parts == (
        Part.response("call_F1", "chart rendered", "render_chart"),
        Part("uri", uri="https://example.com/chart.png", modality="image", name="low"),
    )
    assert m[16].parts == (
        Part.text("The report says 42."),
        Part("text", content="I will not email it.", mime_type="application/vnd.openai.refusal"),
    )
    assert m[17].parts[1] == Part(
        "text", content='{"type": "hologram", "data": "?"}', mime_type=UNKNOWN
    )
    assert s.metadata == {
        "encrypted_reasoning": {"items": 1, "bytes": 18},
        "unknown_items": {"web_search_call": 1},
    }


def test_a_list_in_newest_first_order_is_reversed() -> None:
    (s,), _ = read_items("openai-responses", RS / "input_items_desc.json")
    assert [(m.role, m.text) for m in s.messages] == [
        ("user", "list files"),
        ("assistant", ""),
        ("tool", ""),
        ("assistant", "Two files."),
    ]
    assert s.messages[0].source_path == "$.data[3]"
    assert s.metadata == {"order": "desc"}


def test_a_bare_array_of_items_is_one_conversation() -> None:
    (s,), _ = read_items("openai-responses", RS / "items.json")
    assert [m.role for m in s.messages] == ["user", "assistant", "tool", "assistant"]
    assert [p.type for p in s.messages[1].parts] == ["reasoning", "reasoning", "tool_call"]
    assert [m.source_path for m in s.messages] == ["$[0]", "$[1]", "$[3]", "$[4]"]
    assert (s.source_session_id, s.source_record) == ("items:0", 0)
    assert s.metadata == {"encrypted_reasoning": {"items": 1, "bytes": 20}}


def test_a_bad_call_is_rejected_alone(tmp_path: Path) -> None:
    lines = (RS / "calls.jsonl").read_text().splitlines()
    bad = json.loads(lines[1])
    bad["output"][0]["role"] = "robot"
    lines[1] = json.dumps(bad)
    path = tmp_path / "calls.jsonl"
    path.write_text("\n".join(lines) + "\n")
    importer = get_importer("openai-responses")
    items = list(importer.read(path))
    rejects = [i for i in items if isinstance(i, Reject)]
    assert [(r.reason, r.record, r.json_path) for r in rejects] == [
        ("unknown_role", 1, "$.output[0]")
    ]
    (s,) = [i for i in items if not isinstance(i, Reject)]
    assert s.metadata["records"] == [0, 2, 3]
    # the later calls repeat the history, so nothing but the lost answer is missing
    assert [m.text for m in s.messages if m.role == "assistant"] == [
        "", "It is -3 °C and snowing in Oslo.", "Anything else?", "Bye."
    ]  # fmt: skip
    assert importer.tally.seen == 4 and dict(importer.tally.skipped) == {"part_of_session": 2}


def test_messages_from_items_is_the_shared_reader() -> None:
    items = [
        {"role": "user", "content": "hi"},
        {"type": "reasoning", "summary": []},
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "hello"}],
        },
    ]
    got = messages_from_items(items, "$.items")
    assert [(m.role, m.parts, m.source_path) for m in got] == [
        ("user", (Part.text("hi"),), "$.items[0]"),
        ("assistant", (Part("reasoning"), Part.text("hello")), "$.items[1]"),
    ]


def test_import_counts_every_record(tmp_path: Path) -> None:
    summary = import_paths([RS], tmp_path / "c", progress=False)
    assert (summary.sessions, summary.rejects) == (6, 0)
    sources = {Path(s["path"]).name: s for s in Corpus(tmp_path / "c").manifest["sources"]}
    assert {n: (s["records"], s["sessions"], s["skipped"]) for n, s in sources.items()} == {
        "calls.jsonl": (4, 1, {"part_of_session": 3}),
        "chain.jsonl": (5, 2, {"part_of_session": 3}),
        "conversation.json": (1, 1, {}),
        "input_items_desc.json": (1, 1, {}),
        "items.json": (1, 1, {}),  # the array is one conversation
    }


@pytest.mark.corpora
def test_real_files_of_other_formats_are_not_taken() -> None:
    for folder in ("tau-bench", "tau2-bench", "swe-agent", "openhands", "codex-cli"):
        for f in sorted(corpus_path(folder).rglob("*.json*"))[:25]:
            assert get_importer("openai-responses").sniff(f, f.read_bytes()[: 1 << 20]) < 0.5, f

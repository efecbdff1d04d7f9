"""Commit gives exact, provider-valid views; folds recover byte for byte."""

from __future__ import annotations

import hashlib
import json

import pytest

from ctxreplay.datasets.openai_format import to_openai
from ctxreplay.replay.objects import build_index
from ctxreplay.replay.plan import Edit, Plan, rehearse
from ctxreplay.replay.sidecar import (
    SidecarError,
    original_result,
    payload_messages,
    recover_into_view,
)
from ctxreplay.replay.view import commit, mask_text, view_problems
from ctxreplay.runs import SidecarStore

from builders import coding_session, count


def apply(msgs, *edits, **kw):
    index = build_index(msgs, count)
    return commit(rehearse(Plan.of(*edits), index), msgs, index, count, **kw)


def test_prune_removes_result_and_call_envelope_but_keeps_connective_text() -> None:
    msgs = coding_session()
    view = apply(msgs, Edit("function:read_file:1", "prune"))
    # message 2 had text + call: the text stays, the call goes; the result (3) disappears
    assert [m.seq for m in view.messages] == [0, 1, 2, 4, 5, 6, 7, 8, 9, 10, 11]
    assert [p.type for p in view.messages[2].parts] == ["text"]
    assert view.messages[2].tokens == count("Let me look.")
    assert view_problems(view.messages) == []
    assert view.tokens == sum(m.tokens for m in view.messages)
    assert view.pruning_rate == pytest.approx(1 - view.tokens / sum(m.tokens for m in msgs))


def test_prune_with_placeholder_and_cleared_inputs_keeps_envelope() -> None:
    msgs = coding_session()
    view = apply(
        msgs, Edit("function:read_file:1", "prune", placeholder="[cleared]", clear_inputs=True)
    )
    assert len(view.messages) == len(msgs)
    assert view.messages[2].parts[1].arguments == "{}"
    assert view.messages[3].parts[0].content == "[cleared]"
    assert view.messages[3].tokens == count("[cleared]")
    assert view_problems(view.messages) == []


def test_mask_keeps_exact_head_and_tail_with_counting_marker() -> None:
    body = "".join(chr(97 + i % 26) for i in range(1000))
    assert mask_text(body, 100, 100, count) == (
        body[:100]
        + f"\n[… 800 characters elided (1 lines, {count(body[100:900]):,} tokens) …]\n"
        + body[900:]
    )
    msgs = coding_session()
    view = apply(msgs, Edit("function:run_tests:2", "mask"))  # default 10% / 10%
    original = msgs[5].parts[0].content
    masked = view.messages[5].parts[0].content
    n = len(original) // 10
    assert masked.startswith(original[:n]) and masked.endswith(original[-n:])
    assert "characters elided" in masked and view.messages[5].is_error


def test_fold_leaves_pointer_and_archives_exact_payload(tmp_path) -> None:
    msgs = coding_session()
    view = apply(msgs, Edit("function:read_file:1", "fold"))
    (archive,) = view.archives
    pointer = view.messages[3].parts[0].content
    assert pointer.startswith('<ctxreplay:folded object="function:read_file:1" ref="sha256:')
    assert archive.short in pointer and "context_recover" in pointer
    assert archive.ref == "sha256:" + hashlib.sha256(archive.payload).hexdigest()
    store = SidecarStore(tmp_path / "sidecar")
    store.put_all(view.archives)
    data = store.recover(archive.short)
    assert data == archive.payload
    assert original_result(data) == msgs[3].parts[0]
    (call_seq, _, call_parts), (res_seq, _, _) = payload_messages(data)
    assert (call_seq, res_seq) == (2, 3) and call_parts == (msgs[2].parts[1],)


def test_fold_of_a_turn_replaces_span_with_one_pointer() -> None:
    msgs = coding_session()
    view = apply(msgs, Edit("conversation:user:1", "fold"))
    assert [m.role for m in view.messages][:3] == ["system", "user", "user"]
    assert (
        view.messages[1]
        .parts[0]
        .content.startswith('<ctxreplay:folded object="conversation:user:1"')
    )
    assert view.messages[2] == msgs[7]  # the latest user turn, untouched
    assert view_problems(view.messages) == []
    doc = json.loads(view.archives[0].payload)
    assert [e["seq"] for e in doc["messages"]] == [1, 2, 3, 4, 5, 6]


def test_fold_without_route_has_no_pointer() -> None:
    msgs = coding_session()
    view = apply(
        msgs,
        Edit(
            "conversation:user:1", "fold", note="Earlier: read app.py, tests failed.", route=False
        ),
    )
    assert view.messages[1].parts[0].content == "Earlier: read app.py, tests failed."
    assert view.archives[0].pointer_visible is False


def test_agent_forgetting_note_in_place_and_recovery_appends_original() -> None:
    msgs = coding_session()
    view = apply(
        msgs,
        Edit("function:read_file:1", "fold", note="app.py read; parser at line 7"),
        handles={"function:read_file:1": "r1"},
    )
    stub = view.messages[3].parts[0].content
    assert (
        stub.startswith('<ctxreplay:archived id="r1" ref="sha256:') and "parser at line 7" in stub
    )
    recovered = recover_into_view(view.messages, view.archives[0].payload, "r1", "r5", count)
    assert recovered[3].parts[0].content == stub  # the stub stays
    call, back = recovered[-2], recovered[-1]
    assert call.parts[0].name == "context_recover" and json.loads(call.parts[0].arguments) == {
        "result_id": "r1"
    }
    assert (
        back.parts[0].content == msgs[3].parts[0].content and back.parts[0].id == call.parts[0].id
    )
    assert back.parts[0].id not in {p.id for m in msgs for p in m.parts}
    assert view_problems(recovered) == []


def test_sidecar_refuses_escaping_refs_and_detects_corruption(tmp_path) -> None:
    store = SidecarStore(tmp_path / "s")
    ref = store.put(b"payload")
    for bad in ("../../etc/passwd", "sha256:../../x", "sha256:ZZ", "md5:abc"):
        with pytest.raises(SidecarError):
            store.recover(bad)
    digest = ref.split(":")[1]
    (tmp_path / "s" / digest[:2] / digest).write_bytes(b"tampered")
    with pytest.raises(SidecarError, match="corrupt"):
        store.recover(ref)


def test_views_render_as_valid_openai_requests() -> None:
    msgs = coding_session()
    view = apply(msgs, Edit("function:read_file:1", "prune"), Edit("function:run_tests:2", "fold"))
    wire = to_openai(view.messages)
    calls = {c["id"] for m in wire for c in m.get("tool_calls", [])}
    results = [m["tool_call_id"] for m in wire if m["role"] == "tool"]
    assert sorted(results) == sorted(calls)

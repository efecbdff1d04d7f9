"""Context objects and rehearsal: ids, spans, supersession, and every drop reason."""

from __future__ import annotations

from ctxreplay.replay.objects import build_index
from ctxreplay.replay.plan import Edit, Plan, rehearse

from builders import coding_session, count


def test_objects_ids_spans_and_supersession() -> None:
    msgs = coding_session()
    index = build_index(msgs, count)
    ids = [o.id for o in index.objects]
    assert ids == [
        "conversation:user:1",
        "function:read_file:1",
        "function:run_tests:2",
        "conversation:user:2",
        "function:read_file:3",
        "function:edit_file:4",
    ]
    turn1 = index["conversation:user:1"]
    assert turn1.messages == (1, 2, 3, 4, 5, 6) and not turn1.protected
    assert index["conversation:user:2"].protected and index.latest_turn == "conversation:user:2"
    read1, read2 = index["function:read_file:1"], index["function:read_file:3"]
    assert read1.superseded_by == read2.id and read2.supersedes == read1.id
    assert index["function:run_tests:2"].is_error
    assert read1.messages == (2, 3) and read1.parent == "conversation:user:1"
    assert read1.tokens == count("read_file") + count('{"path":"app.py"}') + count(
        msgs[3].parts[0].content
    )


def test_ids_are_stable_across_cuts() -> None:
    msgs = coding_session()
    short = build_index(msgs[:7], count)
    full = build_index(msgs, count)
    assert [o.id for o in short.functions()] == [o.id for o in full.functions()][:2]


def test_rehearsal_drops_each_kind_of_bad_edit() -> None:
    msgs = coding_session()
    index = build_index(msgs, count)
    plan = Plan.of(
        Edit("function:read_file:1", "prune"),
        Edit("function:read_file:1", "prune"),  # duplicate
        Edit("function:read_file:1", "fold"),  # conflict
        Edit("function:nope:99", "fold"),  # unknown
        Edit("system", "prune"),  # not a target
        Edit("conversation:user:2", "fold"),  # protected latest turn
        Edit("conversation:user:1", "fold"),  # overlaps the pruned read inside it
        Edit("conversation:user:1", "mask"),  # (conflict comes first)
        Edit("function:run_tests:2", "explode"),  # bad action
        Edit("function:run_tests:2", "mask", head=10, tail=10),
    )
    r = rehearse(plan, index)
    assert [e.object_id for e in r.accepted] == ["function:read_file:1", "function:run_tests:2"]
    assert [(d.edit.object_id, d.reason) for d in r.dropped] == [
        ("function:read_file:1", "duplicate"),
        ("function:read_file:1", "conflict"),
        ("function:nope:99", "unknown_id"),
        ("system", "not_target"),
        ("conversation:user:2", "protected"),
        ("conversation:user:1", "overlap"),
        ("conversation:user:1", "conflict"),
        ("function:run_tests:2", "bad_action"),
    ]
    assert r.touched_latest_turn and r.batch_rejected is None
    assert r.estimated_saving > index["function:read_file:1"].tokens


def test_mask_on_a_turn_is_not_applicable() -> None:
    msgs = coding_session()
    r = rehearse(Plan.of(Edit("conversation:user:1", "mask")), build_index(msgs, count))
    assert [d.reason for d in r.dropped] == ["not_applicable"]


def test_all_or_nothing_rejects_whole_batch() -> None:
    msgs = coding_session()
    index = build_index(msgs, count)
    plan = Plan.of(
        Edit("function:read_file:1", "fold", note="old read"),
        Edit("function:ghost:42", "fold", note="?"),
        all_or_nothing=True,
    )
    r = rehearse(plan, index)
    assert r.accepted == () and r.batch_rejected == "unknown_id: function:ghost:42"
    assert {d.reason for d in r.dropped} == {"unknown_id", "batch_rejected"}
    assert r.is_empty

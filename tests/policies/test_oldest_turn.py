from ctxreplay.replay.view import POINTER_FLAG

from sessions import Session, prose, shape


def four_turns() -> tuple[Session, dict[str, list[int]]]:
    s = Session()
    turns: dict[str, list[int]] = {}
    s.system("You are a research agent.")
    first = [s.user("Project brief: compare the three vendors.")]
    s.step("search", {"q": "vendor list"}, "acme, globex, initech")
    first += [len(s.messages) - 2, len(s.messages) - 1]
    turns["first"] = first
    for k in ("second", "third"):
        start = s.user(f"{k}: read the {k} vendor's pricing page.")
        s.step("fetch", {"url": f"https://example.com/{k}"}, prose(400, k))
        s.say(f"Done with the {k} vendor.")
        turns[k] = list(range(start, len(s.messages)))
    start = s.user("Now write the comparison.")
    s.step("notes", {"op": "list"}, "3 notes")
    turns["latest"] = list(range(start, len(s.messages)))
    return s, turns


def test_prunes_old_turns_but_keeps_system_first_and_latest():
    s, turns = four_turns()
    total = s.total()
    second = sum(s.messages[i].tokens for i in turns["second"])
    assert total - second > 0.5 * total  # one turn is not enough to reach the target
    out = s.replay("oldest-turn")
    assert [(e.object_id, e.action) for e in out.plan.edits] == [
        ("conversation:user:2", "prune"),
        ("conversation:user:3", "prune"),
    ]
    keep = [0, *turns["first"], *turns["latest"]]
    assert shape(out.view.messages) == shape([s.messages[i] for i in keep])
    assert out.view.messages[0] == s.messages[0]
    assert out.view.messages[-3:] == tuple(s.messages[i] for i in turns["latest"])


def test_fold_mode_leaves_one_pointer_per_turn():
    s, turns = four_turns()
    out = s.replay("oldest-turn:mode=fold")
    kept = [s.messages[i] for i in (0, *turns["first"])]
    assert shape(out.view.messages[:4]) == shape(kept)
    pointers = out.view.messages[4:6]
    for k, pointer in zip((2, 3), pointers, strict=True):
        assert pointer.role == "user" and pointer.flags == (POINTER_FLAG,)
        archive = next(a for a in out.view.archives if a.object_id == f"conversation:user:{k}")
        assert pointer.parts[0].content.startswith(
            f'<ctxreplay:folded object="conversation:user:{k}" ref="{archive.short}"'
        )
        assert f'context_recover("{archive.short}")' in pointer.parts[0].content
    assert shape(out.view.messages[6:]) == shape([s.messages[i] for i in turns["latest"]])


def test_stops_as_soon_as_the_target_is_met():
    s, _ = four_turns()
    out = s.replay("oldest-turn:target_ratio=0.7")
    assert [e.object_id for e in out.plan.edits] == ["conversation:user:2"]
    assert s.replay(f"oldest-turn:trigger_tokens={s.total() + 1}").plan.edits == ()


def test_single_turn_sessions_drop_their_oldest_steps_keeping_the_last_three():
    s = Session()
    s.system("You are SWE-agent.")
    s.user("Fix issue #42.")
    ids = [s.step("bash", {"cmd": f"step {i}"}, prose(60, f"s{i}")) for i in range(8)]
    out = s.replay("oldest-turn:target_ratio=0")
    assert [e.object_id for e in out.plan.edits] == ids[:5]
    # the pruned calls lose their envelopes: system, user, then the last three steps
    assert shape(out.view.messages) == shape([*s.messages[:2], *s.messages[-6:]])
    half = s.replay("oldest-turn")
    sizes = [s.ctx().index[i].tokens for i in ids]
    n, estimate = 0, s.total()
    while estimate > 0.5 * s.total():
        estimate -= sizes[n]
        n += 1
    assert 0 < n < 5
    assert [e.object_id for e in half.plan.edits] == ids[:n]
    assert half.view.tokens <= 0.5 * s.total()

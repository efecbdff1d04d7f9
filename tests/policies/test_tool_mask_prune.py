from sessions import Session, count, prose, shape, with_result

CLEARED = "[Old tool result content cleared]"


def body_of(n_chars: int, tag: str) -> str:
    text = prose(n_chars // 20 + 5, tag)
    return text[:n_chars]


def test_ten_percent_mask_of_a_1000_char_body_keeps_exactly_100_plus_100():
    s = Session()
    s.system("agent")
    s.user("go")
    body = body_of(1000, "big")
    assert len(body) == 1000
    s.step("read", {"path": "big.txt"}, body)
    s.step("read", {"path": "small.txt"}, "short")
    out = s.replay("tool-mask+prune:keep=1,min_chars=500,target_ratio=1.0")
    middle = body[100:900]
    marker = (
        f"\n[… 800 characters elided ({middle.count(chr(10)) + 1} lines, "
        f"{count(middle)} tokens) …]\n"
    )
    m = s.messages
    expected = [*m[:3], with_result(m[3], body[:100] + marker + body[900:]), *m[4:]]
    assert shape(out.view.messages) == shape(expected)
    masked = out.view.messages[3].parts[0].content
    assert masked.startswith(body[:100] + "\n[… 800 characters elided")
    assert masked.endswith("…]\n" + body[-100:])


def test_openclaw_head_and_tail_chars_and_min_chars():
    s = Session()
    s.system("agent")
    s.user("go")
    big = body_of(6000, "big")
    small = body_of(3000, "small")
    s.step("read", {"path": "big"}, big)
    s.step("read", {"path": "small"}, small)
    s.step("read", {"path": "recent"}, body_of(6000, "recent"))
    out = s.replay("tool-mask+prune:keep=1,head_chars=1500,tail_chars=1500,target_ratio=0")
    # target 0 also hard-clears: check the soft-trim step on its own first
    soft = s.replay("tool-mask+prune:keep=1,head_chars=1500,tail_chars=1500,target_ratio=1")
    [edit] = soft.plan.edits
    assert (edit.object_id, edit.action, edit.head, edit.tail) == (
        "function:read:1",
        "mask",
        1500,
        1500,
    )
    text = soft.view.messages[3].parts[0].content
    assert text.startswith(big[:1500] + "\n[… 3,000 characters elided") and text.endswith(
        big[-1500:]
    )
    assert soft.view.messages[5].parts[0].content == small  # 3000 chars ≤ min_chars 4000
    # with target 0, both old results end up hard-cleared, the recent one stays whole
    assert [(e.object_id, e.action) for e in out.plan.edits] == [
        ("function:read:1", "prune"),
        ("function:read:2", "prune"),
    ]
    m = s.messages
    expected = [*m[:3], with_result(m[3], CLEARED), m[4], with_result(m[5], CLEARED), *m[6:]]
    assert shape(out.view.messages) == shape(expected)


def test_hard_clear_stops_once_under_target():
    s = Session()
    s.system("agent")
    s.user("go")
    for i in range(4):
        s.step("read", {"path": f"f{i}"}, body_of(3000, f"f{i}"))
    s.step("read", {"path": "last"}, body_of(3000, "last"))
    total = s.total()
    # clearing the first old result alone brings the view under 85% of the prefix
    first = count(s.messages[3].parts[0].content) - count(CLEARED)
    assert total - first <= 0.85 * total
    out = s.replay("tool-mask+prune:keep=1,target_ratio=0.85")
    assert [(e.object_id, e.action, e.placeholder) for e in out.plan.edits] == [
        ("function:read:1", "prune", CLEARED)
    ]
    assert out.view.messages[2] == s.messages[2]  # the call envelope stays

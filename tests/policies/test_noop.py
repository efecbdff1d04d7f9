from sessions import Session, prose, shape


def test_noop_keeps_every_message_and_prunes_nothing():
    s = Session()
    s.system("You are a careful agent.")
    s.user("Read the config.")
    s.step("read", {"path": "a.toml"}, prose(40))
    s.step("read", {"path": "b.toml"}, prose(40, "other"))
    s.user("Now summarise it.")
    out = s.replay("noop")
    assert out.plan.edits == ()
    assert shape(out.view.messages) == shape(s.messages)
    assert out.view.archives == ()
    assert out.pruning_rate == 0.0
    assert not out.committed and out.commit_reason == "nothing_to_do"

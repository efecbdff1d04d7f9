"""``working-set``: the need model's features, the order it spends a budget in, and the views."""

from __future__ import annotations

import math

from ctxreplay.policies.base import make_policy
from ctxreplay.policies.budget import editable_tokens
from ctxreplay.policies.working_set import (
    FEATURES,
    WorkingSet,
    features,
    name_words,
    names_match,
    request_words,
)
from ctxreplay.replay.view import view_problems

from sessions import Session, count, prose, shape, with_result

CLEARED = "[Old tool result content cleared]"


def coding(request: str = "Fix the failing test.") -> tuple[Session, dict[str, str]]:
    """A session of four large results (oldest first) and a small one, then a todo call."""
    s = Session()
    s.system("You are a coding agent.")
    s.user(request)
    ids = {
        "listing": s.step("LS", {"path": "/repo"}, prose(120, "listing")),
        "config": s.step("Read", {"file_path": "/repo/config.yaml"}, prose(80, "config")),
        "app": s.step("Read", {"file_path": "/repo/src/app.py"}, prose(80, "app")),
        "tests": s.step("Bash", {"command": "pytest -q"}, prose(60, "tests")),
        "small": s.step("Bash", {"command": "git status"}, prose(2, "status")),
        "todo": s.step("TodoWrite", {"todos": [{"content": "fix test"}]}, prose(40, "todo")),
    }
    return s, ids


def policy(spec: str = "working-set") -> WorkingSet:
    p = make_policy(spec)
    assert isinstance(p, WorkingSet)
    return p


def test_features_are_read_from_the_recorded_structure() -> None:
    s, ids = coding("Please update config for the new port.")
    ctx = s.ctx()
    fs = [f for f in ctx.index.functions()]
    x = {k: dict(zip(FEATURES, v, strict=True)) for k, v in features(ctx, fs).items()}
    n = len(fs)
    # age: tool calls since, log(1 + k); the listing is the oldest of six
    assert x[ids["listing"]]["age"] == math.log1p(n - 1)
    assert x[ids["todo"]]["age"] == 0.0
    assert x[ids["listing"]]["listing"] == 1.0 and x[ids["app"]]["listing"] == 0.0
    assert x[ids["app"]]["read"] == 1.0 and x[ids["tests"]]["read"] == 0.0
    # the request names config: config.yaml is a file of the task, app.py is not
    assert x[ids["config"]]["task"] == 1.0 and x[ids["app"]]["task"] == 0.0
    f = ctx.index.by_id[ids["app"]]
    assert x[ids["app"]]["size"] == math.log1p(f.result_tokens)


def test_names_and_requests_match_by_words_and_prefixes() -> None:
    assert name_words('{"file_path": "docs/PDL_SPEC.md"}') == {"pdl", "spec"}
    assert name_words('{"cmd": "cat src/runTests.py"}') == {"run", "tests"}
    assert names_match(frozenset({"readme"}), frozenset({"readmes"}))
    assert not names_match(frozenset({"app"}), frozenset({"apple"}))  # too short for a prefix
    s, _ = coding("Read all the READMEs and the docs")
    assert request_words(s.ctx()) == {"read", "readmes", "docs"}


def test_a_target_removes_the_least_needed_per_token_first_and_folds_it() -> None:
    s, ids = coding()
    ctx = s.ctx()
    p = policy()
    ranked = p.candidates(ctx)
    # the todo and the small result are never candidates; the rest go by the model's need per
    # token, computed here from the features and the weights
    assert {c.obj.id for c in ranked} == {ids[k] for k in ("listing", "config", "app", "tests")}
    x = features(ctx, [c.obj for c in ranked])
    w = [p.params.bias, *p.weights()]
    need = {k: 1 / (1 + math.exp(-sum(a * b for a, b in zip(w, [1.0, *v], strict=True))))
            for k, v in x.items()}  # fmt: skip
    assert [c.obj.id for c in ranked] == sorted(need, key=lambda k: need[k] / next(
        c.saving for c in ranked if c.obj.id == k))  # fmt: skip
    first = ranked[0]
    share = (first.saving - 5) / editable_tokens(ctx)
    out = s.replay(f"working-set:target={share:.4f},partial=false")
    assert [e.object_id for e in out.plan.edits] == [first.obj.id]
    assert out.plan.edits[0].action == "fold"
    [archive] = out.view.archives
    m = s.messages
    at = ctx.index.by_id[first.obj.id].result_index
    text = out.view.messages[at].parts[0].content
    assert f'context_recover("{archive.short}")' in text
    assert shape(out.view.messages) == shape([*m[:at], with_result(m[at], text), *m[at + 1 :]])
    assert out.plan.budget.met is True
    assert view_problems(list(out.view.messages)) == []


def test_what_is_given_back_keeps_the_need_met_and_partial_masks_the_last_one() -> None:
    s, _ids = coding()
    ctx = s.ctx()
    ranked = policy().candidates(ctx)
    first, second = ranked[0], ranked[1]
    # a need just above the first result's saving takes the second too; the second alone
    # meets it, so the first (less needed, but no longer wanted) is given back
    target = (first.saving + 10) / editable_tokens(ctx)
    whole = s.replay(f"working-set:target={target:.6f},partial=false")
    if second.saving >= first.saving + 10:
        assert [e.object_id for e in whole.plan.edits] == [second.obj.id]
    else:
        assert {e.object_id for e in whole.plan.edits} == {first.obj.id, second.obj.id}
    # a need of a quarter of the first result: with partial it is masked to free only that
    need = first.saving // 4
    part = s.replay(f"working-set:target={need / editable_tokens(ctx):.6f}")
    [edit] = part.plan.edits
    body = s.messages[ctx.index.by_id[first.obj.id].result_index].parts[0].content
    still = math.ceil(round(need / editable_tokens(ctx), 6) * editable_tokens(ctx))
    expected = int(len(body) * (1 - still / first.saving) / 2)
    assert (edit.object_id, edit.action, edit.head, edit.tail) == (
        first.obj.id, "mask", expected, expected
    )  # fmt: skip
    assert ctx.tokens - part.view.tokens >= need - 40  # the marker costs a few tokens
    assert ctx.tokens - part.view.tokens < first.saving // 2


def test_superseded_results_and_old_ones_go_before_recent_ones() -> None:
    s = Session()
    s.system("agent")
    s.user("Investigate.")
    old = s.step("Bash", {"command": "make"}, prose(60, "make1"))
    s.step("Bash", {"command": "ls"}, prose(60, "ls"))
    s.step("Bash", {"command": "make"}, prose(60, "make2"))
    ranked = policy().candidates(s.ctx())
    assert ranked[0].obj.id == old  # superseded by the same call again, and older
    assert ranked[0].need < ranked[-1].need


def test_small_results_and_the_todo_list_are_never_removed() -> None:
    s, ids = coding()
    out = s.replay("working-set:target=1.0")
    touched = {e.object_id for e in out.plan.edits}
    assert ids["small"] not in touched and ids["todo"] not in touched
    assert touched == {ids[k] for k in ("listing", "config", "app", "tests")}
    assert out.plan.budget.met is False
    # min_saving=0 makes the small result a candidate (it frees a few tokens)
    assert ids["small"] in {
        e.object_id for e in s.replay("working-set:target=1.0,min_saving=0").plan.edits
    }


def test_a_sure_removal_is_a_prune_behind_the_placeholder() -> None:
    s, _ids = coding()
    first = policy().candidates(s.ctx())[0]
    out = s.replay("working-set:target=0.05,prune_below=1.0,partial=false")
    [edit] = out.plan.edits
    assert edit.object_id == first.obj.id and edit.action == "prune"
    m = s.messages
    at = s.ctx().index.by_id[first.obj.id].result_index
    assert shape(out.view.messages) == shape([*m[:at], with_result(m[at], CLEARED), *m[at + 1 :]])
    assert out.view.archives == ()


def test_without_a_target_only_what_is_predicted_below_the_threshold_goes() -> None:
    s, _ids = coding()
    ranked = policy().candidates(s.ctx())
    needs = sorted(c.need for c in ranked)
    between = (needs[0] + needs[1]) / 2
    out = s.replay(f"working-set:remove_below={between}")
    assert [e.object_id for e in out.plan.edits] == [ranked[0].obj.id]
    assert out.plan.budget is None
    nothing = s.replay("working-set:remove_below=0")
    assert nothing.plan.edits == () and shape(nothing.view.messages) == shape(s.messages)


def test_the_weights_are_the_model_s() -> None:
    s, ids = coding()
    ctx = s.ctx()
    p = policy("working-set:bias=1.5,w_age=0,w_turns=0,w_size=0,w_task=0,w_focus=0,w_read=0,"
               "w_listing=0")  # fmt: skip
    need = {c.obj.id: c.need for c in p.candidates(ctx)}
    assert math.isclose(need[ids["app"]], 1 / (1 + math.exp(-1.5)))
    assert count("x") == 1  # the sessions' counter is the real tokenizer

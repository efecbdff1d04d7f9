"""Every registered policy on generated sessions: the view is always a valid request that keeps
the system prompt and the latest user turn, archives are exact, rates are sane, replay is pure."""

from __future__ import annotations

import hashlib

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxreplay.datasets.messages import Message, Part
from ctxreplay.policies.base import all_policies, make_policy, policies
from ctxreplay.replay.context import context_for
from ctxreplay.replay.outcome import replay_case
from ctxreplay.replay.sidecar import payload_messages
from ctxreplay.replay.view import view_problems

from sessions import Session, count, diff_body, log_body, prose, table_body, trace_body

#: default parameters, with the thresholds that gate each policy lowered so it acts
ACTIVE = {
    "agent-forgetting": "agent-forgetting:reminder_tokens=0,min_chars=200",
    "clear-tool-uses": "clear-tool-uses:trigger=0,keep=1",
    "hybrid": "hybrid:window=2,summarize_after=3,keep_recent=2",
    "observation-masking": "observation-masking:keep=2",
    "self-gc": "self-gc:commit_threshold=0,fold_min_tokens=200",
    "tool-mask+prune": "tool-mask+prune:min_chars=300,keep=1",
    "tool-prune": "tool-prune:keep=1",
    "working-set": "working-set:remove_below=0.5,min_saving=20",
}
EXTRA = (
    "oldest-turn:mode=fold,target_ratio=0.2",
    "tool-prune:protect_tokens=300,clear_at_least=10",
    "tool-mask+prune:head_chars=50,tail_chars=50,min_chars=200,target_ratio=0.3",
    "clear-tool-uses:trigger=0,keep=0,clear_tool_inputs=true,exclude_tools=search",
    "self-gc:commit_rule=cost,expected_requests=100,fold_min_tokens=200",
    "working-set:target=0.3,min_saving=20,prune_below=0.2",
)


def specs() -> list[str]:
    return [ACTIVE.get(name, name) for name in all_policies()] + list(EXTRA)


BODIES = {
    "short": lambda n: f"ok {n}",
    "empty": lambda n: "",
    "prose": lambda n: prose(5 + n * 4, f"p{n}"),
    "log": lambda n: log_body(20 + n * 3),
    "table": lambda n: table_body(5 + n),
    "trace": lambda n: trace_body(3 + n),
    "diff": lambda n: diff_body(1 + n % 5),
    "locator": lambda n: f"see https://example.com/item/{n} and /srv/data/file_{n}.csv",
}
TOOLS = ("bash", "read_file", "search", "fetch")

call_spec = st.tuples(
    st.sampled_from(TOOLS),
    st.integers(0, 3),  # arguments drawn from a small pool: identical calls repeat
    st.sampled_from(sorted(BODIES)),
    st.integers(0, 40),
    st.sampled_from([False, False, False, True]),  # is_error
)
step_spec = st.one_of(
    st.lists(call_spec, min_size=0, max_size=3),
    st.tuples(st.just("apply"), st.lists(st.integers(1, 12), min_size=1, max_size=3)),
)
turn_spec = st.lists(step_spec, min_size=0, max_size=4)
session_spec = st.tuples(
    st.lists(turn_spec, min_size=1, max_size=4),
    st.booleans(),  # Anthropic style: tool results travel in user messages
    st.booleans(),  # the latest user message also carries the previous step's results
)


def build(spec) -> list[Message]:
    turns, anthropic, merge_latest = spec
    s = Session()
    s.system("You are a careful agent. Follow the user's constraints exactly.")
    pending: list[tuple[Part, bool]] = []  # results owed to the last assistant message

    def flush() -> None:
        if anthropic and pending:
            s.add("user", [p for p, _ in pending], is_error=any(e for _, e in pending))
        else:
            for p, error in pending:
                s.add("tool", [p], is_error=error)
        pending.clear()

    for k, steps in enumerate(turns):
        text = f"Turn {k}: continue with task {k} and keep file_{k}.txt untouched."
        if merge_latest and pending and k == len(turns) - 1:
            s.add("user", [*(p for p, _ in pending), Part.text(text)])
            pending.clear()
        else:
            flush()
            s.user(text)
        for step in steps:
            flush()
            if isinstance(step, tuple):
                items = [{"result_id": f"r{n}", "note": f"note {n}"} for n in step[1]]
                pending.extend(call(s, [("context_apply", {"results": items}, "archived", False)]))
            elif not step:
                s.say(f"Thinking about turn {k}.")
            else:
                calls = [
                    (tool, {"arg": f"{tool}-{pool}"}, BODIES[kind](n), error)
                    for tool, pool, kind, n, error in step
                ]
                pending.extend(call(s, calls))
    flush()
    return s.messages


def call(s: Session, calls) -> list[tuple[Part, bool]]:
    """One assistant message making ``calls``; returns the results it is owed."""
    parts, results = [], []
    for tool, args, body, error in calls:
        s.calls += 1
        call_id = f"call_{s.calls}"
        parts.append(Part.call(call_id, tool, args))
        text = f"Error: {body}" if error else body
        results.append((Part.response(call_id, text, name=tool), error))
    s.add("assistant", [Part.text("Working."), *parts])
    return results


def expected_parts(messages, obj) -> list[tuple[int, str, tuple[Part, ...]]]:
    out = []
    for i in obj.messages:
        m = messages[i]
        if obj.kind == "function":
            parts = tuple(p for p in m.parts if p.id == obj.call_id)
            if i == obj.result_index and m.role == "tool":
                parts += tuple(p for p in m.parts if p.type in ("blob", "uri", "file"))
        else:
            parts = m.parts
        out.append((m.seq, m.role, parts))
    return out


@settings(
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(session_spec)
def test_every_policy_keeps_the_view_valid_exact_and_deterministic(spec):
    messages = build(spec)
    assert view_problems(messages) == []
    ctx = context_for(messages, count)
    latest = ctx.index[ctx.index.latest_turn].messages[0]
    for name in specs():
        first = replay_case(make_policy(name), ctx)
        again = replay_case(make_policy(name), context_for(messages, count))
        view = first.view
        assert view_problems(view.messages) == [], name
        assert view.messages[0] == messages[0], name
        kept_latest = [j for j, o in enumerate(view.origins) if o.index == latest and not o.edited]
        assert len(kept_latest) == 1, name
        assert view.messages[kept_latest[0]] == messages[latest], name
        for archive in view.archives:
            assert archive.ref == "sha256:" + hashlib.sha256(archive.payload).hexdigest()
            obj = ctx.index[archive.object_id]
            assert payload_messages(archive.payload) == expected_parts(messages, obj), name
        assert 0.0 <= first.pruning_rate <= 1.0, name
        if name == "noop":
            assert first.pruning_rate == 0.0
            assert view.messages == tuple(messages)
        assert again.view.messages == view.messages, name
        assert [a.ref for a in again.view.archives] == [a.ref for a in view.archives], name
        assert again.plan.edits == first.plan.edits, name


def test_the_property_suite_covers_every_registered_policy():
    names = {s.split(":", 1)[0] for s in specs()}
    assert names == set(all_policies())
    # the built-in ones, whatever other test modules register for themselves
    builtin = [n for n, cls in policies.items() if cls.__module__.startswith("ctxreplay.policies.")]
    assert builtin == [
        "agent-forgetting",
        "clear-tool-uses",
        "hybrid",
        "noop",
        "observation-masking",
        "oldest-turn",
        "prune-summarise",
        "recorded",
        "self-gc",
        "tool-mask+prune",
        "tool-prune",
        "working-set",
    ]

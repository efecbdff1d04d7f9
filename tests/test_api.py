"""The library surface: the names re-exported from ``ctxreplay`` and the README's example."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import ctxreplay
from ctxreplay import Message, Part, replay_messages, view_as_openai

README = Path(__file__).resolve().parents[1] / "README.md"

OPENAI = [
    {"role": "system", "content": "You are a booking agent."},
    {"role": "user", "content": "Find my reservation."},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "get_reservation", "arguments": '{"id": "R1"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "reservation R1: flight UA100 " * 40},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c2",
                "type": "function",
                "function": {"name": "get_flight", "arguments": '{"id": "UA100"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "c2", "content": "UA100 departs 09:00 " * 40},
    {"role": "user", "content": "Change it to Friday."},
]


def test_every_public_name_resolves() -> None:
    for name in ctxreplay.__all__:
        assert getattr(ctxreplay, name) is not None, name
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = ctxreplay.nope  # type: ignore[attr-defined]


def test_replay_messages_takes_openai_dicts() -> None:
    outcome = replay_messages(OPENAI, "tool-prune:keep=1")
    assert outcome.committed
    kept = [m for m in outcome.view.messages if m.role == "tool"]
    assert next(p.content for m in kept for p in m.parts) == "[Old tool result content cleared]"
    assert 0.4 < outcome.pruning_rate < 0.6  # one of two equal results cleared
    sent = view_as_openai(outcome)
    assert [m["role"] for m in sent] == [m["role"] for m in OPENAI]


def test_replay_messages_takes_canonical_messages() -> None:
    messages = [
        Message("user", (Part("text", content="hello"),), seq=0),
        Message("assistant", (Part("text", content="hi"),), seq=1),
    ]
    outcome = replay_messages(messages, "noop")
    assert outcome.view.messages == tuple(replace_tokens(outcome.view.messages, messages))
    assert outcome.pruning_rate == 0.0


def replace_tokens(view: tuple[Message, ...], messages: list[Message]) -> list[Message]:
    from dataclasses import replace

    return [replace(m, tokens=v.tokens) for m, v in zip(messages, view, strict=True)]


def test_a_bad_message_is_one_clear_error() -> None:
    with pytest.raises(ctxreplay.CtxreplayError, match=r"\$\[0\]"):
        replay_messages([{"content": "no role"}], "noop")


def test_the_readme_python_example_runs() -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    assert blocks, "README has no Python example"
    for block in blocks:
        namespace: dict[str, object] = {"messages": OPENAI}
        exec(compile(block, "README.md", "exec"), namespace)


def test_a_pruned_call_does_not_leave_a_blank_message() -> None:
    # a real SWE-agent trace: an assistant message whose text is "\n" beside its tool call;
    # pruning the call must drop the message, not leave an empty one (providers reject it)
    from ctxreplay.datasets.tokenizer import get_tokenizer
    from ctxreplay.replay.context import CommitDecision, context_for
    from ctxreplay.replay.outcome import replay_case
    from ctxreplay.replay.plan import Edit, Plan
    from ctxreplay.replay.view import view_problems

    blank = [dict(m) for m in OPENAI]
    blank[2]["content"] = "\n"
    count = get_tokenizer().count
    ctx = context_for(ctxreplay.as_messages(blank), count)
    first = ctx.index.functions()[0].id

    class PruneFirst:
        label = "prune-first"

        def plan(self, ctx):  # type: ignore[no-untyped-def]
            return Plan(edits=(Edit(first, "prune"),))

        def handles(self, ctx):  # type: ignore[no-untyped-def]
            return None

        def decide(self, ctx, rehearsal, view, plan):  # type: ignore[no-untyped-def]
            return CommitDecision(True, "always")

    outcome = replay_case(PruneFirst(), ctx)
    assert outcome.committed
    assert [m.role for m in outcome.view.messages] == [
        "system",
        "user",
        "assistant",
        "tool",
        "user",
    ]
    assert view_problems(outcome.view.messages) == []

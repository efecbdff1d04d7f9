"""Hand-built sessions for policy tests: messages with real o200k_base token counts.

``Session`` appends messages in order; ``step`` adds one tool call and its answer and returns the
object id the index gives it (``function:<tool>:N``, N counting calls across the session), so a
test can name exactly what a policy should have touched.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ctxreplay.datasets.messages import Message, Part
from ctxreplay.datasets.tokenizer import get_tokenizer
from ctxreplay.policies.base import Policy, make_policy
from ctxreplay.replay.context import PrefixContext, context_for
from ctxreplay.replay.objects import part_tokens, tool_slug
from ctxreplay.replay.outcome import Outcome, replay_case


def count(text: str) -> int:
    return get_tokenizer().count(text)


def tokens_of(parts: Sequence[Part]) -> int:
    return sum(part_tokens(p, count) for p in parts)


@dataclass
class Session:
    messages: list[Message] = field(default_factory=list)
    calls: int = 0

    def add(self, role: str, parts: Sequence[Part], **kw: Any) -> int:
        self.messages.append(
            Message(role, tuple(parts), seq=len(self.messages), tokens=tokens_of(parts), **kw)
        )
        return len(self.messages) - 1

    def system(self, text: str) -> int:
        return self.add("system", [Part.text(text)])

    def user(self, text: str) -> int:
        return self.add("user", [Part.text(text)])

    def say(self, text: str) -> int:
        return self.add("assistant", [Part.text(text)])

    def step(
        self,
        tool: str,
        args: Any,
        result: str,
        *,
        error: bool = False,
        text: str | None = None,
    ) -> str:
        """One assistant call answered by one tool message; returns the object id."""
        return self.parallel([(tool, args, result, error)], text=text)[0]

    def parallel(
        self, calls: Sequence[tuple[str, Any, str, bool]], *, text: str | None = None
    ) -> list[str]:
        """One assistant message with several calls, then one tool message per answer."""
        ids, parts = [], [] if text is None else [Part.text(text)]
        for tool, args, _, _ in calls:
            self.calls += 1
            call_id = f"call_{self.calls}"
            parts.append(Part.call(call_id, tool, args))
            ids.append((call_id, f"function:{tool_slug(tool)}:{self.calls}"))
        self.add("assistant", parts)
        for (call_id, _), (tool, _, result, error) in zip(ids, calls, strict=True):
            self.add("tool", [Part.response(call_id, result, name=tool)], is_error=error)
        return [object_id for _, object_id in ids]

    def ctx(self) -> PrefixContext:
        return context_for(self.messages, count)

    def replay(self, spec: str | Policy) -> Outcome:
        return replay_case(make_policy(spec), self.ctx())

    def total(self) -> int:
        return sum(m.tokens for m in self.messages)


def reads(n: int = 6, lines: int = 30, *, system: str = "You are a coding agent.") -> Session:
    """A build investigation: ``n`` ``cat logI.txt`` calls, each answered by ``lines`` of prose."""
    s = Session()
    s.system(system)
    s.user("Investigate the failing build.")
    for i in range(n):
        s.step("bash", {"cmd": f"cat log{i}.txt"}, prose(lines, f"log{i}"))
    return s


# --- bodies of known shapes -----------------------------------------------------------------


def prose(n_lines: int, tag: str = "text") -> str:
    """Varied lines with no shared shape (not a log, not a table); deterministic."""
    rng = random.Random(f"{tag}:{n_lines}")
    words = [
        *("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india"),
        *("juliet", "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo"),
        *("sierra", "tango", "uniform", "victor", "whiskey", "xray", "yankee", "zulu", "the"),
        *("of", "and", "module", "value", "returns", "reads", "config", "handler", "between"),
        *("under", "above"),
    ]
    return "\n".join(
        f"{tag.capitalize()} " + " ".join(rng.choice(words) for _ in range(rng.randint(6, 12)))
        for _ in range(n_lines)
    )


def log_body(n_lines: int = 60) -> str:
    return "\n".join(
        f"2024-05-{1 + i % 28:02d} 12:{i % 60:02d}:{(i * 7) % 60:02d} INFO worker processed "
        f"batch {i} in {10 + i % 13} ms (job {0xA0F3C0 + i:x})"
        for i in range(n_lines)
    )


def table_body(n_rows: int = 30) -> str:
    rows = ["| id | city | population | code |", "|----|------|------------|------|"]
    rows += [f"| {i} | city{i} | {1000 + i * 37} | C{i:03d} |" for i in range(n_rows)]
    return "\n".join(rows)


def trace_body(frames: int = 25) -> str:
    lines = ["Traceback (most recent call last):"]
    for i in range(frames):
        lines.append(f'  File "/srv/app/module_{i}.py", line {10 + i}, in handler_{i}')
        lines.append(f"    result = handler_{i + 1}(payload)")
    lines.append("ValueError: bad payload")
    return "\n".join(lines)


def diff_body(hunks: int = 6) -> str:
    lines = ["diff --git a/src/app.py b/src/app.py", "--- a/src/app.py", "+++ b/src/app.py"]
    for h in range(hunks):
        lines.append(f"@@ -{10 * h + 1},4 +{10 * h + 1},4 @@ def f{h}():")
        lines += [
            f"     x{h} = {h}",
            f"-    y{h} = old({h})",
            f"+    y{h} = new({h})",
            "     return y",
        ]
    return "\n".join(lines)


# --- expected views -------------------------------------------------------------------------


def shape(messages: Sequence[Message]) -> list[tuple[str, tuple[Part, ...]]]:
    """What a view holds, message by message: role and exact parts."""
    return [(m.role, m.parts) for m in messages]


def with_result(m: Message, content: str) -> Message:
    """``m`` (a tool message) with its one result body replaced."""
    (part,) = m.parts
    return m.with_parts([Part.response(part.id, content, name=part.name)])


def with_arguments(m: Message, call_id: str, arguments: str) -> Message:
    return m.with_parts(
        [Part.call(p.id or "", p.name or "", arguments) if p.id == call_id else p for p in m.parts]
    )


def body(m: Message) -> str:
    (part,) = m.responses
    return part.content or ""

"""What an archived payload holds and how a view gets it back: pure functions over the bytes
the sidecar store (``ctxreplay.runs.SidecarStore``) keeps."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import replace

from ..datasets.messages import Message, Part
from ..datasets.rows import row_to_part
from ..errors import CtxreplayError
from .objects import part_tokens


class SidecarError(CtxreplayError, LookupError):
    """A sidecar ref that is malformed or not in the store, or a payload missing, altered or
    not an archive."""


def payload_messages(payload: bytes) -> list[tuple[int, str, tuple[Part, ...]]]:
    """(seq, role, parts) of each message an archive holds; :class:`SidecarError` when the
    bytes are not an archive."""
    try:
        doc = json.loads(payload)
        return [
            (e["seq"], e["role"], tuple(row_to_part(p) for p in e["parts"]))
            for e in doc["messages"]
        ]
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise SidecarError(f"the archived payload is not an archive ({type(e).__name__})") from None


def original_result(payload: bytes) -> Part:
    """The tool result part of an archived function object."""
    for _, _, parts in payload_messages(payload):
        for p in parts:
            if p.type == "tool_call_response":
                return p
    raise SidecarError("the archive holds no tool result")


def recover_into_view(
    messages: Sequence[Message],
    payload: bytes,
    handle: str,
    fresh_id: str,
    count: Callable[[str], int],
) -> tuple[Message, ...]:
    """Agent-controlled forgetting's recovery: the stub stays where it was; the exact original
    comes back as a new tool result, with a fresh result id, answering a ``context_recover``
    call appended at the end of the view."""
    result = original_result(payload)
    seq = (messages[-1].seq + 1) if messages else 0
    call_id = f"recover_{fresh_id}"
    call = Part.call(call_id, "context_recover", {"result_id": handle})
    back = replace(result, id=call_id, name="context_recover")
    return (
        *messages,
        Message(role="assistant", parts=(call,), seq=seq, tokens=part_tokens(call, count)),
        Message(role="tool", parts=(back,), seq=seq + 1, tokens=part_tokens(back, count)),
    )

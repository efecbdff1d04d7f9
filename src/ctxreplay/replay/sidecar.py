"""The sidecar store: exact payloads of folded objects, addressed by sha256.

Files live at ``RUN/sidecar/<first two hex>/<64 hex>``. A ref is ``sha256:<hex>`` (16 to 64 hex
digits; a short ref must match one payload). Refs are checked against a strict pattern, so no
ref or id can name a path outside the store; every read re-hashes the bytes.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from pathlib import Path

from ..datasets.messages import Message, Part
from ..datasets.schema import row_to_part
from .objects import part_tokens
from .view import Archive

_REF = re.compile(r"^sha256:([0-9a-f]{16,64})$")


class SidecarError(LookupError):
    pass


class SidecarStore:
    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    def _path(self, digest: str) -> Path:
        return self.root / digest[:2] / digest

    def put(self, payload: bytes) -> str:
        digest = hashlib.sha256(payload).hexdigest()
        path = self._path(digest)
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{digest}.{os.getpid()}.tmp")
            tmp.write_bytes(payload)
            os.replace(tmp, path)
        return f"sha256:{digest}"

    def put_all(self, archives: Iterable[Archive]) -> None:
        for a in archives:
            stored = self.put(a.payload)
            if stored != a.ref:
                raise SidecarError(f"archive {a.object_id}: ref {a.ref} does not match its payload")

    def resolve(self, ref: str) -> str:
        m = _REF.match(ref)
        if not m:
            raise SidecarError(f"not a sidecar ref: {ref!r} (expected sha256:<hex>)")
        digest = m.group(1)
        if len(digest) == 64:
            return digest
        folder = self.root / digest[:2]
        matches = sorted(p.name for p in folder.glob(f"{digest}*")) if folder.exists() else []
        matches = [x for x in matches if not x.startswith(".")]
        if len(matches) != 1:
            raise SidecarError(f"ref {ref} matches {len(matches)} payloads")
        return matches[0]

    def recover(self, ref: str) -> bytes:
        """The exact original bytes of a folded object; raises if missing or altered."""
        digest = self.resolve(ref)
        path = self._path(digest)
        if not path.exists():
            raise SidecarError(f"no payload for {ref} in {self.root}")
        data = path.read_bytes()
        if hashlib.sha256(data).hexdigest() != digest:
            raise SidecarError(f"payload {ref} is corrupt: its sha256 no longer matches")
        return data

    def __contains__(self, ref: object) -> bool:
        try:
            return isinstance(ref, str) and self._path(self.resolve(ref)).exists()
        except SidecarError:
            return False


def payload_messages(payload: bytes) -> list[tuple[int, str, tuple[Part, ...]]]:
    """(seq, role, parts) of each message an archive holds."""
    doc = json.loads(payload)
    return [
        (e["seq"], e["role"], tuple(row_to_part(p) for p in e["parts"])) for e in doc["messages"]
    ]


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

"""Rejected records: what could not be imported, why, and the raw bytes so nothing is lost."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: Reason codes a reject can carry, with a one-line meaning (shown by ``ctxreplay info``).
REASONS: dict[str, str] = {
    "invalid_json": "the record is not valid JSON",
    "truncated": "the file ends in the middle of a record",
    "invalid_utf8": "the record contains bytes that are not valid UTF-8",
    "wrong_type": "a field has the wrong JSON type",
    "missing_field": "a required field is absent",
    "unknown_role": "a message role the format does not define",
    "orphan_tool_result": "a tool result answers a call that was never made",
    "duplicate_tool_call_id": "two tool calls share one id",
    "duplicate_tool_result": "a tool call has more than one result",
    "oversize_message": "a single message is larger than the limit (10 MB by default)",
    "empty_session": "the record holds no messages",
    "duplicate_session": "the same session was imported twice",
    "unreadable_file": "the file could not be read",
    "unknown_format": "no importer recognises the file",
    "malformed": "the record does not follow its format",
}


class RecordError(ValueError):
    """Raised by importers for a record they cannot turn into a session."""

    def __init__(self, reason: str, detail: str, json_path: str = "$") -> None:
        super().__init__(f"{reason} at {json_path}: {detail}")
        self.reason = reason
        self.detail = detail
        self.json_path = json_path


@dataclass(slots=True)
class Reject:
    """One rejected record; ``raw`` is the exact bytes of the record as it stood in the file."""

    source_location: str
    reason: str
    detail: str
    raw: bytes
    source_format: str | None = None
    record: int | None = None
    line: int | None = None
    session_id: str | None = None
    json_path: str | None = None

    def where(self) -> str:
        at = [self.source_location]
        if self.line is not None:
            at.append(f"line {self.line}")
        if self.record is not None:
            at.append(f"record {self.record}")
        if self.json_path:
            at.append(self.json_path)
        return ", ".join(at)

    def to_row(self) -> dict[str, Any]:
        return {
            "source_format": self.source_format,
            "source_location": self.source_location,
            "record": self.record,
            "line": self.line,
            "session_id": self.session_id,
            "json_path": self.json_path,
            "reason": self.reason,
            "detail": self.detail,
            "raw": self.raw,
        }

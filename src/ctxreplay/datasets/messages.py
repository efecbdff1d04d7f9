"""The canonical message model: OpenTelemetry GenAI messages, ``{role, parts[]}``.

Every importer produces these and every later stage reads them. Roles are the provider's own
(Anthropic tool results stay in ``user`` messages; SWE-agent's textual observations stay ``user``
messages that carry a ``tool_call_response`` part). ``arguments`` of a tool call is kept as the JSON
text of the arguments object, so a call whose arguments were not JSON survives byte for byte
(flagged ``arguments_not_json``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

PartType = Literal["text", "tool_call", "tool_call_response", "reasoning", "blob", "uri", "file"]
PART_TYPES: tuple[str, ...] = (
    "text",
    "tool_call",
    "tool_call_response",
    "reasoning",
    "blob",
    "uri",
    "file",
)
MEDIA_PART_TYPES = frozenset({"blob", "uri", "file"})
ROLES = frozenset({"system", "developer", "user", "assistant", "tool"})
#: ``mime_type`` of a reasoning part holding a provider's encrypted reasoning (OpenAI
#: ``encrypted_content``): opaque, so it counts 0 tokens (importers record its bytes)
ENCRYPTED_REASONING_MIME = "application/vnd.openai.encrypted-reasoning"
#: ``mime_type`` of a call to a free-form tool (OpenAI ``custom_tool_call``): its input is plain
#: text by design, not JSON arguments
FREEFORM_CALL_MIME = "application/vnd.openai.custom_tool_call"


@dataclass(frozen=True, slots=True)
class Part:
    """One part of a message.

    ``content`` holds the text of ``text``/``reasoning`` parts, the body of a
    ``tool_call_response`` and the base64 data of a ``blob``. ``id`` links a call to its response.
    """

    type: PartType
    content: str | None = None
    id: str | None = None
    name: str | None = None
    arguments: str | None = None
    mime_type: str | None = None
    uri: str | None = None
    modality: str | None = None

    @staticmethod
    def text(content: str) -> Part:
        return Part("text", content=content)

    @staticmethod
    def call(id: str, name: str, arguments: Any) -> Part:
        """A tool call; ``arguments`` may be an object or already its JSON text."""
        args = arguments if isinstance(arguments, str) else dumps_arguments(arguments)
        return Part("tool_call", id=id, name=name, arguments=args)

    @staticmethod
    def response(id: str | None, content: str, name: str | None = None) -> Part:
        return Part("tool_call_response", id=id, content=content, name=name)

    def token_texts(self) -> Iterable[str]:
        """The strings a tokenizer counts for this part (media payloads are counted, not tokenised)."""
        if self.type in MEDIA_PART_TYPES or self.mime_type == ENCRYPTED_REASONING_MIME:
            return ()  # an encrypted reasoning blob is kept byte for byte, never read as text
        if self.type == "tool_call":
            return tuple(s for s in (self.name, self.arguments) if s)
        # a result's ``name`` is bookkeeping (the tool it answers), not text the model reads
        return (self.content,) if self.content else ()


@dataclass(frozen=True, slots=True)
class Usage:
    """Usage the provider reported for the request that produced a message, when recorded."""

    prompt_tokens: int | None = None
    cached_tokens: int | None = None
    completion_tokens: int | None = None


def usage_from(obj: Any) -> Usage | None:
    """Usage from an OpenAI-style ``usage`` object (or our extension), when it has numbers."""
    if not isinstance(obj, dict):
        return None
    prompt = obj.get("prompt_tokens", obj.get("input_tokens"))
    completion = obj.get("completion_tokens", obj.get("output_tokens"))
    cached = obj.get("cached_tokens")
    details = obj.get("prompt_tokens_details") or obj.get("input_tokens_details")
    if cached is None and isinstance(details, dict):
        cached = details.get("cached_tokens")
    if cached is None and obj.get("cache_read_input_tokens") is not None:
        cached = obj.get("cache_read_input_tokens")
    values = [v for v in (prompt, cached, completion) if v is not None]
    if not values or not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return None
    return Usage(prompt, cached, completion)


@dataclass(frozen=True, slots=True)
class Message:
    """One message of a session, in order (``seq``)."""

    role: str
    parts: tuple[Part, ...]
    seq: int = 0
    name: str | None = None
    is_error: bool = False
    #: False for traffic the acting agent never saw (tau2's user-side device tool calls).
    visible: bool = True
    tokens: int = 0
    flags: tuple[str, ...] = ()
    usage: Usage | None = None
    timestamp: str | None = None
    #: where the message came from inside its source record, e.g. ``traj[4]``.
    source_path: str | None = None

    # --- derived views of the parts -------------------------------------------------------
    @property
    def text(self) -> str:
        """Concatenated text parts (what a person reads as the message)."""
        return "\n".join(p.content or "" for p in self.parts if p.type == "text")

    @property
    def calls(self) -> tuple[Part, ...]:
        return tuple(p for p in self.parts if p.type == "tool_call")

    @property
    def responses(self) -> tuple[Part, ...]:
        return tuple(p for p in self.parts if p.type == "tool_call_response")

    @property
    def image_count(self) -> int:
        return sum(
            1
            for p in self.parts
            if p.type in MEDIA_PART_TYPES
            and (p.modality == "image" or (p.mime_type or "").startswith("image/"))
        )

    @property
    def file_count(self) -> int:
        return sum(1 for p in self.parts if p.type in MEDIA_PART_TYPES) - self.image_count

    @property
    def is_user_turn(self) -> bool:
        """A user message that carries the user's own words, not only tool results."""
        return self.role == "user" and any(
            p.type in ("text", *MEDIA_PART_TYPES) for p in self.parts
        )

    @property
    def chars(self) -> int:
        return sum(len(s) for p in self.parts for s in p.token_texts())

    def with_parts(self, parts: Sequence[Part]) -> Message:
        return replace(self, parts=tuple(parts))


@dataclass(slots=True)
class Session:
    """A recorded conversation as an importer hands it to the corpus writer."""

    source_format: str
    source_session_id: str
    messages: list[Message]
    #: globally unique key the session id is hashed from (defaults to file hash + record).
    key: str | None = None
    session_id: str | None = None
    source_location: str = ""
    source_record: int | None = None
    workload: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


def dumps_arguments(arguments: Any) -> str:
    """Tool-call arguments as compact JSON text with keys in their recorded order."""
    return json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))


def arguments_object(part: Part) -> Any:
    """The arguments of a call as an object, or the raw text when it was not JSON."""
    if part.arguments is None:
        return {}
    try:
        return json.loads(part.arguments)
    except ValueError:
        return part.arguments


def as_dict(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object, else an empty one: for optional nested objects of
    trace records, which may be missing, null or of another type."""
    return value if isinstance(value, dict) else {}

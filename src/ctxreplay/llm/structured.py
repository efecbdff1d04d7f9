"""Structured answers: one pydantic model gives both the JSON schema sent to the endpoint and the
check of what comes back.

The LLM judge's verdict, Self-GC's plan and agent-controlled forgetting's ``context_apply``
arguments are each a subclass of :class:`Answer`. From it:

- :func:`json_schema` — the schema in the form OpenAI's strict structured output accepts: every
  property listed in ``required``, ``additionalProperties: false``, no titles, no ``$ref``,
  ``T | None`` as ``"type": [T, "null"]``, keys in a fixed order. It is byte-for-byte the
  schema the hand-written dictionaries of earlier versions had, so requests and their cache keys
  are unchanged (``tests/llm/test_structured.py`` holds them to it).
- :func:`read_answer` — the JSON value validated strictly (no coercion: ``"3"`` is not an
  integer, ``true`` is not a number), or a one-line reason naming the first problem and its
  place (``facts[0].status 'gone' is not one of available, recoverable, missing``).

What a model reads is lenient only where a model says so: a field with a default may be left out
of an answer (the schema still asks for it), a model with ``extra="ignore"`` drops unknown keys
instead of refusing them. Size bounds that guide constrained decoding (``maxLength``,
``maxItems``) are given with :func:`hint` and are not checked: a longer answer from an endpoint
without constrained decoding is still read.

:func:`parse_json_answer` finds the JSON value in a plain-text answer (the fallback below
``json_schema``): the whole text, else the last balanced ``{...}`` that parses.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError
from pydantic_core import ErrorDetails, PydanticUndefined

from .completion import Completion

A = TypeVar("A", bound="Answer")


class Answer(BaseModel):
    """Base of every structured answer: unknown keys are refused unless a subclass says not."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def hint(default: Any = PydanticUndefined, **keywords: Any) -> Any:
    """A field (optional when given a ``default``) whose schema carries ``keywords``
    (``maxLength``, ``maxItems``, ``minItems``, ``enum``, ``description``): sent to guide
    decoding, not checked on reading."""
    return Field(default, json_schema_extra=keywords)


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("is blank")
    return value


#: ``Annotated[str, NOT_BLANK]``: a string that must hold more than whitespace (not in the schema)
NOT_BLANK = AfterValidator(_not_blank)

# --- the schema ---------------------------------------------------------------------------

_KEY_ORDER = (
    "type",
    "description",
    "enum",
    "minItems",
    "maxItems",
    "maxLength",
    "items",
    "properties",
    "required",
    "additionalProperties",
)
_DROPPED = frozenset({"title", "default", "$defs"})


def _nullable(options: list[dict[str, Any]]) -> list[str]:
    """``T | None`` (pydantic's ``anyOf``) as the list of types strict mode wants."""
    types = [o["type"] for o in options if set(o) == {"type"}]
    if len(types) != len(options):
        raise TypeError(f"unsupported union in an answer schema: {options}")
    return types


def _strict_node(node: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """One schema node in the strict form (``defs``: the models ``$ref`` points to)."""
    if "$ref" in node:
        return _strict_node(defs[node["$ref"].rsplit("/", 1)[-1]], defs)
    out = {k: v for k, v in node.items() if k not in _DROPPED}
    if "anyOf" in out:
        out["type"] = _nullable(out.pop("anyOf"))
    if "items" in out:
        out["items"] = _strict_node(out["items"], defs)
    if "properties" in out:  # an object: every property asked for; a docstring is not for it
        out["properties"] = {k: _strict_node(v, defs) for k, v in out["properties"].items()}
        out.pop("description", None)
        out["required"] = list(out["properties"])
        out["additionalProperties"] = False
    unknown = set(out) - set(_KEY_ORDER)
    if unknown:
        raise TypeError(f"unsupported keyword in an answer schema: {sorted(unknown)}")
    return {k: out[k] for k in _KEY_ORDER if k in out}


def json_schema(model: type[Answer]) -> dict[str, Any]:
    """The strict JSON schema of ``model`` (see the module docstring)."""
    raw = model.model_json_schema()
    return _strict_node(raw, raw.get("$defs", {}))


# --- reading ------------------------------------------------------------------------------


def _place(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "answer"


_KINDS = {
    "string_type": "a string",
    "int_type": "an integer",
    "list_type": "a list",
    "dict_type": "an object",
    "model_type": "an object",
    "bool_type": "a boolean",
    "float_type": "a number",
}


def _describe(error: ErrorDetails) -> str:
    where = _place(error["loc"])
    kind = error["type"]
    shown = str(error.get("input"))[:40]
    if kind == "missing":
        return f"missing {where}"
    if kind == "extra_forbidden":
        return f"unexpected key {where}"
    if kind == "literal_error":
        expected = str(error.get("ctx", {}).get("expected", "")).replace("'", "")
        expected = expected.replace(" or ", ", ")
        return f"{where} {shown!r} is not one of {expected}"
    if kind in _KINDS:
        return f"{where} is not {_KINDS[kind]}"
    if kind == "value_error":
        return f"{where} {error.get('ctx', {}).get('error', error['msg'])}"
    return f"{where}: {error['msg']}"


def validation_reason(error: ValidationError) -> str:
    """One line naming the first problem of an answer (and how many more there are)."""
    errors = error.errors(include_url=False)
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return _describe(errors[0]) + more


def read_answer(model: type[A], doc: Any) -> tuple[A | None, str | None]:
    """``(answer, None)`` when ``doc`` (a parsed JSON value) is a valid ``model``, else
    ``(None, reason)``."""
    try:
        return model.model_validate(doc, strict=True), None
    except ValidationError as e:
        return None, validation_reason(e)


def withheld(c: Completion) -> str | None:
    """Why the endpoint gave no answer to read (a refusal, its content filter), or None."""
    if c.refusal:
        return f"model refused: {c.refusal[:200]}"
    if c.finish_reason == "content_filter":
        return "answer withheld by the endpoint's content filter"
    return None


def structured_answer(
    c: Completion, model: type[A], what: str = "answer"
) -> tuple[A | None, str | None]:
    """``(answer, None)`` from a completion asked for ``model``, else ``(None, reason)``: the
    answer withheld, not JSON (``unparseable {what}: …``) or not the schema (``{what} outside
    the schema: …``), saying when it was cut at max_tokens. The structured answer the endpoint
    parsed is read first, else the JSON found in the text."""
    problem = withheld(c)
    if problem:
        return None, problem
    cut = " (truncated at max_tokens)" if c.finish_reason == "length" else ""
    doc = c.parsed
    if doc is None:
        doc, error = parse_json_answer(c.text)
        if doc is None:
            return None, f"unparseable {what}: {error}{cut}"
    answer, problem = read_answer(model, doc)
    if answer is None:
        return None, f"{what} outside the schema: {problem}{cut}"
    return answer, None


# --- JSON in plain text -------------------------------------------------------------------


def _balanced_objects(text: str) -> list[str]:
    """Top-level balanced ``{...}`` spans of ``text``, in order (strings inside are respected)."""
    spans: list[str] = []
    depth = start = 0
    in_string = escape = False
    for i, ch in enumerate(text):
        if in_string:
            if escape:
                escape = False
            elif ch == "\\":
                escape = True
            elif ch == '"':
                in_string = False
        elif ch == '"' and depth:
            in_string = True
        elif ch == "{":
            start = i if depth == 0 else start
            depth += 1
        elif ch == "}" and depth:
            depth -= 1
            if depth == 0:
                spans.append(text[start : i + 1])
    return spans


_FENCE = re.compile(r"^```[A-Za-z0-9_-]*\s*|\s*```$")


def _first_parse(candidates: list[str]) -> tuple[bool, Any]:
    for text in candidates:
        try:
            return True, json.loads(text)
        except ValueError:
            continue
    return False, None


def parse_json_answer(text: str) -> tuple[Any, str | None]:
    """The JSON value of an answer: the whole text, else the last balanced ``{...}`` that parses.

    Returns ``(value, None)`` or ``(None, reason)``.
    """
    stripped = text.strip()
    if stripped.startswith("```"):
        stripped = _FENCE.sub("", stripped)
    spans = _balanced_objects(text)
    found, value = _first_parse([stripped, *reversed(spans)])
    if found:
        return value, None
    if not stripped:
        return None, "empty answer"
    if spans:
        return None, "invalid JSON"
    if "{" in text:
        return None, "unterminated JSON object"
    return None, "no JSON object in the answer"


def schema_of(schema: type[Answer] | Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """A schema given as an :class:`Answer` model or as a ready mapping."""
    if isinstance(schema, type) and issubclass(schema, Answer):
        return json_schema(schema)
    return schema

"""One registry type for importers, policies and judges.

Plugins register by name with a decorator; third-party packages add theirs through the
entry-point groups ``ctxreplay.importers``, ``ctxreplay.policies`` and ``ctxreplay.judges``
(loaded lazily, on the first lookup). Parameters are frozen dataclasses, so a run manifest can
store ``name + params`` and rebuild the plugin from them.
"""

from __future__ import annotations

import contextlib
import dataclasses
import types
import typing
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib import import_module
from importlib.metadata import entry_points
from typing import Any, ClassVar, Generic, TypeVar

from .errors import CtxreplayError, ParameterError

T = TypeVar("T")


@dataclass(frozen=True)
class NoParams:
    """Parameters of a plugin that takes none."""


class UnknownPluginError(CtxreplayError, KeyError):
    """Raised for a name nobody registered; the message lists the names that exist."""

    def __str__(self) -> str:  # KeyError quotes its argument; we want a readable sentence
        return str(self.args[0])


class Registry(Generic[T]):
    """Name → plugin, filled by ``@registry.register(name)`` and by entry points."""

    def __init__(self, kind: str, group: str, builtins: tuple[str, ...] = ()) -> None:
        self.kind = kind
        self.group = group
        #: modules that register the built-in plugins, imported on the first lookup
        self.builtins = builtins
        self._items: dict[str, T] = {}
        self._entry_points_loaded = False

    def register(self, name: str) -> Callable[[T], T]:
        def decorate(obj: T) -> T:
            if name in self._items and self._items[name] is not obj:
                raise ValueError(f"{self.kind} {name!r} is already registered")
            self._items[name] = obj
            with contextlib.suppress(AttributeError, TypeError):
                obj.name = name  # type: ignore[attr-defined]
            return obj

        return decorate

    def _load_entry_points(self) -> None:
        if self._entry_points_loaded:
            return
        self._entry_points_loaded = True
        for module in self.builtins:
            import_module(module)
        for ep in entry_points(group=self.group):
            if ep.name not in self._items:
                obj = ep.load()
                self.register(ep.name)(obj)

    def get(self, name: str) -> T:
        if name not in self._items:
            self._load_entry_points()
        try:
            return self._items[name]
        except KeyError:
            known = ", ".join(sorted(self._items)) or "none"
            raise UnknownPluginError(f"unknown {self.kind} {name!r}; available: {known}") from None

    def names(self) -> list[str]:
        self._load_entry_points()
        return sorted(self._items)

    def items(self) -> Iterator[tuple[str, T]]:
        for name in self.names():
            yield name, self._items[name]

    def __contains__(self, name: object) -> bool:
        self._load_entry_points()
        return name in self._items

    def create(self, spec: str, **overrides: str) -> Any:
        """An instance from ``name:key=value,...`` (``overrides`` win over the spec)."""
        name, raw = parse_spec(spec)
        raw.update({k: v for k, v in overrides.items() if v is not None})
        cls: Any = self.get(name)
        try:
            return cls(parse_params(cls.Params, raw))
        except (ValueError, TypeError) as e:
            raise ParameterError(f"{self.kind} {name}: {e}") from None

    def rebuild(self, described: dict[str, Any]) -> Any:
        """The inverse of ``Plugin.describe()``: a manifest entry back into an instance."""
        cls: Any = self.get(described["name"])
        fields = {f.name for f in dataclasses.fields(cls.Params)}
        values = {
            k: tuple(v) if isinstance(v, list) else v
            for k, v in described.get("params", {}).items()
            if k in fields
        }
        return cls(cls.Params(**values))


class Plugin:
    """What policies and judges share: a name, typed parameters, a label and a description."""

    name: ClassVar[str] = ""
    Params: ClassVar[type] = NoParams
    #: parameters that say how a plugin runs (its model endpoint, its cache), not what it
    #: decides: left out of the label, so results survive a new URL or cache folder
    operational: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, params: Any = None) -> None:
        self.params = params if params is not None else self.Params()

    @property
    def label(self) -> str:
        return params_label(self.name, self.params, self.operational)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "label": self.label, "params": params_to_dict(self.params)}


# --- typed parameters -------------------------------------------------------------------------


def _coerce(raw: str, tp: Any, field_name: str) -> Any:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        non_none = [a for a in args if a is not type(None)]
        if raw.lower() in ("none", "null", ""):
            return None
        return _coerce(raw, non_none[0], field_name)
    if origin is typing.Literal:
        if raw not in args:
            raise ParameterError(
                f"{field_name} must be one of {', '.join(map(str, args))}; got {raw!r}"
            )
        return raw
    if origin in (tuple, list):
        inner = args[0] if args else str
        items = [s for s in raw.replace(";", "|").split("|") if s != ""]
        return tuple(_coerce(s, inner, field_name) for s in items)
    if tp is bool:
        low = raw.lower()
        if low in ("1", "true", "yes", "on"):
            return True
        if low in ("0", "false", "no", "off"):
            return False
        raise ParameterError(f"{field_name} must be true or false; got {raw!r}")
    if tp is int:
        return int(raw.replace("_", ""))
    if tp is float:
        return float(raw.replace("_", ""))
    return raw


def parse_params(params_type: type[Any], values: dict[str, str]) -> Any:
    """Build a params dataclass from ``key=value`` strings, coercing by the declared types."""
    hints = typing.get_type_hints(params_type)
    fields = {f.name: f for f in dataclasses.fields(params_type)}
    kwargs: dict[str, Any] = {}
    for key, raw in values.items():
        name = key.replace("-", "_")
        if name not in fields:
            known = ", ".join(fields) or "none"
            raise ParameterError(f"unknown parameter {key!r}; parameters: {known}")
        kwargs[name] = _coerce(raw, hints[name], name)
    return params_type(**kwargs)


def parse_spec(spec: str) -> tuple[str, dict[str, str]]:
    """Split ``name:key=value,key=value`` into the name and its raw parameters."""
    name, _, rest = spec.partition(":")
    values: dict[str, str] = {}
    for item in filter(None, (s.strip() for s in rest.split(","))):
        key, sep, value = item.partition("=")
        if not sep:
            raise ParameterError(f"parameter {item!r} in {spec!r} is not key=value")
        values[key.strip()] = value.strip()
    return name.strip(), values


def params_to_dict(params: Any) -> dict[str, Any]:
    return {f.name: getattr(params, f.name) for f in dataclasses.fields(params)}


def params_label(name: str, params: Any, ignore: frozenset[str] = frozenset()) -> str:
    """Canonical label: the name plus every parameter that differs from its default (``ignore``:
    parameters that say how a plugin runs, not what it does)."""
    changed = []
    for f in dataclasses.fields(params):
        if f.name in ignore:
            continue
        value = getattr(params, f.name)
        default = (
            f.default
            if f.default is not dataclasses.MISSING
            else f.default_factory()  # type: ignore[misc]
            if f.default_factory is not dataclasses.MISSING
            else dataclasses.MISSING
        )
        if value != default:
            shown = "|".join(map(str, value)) if isinstance(value, tuple) else value
            changed.append(f"{f.name}={shown}")
    return f"{name}:{','.join(changed)}" if changed else name


def describe_params(params_type: type[Any]) -> list[tuple[str, str, Any]]:
    """(name, type, default) of each parameter, for ``ctxreplay policies`` and friends."""
    hints = typing.get_type_hints(params_type)
    rows = []
    for f in dataclasses.fields(params_type):
        default = f.default if f.default is not dataclasses.MISSING else None
        tp = hints[f.name]
        rows.append((f.name, getattr(tp, "__name__", str(tp)).replace("typing.", ""), default))
    return rows

"""One registry type for importers, policies and judges.

A built-in plugin is declared in its module, which registers it with the kind's decorator
(``@policy("tool-prune")``, ``@judge("flow")``, ``@importers.register("codex-cli")``), and in the
kind's one map of built-ins, ``BUILTIN``: name → ``"module:Class"`` (``policies/base.py``,
``judges/base.py``, ``datasets/importers/__init__.py``). The map lets a lookup import only the
module it names: ``names()`` reads the map and the entry-point metadata and imports no plugin,
``get(name)`` imports that plugin's module alone, and only ``items()`` imports them all. The
registry checks that the two agree: the map's object is registered, under the map's name.

Third-party packages add plugins through entry points in the groups ``ctxreplay.policies``,
``ctxreplay.judges`` and ``ctxreplay.importers`` (``name = "module:Class"``; the class needs no
decorator, the entry point names it). An entry point is loaded when its name is asked for. A
plugin imports what it needs from its kind's package: ``ctxreplay.policies``,
``ctxreplay.judges``, ``ctxreplay.datasets.importers`` (their ``__all__``).

Names are never shadowed. An entry point whose name is a built-in's, two entry points of one name
(from two distributions), or an object registered in-process under a name another object holds,
is refused with a :class:`PluginClashError` naming both sides and the distribution; every lookup
in that registry then fails the same way until one is renamed or uninstalled (a built-in lookup
too: which plugin a name means must not depend on which name was asked for first). An entry
point that names the built-in's own object is not a clash.

Parameters are frozen dataclasses, so a run manifest can store ``name + params`` and rebuild the
plugin from them.

Every plugin declares its parameters one way: a ``Params`` frozen dataclass nested in the plugin
class, each field made by :func:`param` with its default, a one-line meaning and its range::

    @policy("tool-prune")
    class ToolPrune(Policy):
        @dataclass(frozen=True)
        class Params(BudgetParams):
            keep: int = param(3, "most recent tool uses whose results stay", ge=0)

:func:`check_params` enforces the ranges (and ``Literal`` choices) whenever a plugin is built —
``Plugin.__init__`` runs it, so ``Registry.create``, ``Registry.rebuild`` and direct construction
all refuse ``keep=-1`` with a :class:`~ctxreplay.errors.ParameterError` naming the plugin, the
parameter, the range and the value. :func:`describe_params` gives each parameter's type, default,
range and meaning (``ctxreplay policies``, ``ctxreplay judges``). A field declared without
:func:`param` (the model-endpoint parameters, a third party's plain dataclass) simply has no
meaning and no range.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import re
import sys
import types
import typing
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from importlib import import_module
from typing import TYPE_CHECKING, Any, ClassVar, Generic, NamedTuple, TypeVar

from .errors import CtxreplayError, ParameterError

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

T = TypeVar("T")


@dataclass(frozen=True)
class NoParams:
    """Parameters of a plugin that takes none."""


class UnknownPluginError(CtxreplayError, KeyError):
    """Raised for a name nobody registered; the message lists the names that exist."""

    def __str__(self) -> str:  # KeyError quotes its argument; we want a readable sentence
        return str(self.args[0])


class PluginClashError(CtxreplayError, ValueError):
    """Two plugins claim one name; neither is used until one is renamed or uninstalled."""


def target_of(obj: Any) -> str:
    """``module:QualifiedName`` of a class or function, as entry points and ``BUILTIN`` write
    it."""
    return f"{getattr(obj, '__module__', '?')}:{getattr(obj, '__qualname__', type(obj).__name__)}"


def load_target(target: str) -> Any:
    """The object that ``module:Name`` (or ``module:Outer.Inner``) names, its module imported."""
    module, _, attribute = target.partition(":")
    value: Any = import_module(module)
    for part in filter(None, attribute.split(".")):
        value = getattr(value, part)
    return value


def lazy_exports(
    package: str, homes: Mapping[str, Sequence[str | tuple[str, str]]]
) -> Callable[[str], Any]:
    """A package's ``__getattr__`` (PEP 562) that imports a name's module when the name is first
    used: a plugin kit re-exported from a package costs nothing until a plugin reads it.
    ``homes``: each module → the names it gives (``(public, its name there)`` to rename)."""
    where = {
        (n if isinstance(n, str) else n[0]): (module, n if isinstance(n, str) else n[1])
        for module, names in homes.items()
        for n in names
    }

    def __getattr__(name: str) -> Any:
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, attribute = where[name]
        value = getattr(import_module(module), attribute)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__


def _distribution(ep: EntryPoint) -> str:
    dist = getattr(ep, "dist", None)
    return f"distribution {dist.name!r}" if dist is not None else "an installed distribution"


class Registry(Generic[T]):
    """Name → plugin: the built-in map, entry points and ``@registry.register(name)``.

    ``builtins`` is the kind's ``BUILTIN`` map (name → ``"module:Class"``), or where to find it
    (``"package.module:BUILTIN"``, read on the first lookup) when it is declared in a module that
    imports the one holding the registry.
    """

    def __init__(
        self, kind: str, group: str, builtins: Mapping[str, str] | str | None = None
    ) -> None:
        self.kind = kind
        self.group = group
        self._declared = builtins
        self._builtins: dict[str, str] | None = (
            None if isinstance(builtins, str) else dict(builtins or {})
        )
        #: what ``register`` was given (decorators, loaded entry points)
        self._items: dict[str, T] = {}
        #: names whose object ``get`` found and checked
        self._checked: set[str] = set()
        #: the group's entry points by name, read once, clashes refused
        self._entry_points: dict[str, EntryPoint] | None = None

    @property
    def builtins(self) -> Mapping[str, str]:
        """Built-in name → ``"module:Class"``."""
        if self._builtins is None:
            self._builtins = dict(load_target(str(self._declared)))
        return self._builtins

    def register(self, name: str) -> Callable[[T], T]:
        def decorate(obj: T) -> T:
            held = self._items.get(name)
            if held is not None and held is not obj:
                raise PluginClashError(
                    f"{self.kind} {name!r} is already registered ({target_of(held)}); "
                    f"{target_of(obj)} may not take the name"
                )
            self._items[name] = obj
            with contextlib.suppress(AttributeError, TypeError):
                obj.name = name  # type: ignore[attr-defined]
            return obj

        return decorate

    def entry_points(self) -> Mapping[str, EntryPoint]:
        """The group's entry points by name (their metadata only: no plugin is imported).

        Raises :class:`PluginClashError` for one whose name is a built-in's or another's."""
        if self._entry_points is None:
            from importlib.metadata import entry_points

            found: dict[str, EntryPoint] = {}
            for ep in entry_points(group=self.group):
                builtin = self.builtins.get(ep.name)
                if builtin == ep.value:  # the built-in itself, declared again
                    continue
                if builtin is not None:
                    raise PluginClashError(
                        f"the {self.kind} {ep.name!r} of {_distribution(ep)} ({ep.value}, entry "
                        f"point group {self.group}) clashes with the built-in {self.kind} "
                        f"{ep.name!r} ({builtin}): a plugin may not take a built-in's name; "
                        "rename its entry point or uninstall it"
                    )
                other = found.get(ep.name)
                if other is not None and other.value != ep.value:
                    raise PluginClashError(
                        f"the {self.kind} {ep.name!r} is claimed by {_distribution(other)} "
                        f"({other.value}) and by {_distribution(ep)} ({ep.value}) in entry point "
                        f"group {self.group}: rename one or uninstall one"
                    )
                found[ep.name] = ep
            self._entry_points = found
        return self._entry_points

    def get(self, name: str) -> T:
        if name in self._checked:
            return self._items[name]
        plugins = self.entry_points()
        if name in self.builtins:
            obj = self._builtin(name)
        elif name in plugins:
            obj = self.register(name)(plugins[name].load())
        elif name in self._items:
            obj = self._items[name]
        else:
            known = ", ".join(self.names()) or "none"
            raise UnknownPluginError(f"unknown {self.kind} {name!r}; available: {known}")
        self._checked.add(name)
        return obj

    def _builtin(self, name: str) -> T:
        """The built-in ``name``, its module imported; it must have registered itself."""
        target = self.builtins[name]
        if name not in self._items:
            loaded = load_target(target)
            if self._items.get(name) is not loaded:
                raise LookupError(
                    f"built-in {self.kind} {name!r}: {target} does not register itself under "
                    f"that name (its decorator and {self.kind} BUILTIN must agree)"
                )
        held = self._items[name]
        if target_of(held) != target:
            raise PluginClashError(
                f"the {self.kind} {name!r} is built in ({target}); {target_of(held)} registered "
                "the name too: a plugin may not take a built-in's name"
            )
        return held

    def names(self) -> list[str]:
        """Every name: built-in, entry point or registered (no plugin module is imported)."""
        return sorted({*self.builtins, *self.entry_points(), *self._items})

    def items(self) -> Iterator[tuple[str, T]]:
        """Every plugin by name (this imports them all)."""
        for name in self.names():
            yield name, self.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self.names()

    def create(self, spec: str, **overrides: str) -> Any:
        """An instance from ``name:key=value,...`` (``overrides`` win over the spec)."""
        name, raw = parse_spec(spec)
        raw.update({k: v for k, v in overrides.items() if v is not None})
        cls: Any = self.get(name)
        try:
            return cls(parse_params(cls.Params, raw))
        except (ValueError, TypeError) as e:
            raise self._named(name, e) from None

    def rebuild(self, described: dict[str, Any]) -> Any:
        """The inverse of ``Plugin.describe()``: a manifest entry back into an instance (its
        values checked against the declared ranges, as ``create`` checks them)."""
        name = described["name"]
        cls: Any = self.get(name)
        fields = {f.name for f in dataclasses.fields(cls.Params)}
        values = {
            k: tuple(v) if isinstance(v, list) else v
            for k, v in described.get("params", {}).items()
            if k in fields
        }
        try:
            return cls(cls.Params(**values))
        except (ValueError, TypeError) as e:
            raise self._named(name, e) from None

    def _named(self, name: str, e: Exception) -> ParameterError:
        """``e`` as a ParameterError that names the plugin (once: ``Plugin.__init__`` may have)."""
        prefix = f"{self.kind} {name}: "
        text = str(e)
        return ParameterError(text if text.startswith(prefix) else prefix + text)


class Plugin:
    """What policies and judges share: a name, typed parameters, a label and a description."""

    name: ClassVar[str] = ""
    #: what the plugin is, in messages ("policy", "judge")
    kind: ClassVar[str] = "plugin"
    Params: ClassVar[type] = NoParams
    #: parameters that say how a plugin runs (its model endpoint, its cache), not what it
    #: decides: left out of the label, so results survive a new URL or cache folder
    operational: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, params: Any = None) -> None:
        self.params = params if params is not None else self.Params()
        try:
            check_params(self.params)
        except ParameterError as e:
            raise ParameterError(f"{self.kind} {self.name}: {e}") from None

    @property
    def label(self) -> str:
        return params_label(self.name, self.params, self.operational)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "label": self.label, "params": params_to_dict(self.params)}


# --- typed parameters -------------------------------------------------------------------------

#: ``dataclasses.field`` metadata keys that :func:`param` sets
HELP, RANGE = "help", "range"


@dataclass(frozen=True)
class Range:
    """The values a parameter accepts: numeric bounds, or a set of choices."""

    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    choices: tuple[Any, ...] | None = None

    def __bool__(self) -> bool:
        return any(v is not None for v in (self.ge, self.gt, self.le, self.choices))

    def __str__(self) -> str:
        """``>= 0``, ``> 0``, ``[0, 1]``, ``(0, 1]``, ``<= 1``, ``prune | fold``; empty: any."""
        if self.choices is not None:
            return " | ".join(map(str, self.choices))
        low = self.ge if self.ge is not None else self.gt
        if low is not None and self.le is not None:
            return f"{'[' if self.ge is not None else '('}{_num(low)}, {_num(self.le)}]"
        if low is not None:
            return f"{'>=' if self.ge is not None else '>'} {_num(low)}"
        if self.le is not None:
            return f"<= {_num(self.le)}"
        return ""

    def problem(self, value: Any, whole: bool = False) -> str | None:
        """Why ``value`` is out of this range (``whole``: the type is ``int``), or None."""
        if self.choices is not None:
            return None if value in self.choices else f"must be one of {self}"
        if not self:
            return None
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if not number or (whole and not isinstance(value, int)):
            return f"must be a {'whole ' if whole else ''}number {self}"
        ok = (
            not math.isnan(value)
            and (self.ge is None or value >= self.ge)
            and (self.gt is None or value > self.gt)
            and (self.le is None or value <= self.le)
        )
        if ok:
            return None
        return f"must be in {self}" if self.le is not None else f"must be {self}"


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


def param(
    default: Any = dataclasses.MISSING,
    help: str = "",
    *,
    ge: float | None = None,
    gt: float | None = None,
    le: float | None = None,
    choices: Sequence[Any] | None = None,
    default_factory: Callable[[], Any] | Any = dataclasses.MISSING,
) -> Any:
    """A plugin parameter: ``name: type = param(default, "one-line meaning", ge=0)``.

    ``ge``/``gt``/``le`` bound a number (``None``, for an optional parameter, is always
    accepted); ``choices`` lists the accepted values (a ``Literal`` type gives them by itself).
    Returns a ``dataclasses.field`` with the meaning and range in its metadata, so defaults,
    labels and manifests are those of a plain default."""
    metadata = {
        HELP: help,
        RANGE: Range(ge, gt, le, tuple(choices) if choices is not None else None),
    }
    if default_factory is not dataclasses.MISSING:
        return dataclasses.field(default_factory=default_factory, metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


class ParamInfo(NamedTuple):
    """One parameter as ``ctxreplay policies`` shows it."""

    name: str
    type: str  # as written: int, float, str, int | None, tuple[str, ...]
    default: Any
    help: str  # the one-line meaning ("" when not declared with ``param``)
    range: str  # ">= 0", "[0, 1]", "prune | fold" ("" when any value of the type goes)

    def line(self) -> str:
        """``name (type, default D, range R): meaning``."""
        shown = [self.type, f"default {self.default!r}"]
        if self.range:
            shown.append(f"range {self.range}")
        return f"{self.name} ({', '.join(shown)})" + (f": {self.help}" if self.help else "")


_HINTS: dict[type[Any], dict[str, Any]] = {}


def _hints(params_type: type[Any]) -> dict[str, Any]:
    """The resolved field types of a params class (resolved once per class)."""
    if params_type not in _HINTS:
        _HINTS[params_type] = typing.get_type_hints(params_type)
    return _HINTS[params_type]


def _range_of(f: dataclasses.Field[Any], tp: Any) -> Range:
    declared: Range | None = f.metadata.get(RANGE)
    if declared:
        return declared
    if typing.get_origin(tp) is typing.Literal:
        return Range(choices=typing.get_args(tp))
    return Range()


def _type_name(tp: Any) -> str:
    if typing.get_origin(tp) is typing.Literal:
        return " | ".join(sorted({type(a).__name__ for a in typing.get_args(tp)}))
    if isinstance(tp, type) and not typing.get_args(tp):
        return tp.__name__
    return str(tp).replace("typing.", "")


def _allows_none(tp: Any) -> bool:
    return typing.get_origin(tp) in (typing.Union, types.UnionType) and type(None) in (
        typing.get_args(tp)
    )


def _is_int(tp: Any) -> bool:
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        return all(a in (int, type(None)) for a in typing.get_args(tp))
    return tp is int


def _default(f: dataclasses.Field[Any]) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return None


def check_params(params: Any) -> None:
    """Raise :class:`ParameterError` for the first parameter outside its declared range (or its
    ``Literal`` choices): ``keep must be >= 0; got -1``."""
    hints = _hints(type(params))
    for f in dataclasses.fields(params):
        tp = hints.get(f.name)
        allowed = _range_of(f, tp)
        value = getattr(params, f.name)
        if not allowed or (value is None and _allows_none(tp)):
            continue
        problem = allowed.problem(value, whole=_is_int(tp))
        if problem:
            raise ParameterError(f"{f.name} {problem}; got {value!r}")


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
            raise ParameterError(f"{field_name} must be one of {Range(choices=args)}; got {raw!r}")
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
    if tp in (int, float):
        try:
            return tp(raw.replace("_", ""))
        except ValueError:
            kind = "an integer" if tp is int else "a number"
            raise ParameterError(f"{field_name} must be {kind}; got {raw!r}") from None
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
    params = params_type(**kwargs)
    check_params(params)
    return params


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
            else f.default_factory()
            if f.default_factory is not dataclasses.MISSING
            else dataclasses.MISSING
        )
        if value != default:
            shown = "|".join(map(str, value)) if isinstance(value, tuple) else value
            changed.append(f"{f.name}={shown}")
    return f"{name}:{','.join(changed)}" if changed else name


def describe_params(params_type: type[Any]) -> list[ParamInfo]:
    """Name, type, default, range and meaning of each parameter, for ``ctxreplay policies``,
    ``ctxreplay judges`` and grid checks."""
    hints = _hints(params_type)
    return [
        ParamInfo(
            f.name,
            _type_name(hints[f.name]),
            _default(f),
            str(f.metadata.get(HELP, "")),
            str(_range_of(f, hints[f.name])),
        )
        for f in dataclasses.fields(params_type)
    ]


# --- one-line descriptions ----------------------------------------------------------------------

_ROLE = re.compile(r":[a-z]+(?::[a-z]+)?:`~?([^`]*)`")  # :func:`x`, :py:class:`~a.B`
_LITERAL = re.compile(r"``([^`]*)``|`([^`]*)`")
_EMPHASIS = re.compile(r"\*\*([^*]+)\*\*|\*([^*\s][^*]*)\*")
_ABBREVIATIONS = ("e.g.", "i.e.", "et al.", "etc.", "vs.", "cf.")


def plain_text(rst: str) -> str:
    """RST markup as plain text: ``x`` and :func:`y` → x and y (``~a.b.C`` → C)."""

    def role(m: re.Match[str]) -> str:
        target = m.group(1)
        return target.rsplit(".", 1)[-1] if m.group(0).split("`")[1].startswith("~") else target

    text = _ROLE.sub(role, rst)
    text = _LITERAL.sub(lambda m: m.group(1) if m.group(1) is not None else m.group(2), text)
    return _EMPHASIS.sub(lambda m: m.group(1) or m.group(2), text)


def first_sentence(doc: str | None) -> str:
    """The first sentence of a docstring, whole, on one line and in plain text: it ends at a
    full stop outside brackets that ends the first paragraph or is followed by a capital."""
    paragraph = " ".join((doc or "").strip().split("\n\n", 1)[0].split())
    text = plain_text(paragraph)
    depth = 0
    for i, ch in enumerate(text):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth = max(0, depth - 1)
        elif ch in ".!?" and depth == 0:
            rest = text[i + 1 :]
            if rest and not (rest[0] == " " and rest[1:2].isupper()):
                continue
            if text[: i + 1].endswith(_ABBREVIATIONS):
                continue
            return text[: i + 1]
    return text


def plugin_lines(name: str, cls: Any) -> list[str]:
    """``name: first sentence`` and one indented line per parameter (``ParamInfo.line``)."""
    return [f"{name}: {first_sentence(cls.__doc__)}"] + [
        f"    {info.line()}" for info in describe_params(cls.Params)
    ]

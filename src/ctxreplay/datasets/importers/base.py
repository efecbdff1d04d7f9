"""What every importer shares: the plugin contract and small helpers for reading records.

An importer turns one file into ``Session`` objects and ``Reject`` records. It never raises for
bad content: a record it cannot read becomes a reject carrying the file, the record index or line,
the JSON path, the reason and the record's exact bytes, and reading goes on with the next record.
Any exception while a record is read, converted or validated (a recursion limit, an overflow, a
bug) becomes a reject of that record; nothing a record holds can stop the file.

Every importer counts what it reads in its ``tally``: records seen (JSONL lines, array elements,
the document, or the units a format is made of: tau2 simulations, OTel spans) and records skipped
by reason (``rejects.SKIPS``), so the import can check that each record seen became a session, a
reject or a counted skip.

Records come from ``reader`` (tolerant, streaming JSON), times from ``times``, content parts
from ``parts``.
"""

from __future__ import annotations

import re
import typing
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, ClassVar, TypeVar, overload

from ...registry import Registry
from ..messages import Session
from ..rejects import RecordError, Reject, Tally, clip
from ..validate import MAX_MESSAGE_BYTES, validate_session
from .reader import iter_records, whole_document
from .records import Record, source_id_of

#: a UUID, as agents name their session files with one
UUID_PATTERN = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.I)


def uuid_in_name(path: Path) -> str:
    """The session id a log's file name carries (its last UUID), else the name itself."""
    found = UUID_PATTERN.findall(path.stem)
    return found[-1] if found else path.stem


def raising(e: Exception) -> list[Session]:
    """A ``guarded`` producer that fails with ``e``: a record already known bad becomes its reject."""
    raise e


def exception_reason(e: BaseException) -> tuple[str, str]:
    """The reject reason and detail of an exception raised while reading one record."""
    if isinstance(e, RecordError):
        return e.reason, e.detail
    if isinstance(e, RecursionError):
        return "nesting_too_deep", f"the record nests too deep to read ({e})"
    if isinstance(e, OverflowError):
        return "out_of_range", f"a number is out of range: {e}"
    if isinstance(e, TypeError | KeyError | AttributeError | ValueError | IndexError):
        return "malformed", clip(f"{type(e).__name__}: {e}")
    return "import_error", clip(f"{type(e).__name__}: {e}")


class Importer:
    """Base class of importers; subclasses register with ``@importers.register(name)``."""

    name: ClassVar[str] = ""
    #: file endings this format uses (for detection; content decides, the ending only helps)
    suffixes: ClassVar[tuple[str, ...]] = (".json", ".jsonl")
    #: more general formats whose files this one's may also be: where this importer is sure of
    #: a file, they step back (``importers.scores``)
    refines: ClassVar[tuple[str, ...]] = ()

    #: set by the caller; a larger message rejects its session (``oversize_message``)
    max_message_bytes: int = MAX_MESSAGE_BYTES
    #: a tool result whose call is not in the session: ``reject`` it, or keep it ``as_text``
    #: (formats whose logs legitimately start after calls: ``validate.validate_session``)
    orphan_results: ClassVar[str] = "reject"

    @property
    def tally(self) -> Tally:
        """Records seen and skipped since this importer was made (one importer reads one file)."""
        found = self.__dict__.get("_tally")
        if found is None:
            found = self.__dict__["_tally"] = Tally()
        return found

    def sniff(self, path: Path, head: bytes) -> float:
        """Confidence in [0, 1] that ``path`` is in this format, from its first bytes.

        Built-in importers parse the first records (``sniffing.sample_of``) and score their keys
        and shapes, never substrings of the text.
        """
        return 0.0

    def read(self, path: Path) -> Iterator[Session | Reject]:
        """Yield sessions and rejects; never raise for bad content."""
        for record in self.records(path):
            if isinstance(record, Reject):
                yield record
                continue
            yield from self.guarded(
                path, record, lambda rec=record: self.sessions_from_record(path, rec)
            )

    def records(self, path: Path, check_utf8: bool = True) -> Iterator[Record | Reject]:
        """The file's records (``iter_records``), each counted as seen."""
        for record in iter_records(path, self.name, check_utf8):
            self.tally.seen += 1
            yield record

    def document(self, path: Path, check_utf8: bool = True) -> Record | Reject:
        """The whole file as one record, counted as seen."""
        self.tally.seen += 1
        return whole_document(path, self.name, check_utf8)

    def sessions_from_record(self, path: Path, record: Record) -> Iterator[Session]:
        """Sessions of one record; an importer overrides this, or ``read`` as a whole."""
        raise TypeError(f"{type(self).__name__} overrides neither sessions_from_record nor read")

    def guarded(
        self, path: Path, record: Record, produce: Callable[..., Iterable[Session]]
    ) -> Iterator[Session | Reject]:
        """Run ``produce()``, validate what it made, and turn any failure into a reject."""
        try:
            sessions = [self.validated(s) for s in produce()]
        except Exception as e:
            reason, detail = exception_reason(e)
            where = e.json_path if isinstance(e, RecordError) else "$"
            yield self.reject(path, record, reason, detail, where)
            return
        self.tally.seen += max(0, len(sessions) - 1)  # a record of k sessions counts as k
        if not sessions:
            self.tally.skip("no_session")
        yield from sessions

    def validated(self, session: Session) -> Session:
        """``validate_session`` with this importer's limits and orphan rule."""
        return validate_session(session, self.max_message_bytes, self.orphan_results)

    def reject(
        self,
        path: Path,
        record: Record | None,
        reason: str,
        detail: str,
        json_path: str | None = None,
    ) -> Reject:
        source_id = source_id_of(record.value) if record is not None else None
        return Reject(
            source_location=str(path),
            reason=reason,
            detail=clip(detail),
            raw=record.raw if record is not None else b"",
            source_format=self.name,
            record=record.index if record is not None else None,
            line=record.line if record is not None else None,
            session_id=source_id,
            json_path=json_path,
        )


#: the built-in formats are the package's ``BUILTIN`` map (``importers/__init__.py``)
importers: Registry[type[Importer]] = Registry(
    "importer", "ctxreplay.importers", "ctxreplay.datasets.importers:BUILTIN"
)


_T = TypeVar("_T")


@overload
def expect(value: Any, types: type[_T], json_path: str, what: str = "value") -> _T: ...


@overload
def expect(value: Any, types: tuple[type, ...], json_path: str, what: str = "value") -> Any: ...


def expect(value: Any, types: type | tuple[type, ...], json_path: str, what: str = "value") -> Any:
    """``value`` if it has one of ``types``, else a ``wrong_type`` record error."""
    classes = _as_tuple(types)
    if not isinstance(value, classes) or (isinstance(value, bool) and bool not in classes):
        names = "/".join(t.__name__ for t in classes)
        raise RecordError(
            "wrong_type", f"{what} should be {names}, got {type(value).__name__}", json_path
        )
    return value


def require(obj: dict[str, Any], key: str, json_path: str) -> Any:
    """``obj[key]``, or a ``missing_field`` record error when the field is absent."""
    if key not in obj:
        raise RecordError("missing_field", f"field {key!r} is required", json_path)
    return obj[key]


def _as_tuple(types: Any) -> tuple[type, ...]:
    """``str``, ``(str, int)`` or ``str | int`` as a tuple of classes."""
    if isinstance(types, tuple):
        return types
    args = typing.get_args(types)
    return tuple(args) if args else (types,)

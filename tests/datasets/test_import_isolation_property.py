"""Property tests of import isolation: whatever JSON values, depths, numbers and bytes a file holds,
reading it never raises and every record seen becomes a session, a reject or a counted skip
(records seen = sessions + rejects + skipped); the corpus writer stores whatever validation let
through."""

from __future__ import annotations

import json
import math
import random
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxreplay.datasets.ingest import account_file, import_paths
from ctxreplay.datasets.messages import Session
from ctxreplay.datasets.rejects import REASONS, Reject
from ctxreplay.datasets.store import Corpus

from builders import FIXTURES

FORMATS = {  # format: a fixture of it
    "openai-chat": FIXTURES / "openai_chat" / "sessions.json",
    "anthropic-messages": FIXTURES / "anthropic" / "sessions.jsonl",
    "tau-bench": FIXTURES / "tau-bench" / "gpt-test-airline.json",
    "tau2-bench": FIXTURES / "tau2-bench" / "results_small.json",
    "swe-agent": FIXTURES / "swe-agent" / "function_calling.traj",
    "openhands": FIXTURES / "openhands" / "output_small.jsonl",
    "otel-genai": FIXTURES / "otel" / "flat_spans.jsonl",
}
FAST = settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

#: leaves that broke imports before: huge and negative integers, NaN and infinities, odd text
LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.sampled_from([2**63, 2**64 + 1, -(2**63) - 1, 10**30]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([math.nan, math.inf, -math.inf, 1e30, -1e30]),
    st.text(max_size=20),
    st.sampled_from(["", "user", "assistant", "tool", "system", "tool_use", "ActionEvent"]),
)
KEYS = ["role", "content", "messages", "id", "type", "kind", "history", "traj", "attributes",
        "tool_calls", "usage", "timestamp", "x"]  # fmt: skip
KEYS = ["role", "content", "messages", "id", "type", "kind", "history", "traj", "attributes",
        "tool_calls", "usage", "timestamp", "x"]  # fmt: skip
JSON = st.recursive(
    LEAVES,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(KEYS), inner, max_size=5)
    ),
    max_leaves=25,
)


def _take(item: Session | Reject) -> Reject | int:
    if isinstance(item, Reject):
        assert item.reason in REASONS, item.reason
        assert isinstance(item.detail, str) and isinstance(item.raw, bytes)
        return item
    assert item.messages
    return len(item.messages)


def _account(path: Path, fmt: str) -> None:
    account = account_file(path, fmt, _take)
    assert account.records >= 1
    assert account.unaccounted == 0, account
    assert not account.incomplete, account  # no importer bug stopped the file


def _records(fmt: str) -> list[Any]:
    """The fixture's records as parsed values (for the line and array formats)."""
    path = FORMATS[fmt]
    if path.suffix == ".jsonl":
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    value = json.loads(path.read_text())
    return value if isinstance(value, list) else [value]


def _positions(value: Any, out: list[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
    if isinstance(value, dict):
        for k in list(value):
            out.append((value, k))
            _positions(value[k], out)
    elif isinstance(value, list):
        for i in range(len(value)):
            out.append((value, i))
            _positions(value[i], out)
    return out


def _write(fmt: str, records: list[Any], folder: Path) -> Path:
    source = FORMATS[fmt]
    path = folder / source.name
    texts = [json.dumps(r) for r in records]
    if source.suffix == ".jsonl":
        path.write_text("\n".join(texts) + "\n")
    elif len(records) == 1 and fmt in ("tau2-bench", "swe-agent"):
        path.write_text(texts[0])
    else:
        path.write_text("[\n" + ",\n".join(texts) + "\n]\n")
    return path


@FAST
@given(fmt=st.sampled_from(sorted(FORMATS)), value=JSON, seed=st.integers(0, 2**32 - 1))
def test_any_value_anywhere_is_isolated(fmt: str, value: Any, seed: int) -> None:
    """A random JSON value put in place of any field of a valid record."""
    rng = random.Random(seed)
    records = _records(fmt)
    target = rng.randrange(len(records))
    positions = _positions(records[target], [])
    if positions:
        container, key = rng.choice(positions)
        container[key] = value
    else:
        records[target] = value
    with tempfile.TemporaryDirectory() as tmp:
        _account(_write(fmt, records, Path(tmp)), fmt)


@FAST
@given(fmt=st.sampled_from(sorted(FORMATS)), depth=st.integers(150, 4000), seed=st.integers(0, 99))
def test_any_depth_anywhere_is_isolated(fmt: str, depth: int, seed: int) -> None:
    rng = random.Random(seed)
    records = _records(fmt)
    container, key = rng.choice(_positions(records[rng.randrange(len(records))], []))
    container[key] = "@DEEP@"
    with tempfile.TemporaryDirectory() as tmp:
        path = _write(fmt, records, Path(tmp))
        opener, closer = rng.choice([("[", "]"), ('{"a":', "}")])
        nested = opener * depth + "1" + closer * depth
        path.write_text(path.read_text().replace('"@DEEP@"', nested, 1))
        _account(path, fmt)


BAD_BYTES = [b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xfe\xff", b"\x00", b"\xef\xbb\xbf", b"\\ud800"]


@FAST
@given(
    fmt=st.sampled_from(sorted(FORMATS)),
    kind=st.sampled_from(["insert", "truncate", "flip", "delete"]),
    seed=st.integers(0, 2**32 - 1),
)
def test_any_byte_damage_is_isolated(fmt: str, kind: str, seed: int) -> None:
    rng = random.Random(seed)
    data = FORMATS[fmt].read_bytes()
    at = rng.randrange(len(data))
    if kind == "insert":
        data = data[:at] + rng.choice(BAD_BYTES) + data[at:]
    elif kind == "truncate":
        data = data[:at]
    elif kind == "delete":
        data = data[:at] + data[at + rng.randint(1, 40) :]
    else:
        damaged = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            damaged[rng.randrange(len(damaged))] ^= rng.randint(1, 255)
        data = bytes(damaged)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / FORMATS[fmt].name
        path.write_bytes(data)
        _account(path, fmt)


@settings(max_examples=12, deadline=None, derandomize=True)
@given(fmt=st.sampled_from(sorted(FORMATS)), value=JSON, seed=st.integers(0, 2**32 - 1))
def test_whatever_is_accepted_is_stored(fmt: str, value: Any, seed: int) -> None:
    """Through the whole import (writer included): never raises, the manifest balances."""
    rng = random.Random(seed)
    records = _records(fmt)
    container, key = rng.choice(_positions(records[0], []))
    container[key] = value
    with tempfile.TemporaryDirectory() as tmp:
        path = _write(fmt, records, Path(tmp))
        summary = import_paths([path], Path(tmp) / "c", fmt=fmt, progress=False)
        assert summary.unaccounted == 0
        (source,) = Corpus(Path(tmp) / "c").manifest["sources"]
        assert source["records"] == (
            source["sessions"] + source["rejects"] + sum(source["skipped"].values())
        )

"""import → export (OpenAI chat JSONL) → import with openai-chat gives the same tables."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from ctxreplay.datasets.export import export_corpus
from ctxreplay.datasets.importers import importers
from ctxreplay.datasets.importers.openai_chat import EXT
from ctxreplay.datasets.ingest import import_paths
from ctxreplay.datasets.messages import Message, Part, Usage
from ctxreplay.datasets.openai_format import to_openai
from ctxreplay.datasets.store import Corpus, CorpusError

from builders import corpus_path

FIX = Path(__file__).resolve().parent.parent / "fixtures"

#: every column of the messages table but where the message sat in its source file
MESSAGE_COLUMNS = [
    "session_id",
    "seq",
    "role",
    "name",
    "parts",
    "tool_name",
    "tool_call_id",
    "tool_call_ids",
    "is_error",
    "visible",
    "image_count",
    "file_count",
    "tokens",
    "chars",
    "usage_prompt_tokens",
    "usage_cached_tokens",
    "usage_completion_tokens",
    "timestamp",
    "flags",
]
#: session columns that describe the conversation (not which file it was read from)
SESSION_COLUMNS = [
    "session_id",
    "source_session_id",
    "workload",
    "n_messages",
    "n_visible_messages",
    "n_user_turns",
    "n_tool_calls",
    "n_tool_results",
    "tokens",
    "system_tokens",
    "tool_output_tokens",
    "image_count",
    "file_count",
    "usage_prompt_tokens",
    "usage_cached_tokens",
    "usage_completion_tokens",
    "flags",
    "metadata",
]


def roundtrip(paths: list[Path], tmp: Path, sessions: int) -> tuple[Corpus, Corpus, Path, Path]:
    first = import_paths(paths, tmp / "a", progress=False)
    assert first.sessions == sessions
    n = export_corpus(tmp / "a", tmp / "a.jsonl")
    assert n == first.sessions
    second = import_paths([tmp / "a.jsonl"], tmp / "b", fmt="openai-chat", progress=False)
    assert second.rejects == 0
    export_corpus(tmp / "b", tmp / "b.jsonl")
    return Corpus(tmp / "a"), Corpus(tmp / "b"), tmp / "a.jsonl", tmp / "b.jsonl"


def assert_same_tables(a: Corpus, b: Corpus) -> None:
    sa, sb = a.sessions(), b.sessions()
    assert sa.height == sb.height
    assert sa.select(SESSION_COLUMNS).equals(sb.select(SESSION_COLUMNS))
    ma, mb = a.messages().select(MESSAGE_COLUMNS), b.messages().select(MESSAGE_COLUMNS)
    assert ma.height == mb.height
    if not ma.equals(mb):  # name the first differing row, not just "frames differ"
        for ra, rb in zip(ma.iter_rows(named=True), mb.iter_rows(named=True), strict=True):
            assert ra == rb
    assert ma.equals(mb)


def _without_format(path: Path) -> list[dict[str, object]]:
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    for line in lines:
        line.pop("source_format")
    return lines


def test_roundtrip_on_our_fixtures(tmp_path: Path) -> None:
    # the other OTel fixtures (semantic-convention shapes) round-trip in test_import_otel.py
    otel = [FIX / "otel" / "otlp_spans.json", FIX / "otel" / "flat_spans.jsonl"]
    paths = [FIX / "openai_chat", FIX / "anthropic", *otel]
    a, b, export_a, export_b = roundtrip(paths, tmp_path, sessions=16)
    assert_same_tables(a, b)
    assert set(b.sessions()["source_format"]) == {"openai-chat"}  # the format actually read
    # a second export differs from the first only in source_format
    assert _without_format(export_a) == _without_format(export_b)
    # flags, usage, errors and media actually took part in the comparison
    m = a.messages()
    assert m.filter(pl.col("flags").is_not_null())["flags"].to_list() == [["arguments_not_json"]]
    assert m.filter(pl.col("is_error")).height == 1
    assert m["usage_cached_tokens"].drop_nulls().len() == 3
    assert (m["image_count"].sum(), m["file_count"].sum()) == (6, 5)
    assert set(m["role"]) == {"system", "developer", "user", "assistant", "tool"}


def test_export_line_shape(tmp_path: Path) -> None:
    import_paths([FIX / "anthropic" / "session.json"], tmp_path / "c", progress=False)
    assert export_corpus(tmp_path / "c", tmp_path / "out" / "e.jsonl") == 1
    (line,) = [json.loads(x) for x in (tmp_path / "out" / "e.jsonl").read_text().splitlines()]
    assert set(line) == {"session_id", "source_session_id", "source_format", "metadata", "messages"}
    assert line["source_format"] == "anthropic-messages"
    assert line["source_session_id"] == "conv-weather"
    assert line["metadata"]["task"] == "weather"
    roles = [m["role"] for m in line["messages"]]
    # Anthropic's user message with two tool results and text: two tool messages, then user text
    assert roles == ["system", "user", "assistant", "tool", "assistant", "tool", "tool", "user", "assistant"]  # fmt: skip
    assert line["messages"][3][EXT] == {"role": "user"}
    assert line["messages"][6][EXT] == {"continues": True, "role": "user", "is_error": True}
    assert line["messages"][2]["tool_calls"][0]["function"]["arguments"] == (
        '{"city":"Paris","unit":"c"}'
    )


def test_export_selected_sessions(tmp_path: Path) -> None:
    import_paths([FIX / "openai_chat"], tmp_path / "c", progress=False)
    ids = Corpus(tmp_path / "c").sessions()["session_id"].to_list()
    assert export_corpus(tmp_path / "c", tmp_path / "two.jsonl", ids[:2]) == 2
    written = [
        json.loads(x)["session_id"] for x in (tmp_path / "two.jsonl").read_text().splitlines()
    ]
    assert sorted(written) == sorted(ids[:2])
    with pytest.raises(CorpusError, match="no session"):
        export_corpus(tmp_path / "c", tmp_path / "none.jsonl", ["nope"])


def test_provider_rendering_without_extensions_is_plain_openai() -> None:
    messages = [
        Message("assistant", (Part.call("a", "f", {}), Part.call("b", "g", {}))),
        Message(
            "user",
            (Part.response("a", "A", "f"), Part.response("b", "B", "g"), Part.text("more")),
            is_error=True,
            usage=Usage(1, 0, 2),
        ),
    ]
    plain = to_openai(messages)
    assert [m["role"] for m in plain] == ["assistant", "tool", "tool", "user"]
    assert all(EXT not in m for m in plain)
    extended = to_openai(messages, extensions=True)
    assert [m.get(EXT) for m in extended] == [
        None,
        {
            "role": "user",
            "is_error": True,
            "usage": {"prompt_tokens": 1, "cached_tokens": 0, "completion_tokens": 2},
        },
        {"continues": True, "role": "user", "is_error": True},
        {"continues": True, "is_error": True},
    ]
    assert [{k: v for k, v in m.items() if k != EXT} for m in extended] == plain


REAL = {  # format: (folder in ../shared/corpora, sessions it holds)
    "tau-bench": ("tau-bench", 200),
    "tau2-bench": ("tau2-bench", 60),
    "swe-agent": ("swe-agent", 22),
    "openhands": ("openhands", 43),  # 45 instances, 2 with an empty history (rejects)
    "claude-code": ("claude-code", 90),  # 60 sessions + 30 sub-agents; 3 files hold none
    "inspect-ai": ("inspect-ai", 41),  # one .json log (1 sample), two .eval archives (30 + 10)
    "codex-cli": ("codex-cli", 19),  # one rollout, one session
    "aider": ("aider", 7),  # 37 session blocks in 2 files; 30 hold no model reply (rejects)
}


@pytest.mark.corpora
@pytest.mark.parametrize("fmt", sorted(REAL))
def test_roundtrip_on_real_corpora(fmt: str, tmp_path: Path) -> None:
    if fmt not in importers:
        pytest.skip(f"the {fmt} importer is not registered yet")
    folder, sessions = REAL[fmt]
    a, b, _, _ = roundtrip([corpus_path(folder)], tmp_path, sessions)
    assert set(a.sessions()["source_format"]) == {fmt}
    assert_same_tables(a, b)

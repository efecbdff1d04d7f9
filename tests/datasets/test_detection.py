"""Format detection by structure: the keys and shapes of a file's first records decide, words in a
message's text never do; two formats that fit about equally stop the import with a question."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ctxreplay.cli import main
from ctxreplay.datasets.importers import AmbiguousFormat, detect, get_importer, scores
from ctxreplay.datasets.importers.sniffing import decode_bytes, parse_prefix, sample_of
from ctxreplay.datasets.ingest import import_paths
from ctxreplay.datasets.store import Corpus

from builders import FIXTURES, corpus_path

TRICKS = FIXTURES / "tricks"

#: text an earlier, substring-based detection took for structure
MARKERS = [
    '"gen_ai.input.messages"',
    '{"type": "function"}',
    '"resourceSpans": [',
    '"kind": "ActionEvent"',
    '"simulations": [], "environment_info": {}',
    '"traj": [], "task_id": 1',
    '"history": [{"role": "user", "agent": "main"}]',
    '"tool_use_id": "x", "stop_reason": "end_turn"',
    '"x-ctxreplay": {}, "messages": []',
]


def test_tau_bench_quoting_otel_attribute_names_is_tau_bench(tmp_path: Path) -> None:
    path = TRICKS / "gpt-otel-words-airline.json"
    assert "gen_ai.input.messages" in path.read_text()
    assert detect(path) == "tau-bench"
    assert get_importer("otel-genai").sniff(path, path.read_bytes()) == 0.0
    summary = import_paths([path], tmp_path / "c", progress=False)
    assert (summary.sessions, summary.rejects) == (3, 0)
    assert summary.by_format == {"tau-bench": 3}


def test_anthropic_with_an_openai_looking_tool_input_keeps_every_call(tmp_path: Path) -> None:
    path = TRICKS / "anthropic_function_in_tool_input.json"
    assert '"type": "function"' in path.read_text()
    assert detect(path) == "anthropic-messages"
    summary = import_paths([path], tmp_path / "c", progress=False)
    assert (summary.sessions, summary.rejects) == (1, 0)
    (row,) = Corpus(tmp_path / "c").sessions().to_dicts()
    assert row["source_format"] == "anthropic-messages"
    assert (row["n_tool_calls"], row["n_tool_results"]) == (123, 123)
    messages = Corpus(tmp_path / "c").load_session(row["session_id"])
    assert messages[0].role == "system" and "careful coding agent" in messages[0].text
    odd = next(p for m in messages for p in m.calls if p.name == "write_config")
    assert json.loads(odd.arguments or "")["content"]["type"] == "function"


@pytest.mark.corpora
def test_real_tau_bench_with_otel_words_in_a_user_message(tmp_path: Path) -> None:
    source = corpus_path("tau-bench", "historical_trajectories", "gpt-4o-airline.json")
    results = json.loads(source.read_text())
    user = next(m for m in results[0]["traj"] if m["role"] == "user")
    user["content"] += ' (my logs use "gen_ai.input.messages" and "resourceSpans")'
    path = tmp_path / "gpt-4o-airline.json"
    path.write_text(json.dumps(results))
    assert detect(path) == "tau-bench"
    summary = import_paths([path], tmp_path / "c", progress=False)
    assert (summary.sessions, summary.rejects) == (200, 0)


@pytest.mark.parametrize("marker", MARKERS)
@pytest.mark.parametrize(
    "fixture",
    [
        "openai_chat/object.json",
        "anthropic/session.json",
        "tau-bench/gpt-test-airline.json",
        "tau2-bench/results_small.json",
        "swe-agent/textual.traj",
        "openhands/output_small.jsonl",
        "otel/flat_spans.jsonl",
    ],
)
def test_words_in_message_text_never_change_the_format(
    fixture: str, marker: str, tmp_path: Path
) -> None:
    """Each marker is put into every string value that holds prose: the format stays."""
    source = FIXTURES / fixture
    expected = detect(source)
    text = source.read_text()
    lines = text.splitlines() if source.suffix == ".jsonl" else [text]
    salted = [json.dumps(_salt(json.loads(line), marker)) for line in lines if line.strip()]
    path = tmp_path / source.name
    path.write_text("\n".join(salted) + "\n")
    assert detect(path) == expected


def _salt(value: object, marker: str) -> object:
    """``value`` with ``marker`` appended to every string longer than a word."""
    if isinstance(value, dict):
        return {k: _salt(v, marker) for k, v in value.items()}
    if isinstance(value, list):
        return [_salt(v, marker) for v in value]
    if isinstance(value, str) and " " in value:
        return f"{value} {marker}"
    return value


def _both_shapes(tmp_path: Path) -> Path:
    """A record that is a tau-bench result and an OpenAI chat session at once."""
    traj = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    other = [{"role": "system", "content": "s"}, {"role": "user", "content": "other"}]
    path = tmp_path / "both.jsonl"
    record = {"task_id": 1, "traj": traj, "messages": other}
    path.write_text(json.dumps(record) + "\n" + json.dumps({**record, "task_id": 2}) + "\n")
    return path


def test_close_scores_stop_detection_with_the_candidates(tmp_path: Path) -> None:
    path = _both_shapes(tmp_path)
    ranked = dict(scores(path))
    assert {"tau-bench", "openai-chat"} <= set(ranked)
    with pytest.raises(AmbiguousFormat) as caught:
        detect(path)
    message = str(caught.value)
    assert "tau-bench" in message and "openai-chat" in message and "--format" in message


def test_an_ambiguous_file_stops_the_import_before_anything_is_written(tmp_path: Path) -> None:
    good = FIXTURES / "openai_chat" / "object.json"
    with pytest.raises(AmbiguousFormat):
        import_paths([good, _both_shapes(tmp_path)], tmp_path / "c", progress=False)
    assert not (tmp_path / "c").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".c.")]
    summary = import_paths(
        [_both_shapes(tmp_path)], tmp_path / "c", fmt="tau-bench", progress=False
    )
    assert summary.sessions == 2


def test_cli_asks_for_format(tmp_path: Path) -> None:
    path = _both_shapes(tmp_path)
    result = CliRunner().invoke(main, ["import", str(path), "-o", str(tmp_path / "c"), "--quiet"])
    assert result.exit_code == 2, result.output
    assert "ambiguous" in result.output and "--format" in result.output
    result = CliRunner().invoke(
        main,
        ["import", str(path), "-o", str(tmp_path / "c"), "--quiet", "--format", "openai-chat"],
    )
    assert result.exit_code == 0, result.output


def test_structure_of_a_first_record_larger_than_the_head_is_seen(tmp_path: Path) -> None:
    """The first record is cut by the end of what detection reads: its keys still count."""
    doc = json.loads((FIXTURES / "tau2-bench" / "results_small.json").read_text())
    doc["info"]["environment_info"]["policy"] = "x" * 3_000_000  # past the 1 MiB head
    path = tmp_path / "big.json"
    path.write_text(json.dumps(doc))
    assert detect(path) == "tau2-bench"


def test_utf16_files_are_read(tmp_path: Path) -> None:
    source = FIXTURES / "openai_chat" / "sessions.jsonl"
    path = tmp_path / "sessions.jsonl"
    path.write_bytes(source.read_text().encode("utf-16"))
    assert decode_bytes(path.read_bytes()) == source.read_text()
    assert detect(path) == "openai-chat"
    summary = import_paths([path], tmp_path / "c", progress=False)
    assert (summary.sessions, summary.rejects) == (2, 0)


def test_parse_prefix_closes_what_the_text_leaves_open() -> None:
    assert parse_prefix('{"a": [1, {"b": "cut her') == {"a": [1, {"b": "cut her"}]}
    assert parse_prefix('[{"role": "user"}, {"ro') == [{"role": "user"}, {}]
    assert parse_prefix("not json") is None
    assert parse_prefix("[" * 10_000) is not None  # deep input is cut, never a recursion error


def test_sample_parses_the_first_records(tmp_path: Path) -> None:
    path = FIXTURES / "openai_chat" / "sessions.jsonl"
    sample = sample_of(path, path.read_bytes())
    assert sample.layout == "jsonl" and len(sample.records) == 2
    assert isinstance(sample.records[0], list)

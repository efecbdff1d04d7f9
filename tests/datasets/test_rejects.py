"""Every kind of bad record: rejected with reason, file, record, line, JSON path and exact bytes,
while the other records of the same file still import; and what the CLI exits with."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from ctxreplay.cli import main
from ctxreplay.datasets.ingest import import_paths
from ctxreplay.datasets.store import Corpus

BAD = Path(__file__).resolve().parent.parent / "fixtures" / "bad"


def line_bytes(path: Path, number: int) -> bytes:
    """The exact bytes of 1-based line ``number``, without its newline."""
    return path.read_bytes().split(b"\n")[number - 1]


def tail_from(path: Path, marker: bytes) -> bytes:
    """The file's bytes from the first ``marker`` to the end (a record cut by the end of file)."""
    data = path.read_bytes()
    return data[data.index(marker) :]


@dataclass(frozen=True)
class Case:
    file: str
    reason: str
    record: int
    line: int
    json_path: str
    imported: tuple[str, ...]
    max_message_bytes: int = 10 * 1024 * 1024
    session_id: str | None = "b"

    def raw(self) -> bytes:
        path = BAD / self.file
        if self.reason == "truncated":
            return tail_from(path, b'{"session_id": "c"')
        return line_bytes(path, self.line)


CASES = [
    Case("invalid_json.jsonl", "invalid_json", 1, 2, "$", ("a", "c"), session_id=None),
    Case("truncated.json", "truncated", 2, 4, "$[2]", ("a", "b"), session_id=None),
    Case("wrong_types.jsonl", "wrong_type", 1, 2, "$.messages[0].content", ("a", "c")),
    Case("orphan_result.jsonl", "orphan_tool_result", 1, 2, "$.messages[1]", ("a", "c")),
    Case("duplicate_ids.jsonl", "duplicate_tool_call_id", 0, 1, "$.messages[1]", ("a", "c")),
    Case(
        "invalid_utf8.jsonl",
        "invalid_utf8",
        1,
        2,
        "$.messages[0].content",
        ("a", "c"),
        session_id="b",
    ),
    Case("big_message.jsonl", "oversize_message", 1, 2, "$.messages[0]", ("a", "c"), 4096),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.reason)
def test_reject_is_recorded_exactly_and_the_rest_imports(case: Case, tmp_path: Path) -> None:
    path = BAD / case.file
    summary = import_paths(
        [path], tmp_path / "c", max_message_bytes=case.max_message_bytes, progress=False
    )
    assert dict(summary.rejected) == {case.reason: 1}
    corpus = Corpus(tmp_path / "c")
    (row,) = corpus.rejects().iter_rows(named=True)
    assert row["reason"] == case.reason and row["detail"]
    assert row["source_format"] == "openai-chat"
    assert row["source_location"] == str(path)
    assert (row["record"], row["line"]) == (case.record, case.line)
    assert row["json_path"] == case.json_path
    assert row["session_id"] == case.session_id
    assert row["raw"] == case.raw()
    assert sorted(corpus.sessions()["source_session_id"]) == list(case.imported)


def test_truncated_array_keeps_the_records_before_the_cut(tmp_path: Path) -> None:
    path = BAD / "truncated.json"
    assert not path.read_text().rstrip().endswith("]")
    import_paths([path], tmp_path / "c", progress=False)
    sessions = Corpus(tmp_path / "c").sessions()
    assert sessions["source_record"].to_list() == [0, 1]


def test_arguments_that_are_not_json_are_kept_and_flagged(tmp_path: Path) -> None:
    summary = import_paths([BAD / "args_not_json.jsonl"], tmp_path / "c", progress=False)
    assert (summary.sessions, summary.rejects) == (2, 0)
    corpus = Corpus(tmp_path / "c")
    sid = corpus.sessions().filter(source_session_id="b")["session_id"].item()
    messages = corpus.load_session(sid)
    (call,) = messages[1].calls
    assert call.arguments == '{"q": 1, oops'  # byte for byte
    assert messages[1].flags == ("arguments_not_json",)
    assert corpus.sessions().filter(source_session_id="b")["flags"].item().to_list() == [
        "arguments_not_json"
    ]


def test_image_and_file_parts_are_counted_and_kept(tmp_path: Path) -> None:
    import_paths([BAD / "media.jsonl"], tmp_path / "c", progress=False)
    corpus = Corpus(tmp_path / "c")
    (row,) = corpus.sessions().iter_rows(named=True)
    assert (row["image_count"], row["file_count"]) == (2, 2)
    user = corpus.load_session(row["session_id"])[0]
    assert [p.type for p in user.parts] == ["text", "blob", "uri", "blob", "file"]
    assert [p.mime_type for p in user.parts[1:4]] == ["image/jpeg", None, "application/pdf"]
    assert user.parts[4].id == "file-1"
    assert corpus.messages()["image_count"].to_list() == [2, 0]


def test_a_true_ten_megabyte_message_is_rejected(tmp_path: Path) -> None:
    good = json.dumps({"session_id": "a", "messages": [{"role": "user", "content": "hi"}]})
    big = json.dumps({"session_id": "b", "messages": [{"role": "user", "content": "x" * (10 * 1024 * 1024 + 1)}]})  # fmt: skip
    path = tmp_path / "huge.jsonl"
    path.write_text(good + "\n" + big + "\n")
    summary = import_paths([path], tmp_path / "c", progress=False)
    assert (summary.sessions, dict(summary.rejected)) == (1, {"oversize_message": 1})
    (row,) = Corpus(tmp_path / "c").rejects().iter_rows(named=True)
    assert (row["record"], row["line"], row["json_path"]) == (1, 2, "$.messages[0]")
    assert row["raw"] == big.encode()


# --- the command line -----------------------------------------------------------------------


def run_import(tmp_path: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["import", *args, "-o", str(tmp_path / "out"), "--quiet"])
    return result.exit_code, result.output


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.reason)
def test_cli_exit_codes(case: Case, tmp_path: Path) -> None:
    mb = str(case.max_message_bytes / 1024 / 1024)
    code, out = run_import(tmp_path, str(BAD / case.file), "--max-message-mb", mb)
    assert code == 0, out  # something imported: rejects alone do not fail the command
    assert case.reason in out and "rejected 1 records" in out
    code, out = run_import(
        tmp_path, str(BAD / case.file), "--max-message-mb", mb, "--strict", "--overwrite"
    )
    assert code == 1, out
    assert "rejected (--strict)" in out


def test_cli_fails_when_nothing_imports(tmp_path: Path) -> None:
    code, out = run_import(tmp_path, str(BAD / "all_bad.jsonl"), "--format", "openai-chat")
    assert code == 1
    assert "nothing was imported" in out
    assert "invalid_json" in out and "unknown_role" in out


def test_cli_clean_file_passes_strict(tmp_path: Path) -> None:
    code, out = run_import(tmp_path, str(BAD / "args_not_json.jsonl"), "--strict")
    assert code == 0, out
    assert "rejected 0 records" in out

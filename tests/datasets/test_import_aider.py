"""Aider chat histories (``.aider.chat.history.md``): the fixtures and the two real files.

The fixtures under ``tests/fixtures/aider/`` were written line by line the way Aider writes its
history (Aider-AI/aider ``aider/io.py``: ``InputOutput.append_chat_history``, ``user_input``
(``#### `` lines ending in two spaces, after a blank line), ``ai_output`` (the reply between blank
lines), ``tool_output`` / ``_tool_message`` / ``confirm_ask`` (``> `` lines), the
``# aider chat started at`` header of ``InputOutput.__init__``); the announcements, token and cost
report, file-mention prompts, ``/run`` handling and reasoning tags from ``aider/coders/
base_coder.py`` (``get_announcements``, ``calculate_and_show_tokens_and_cost``,
``check_for_file_mentions``), ``aider/commands.py`` (``cmd_run``: older releases log the output
with ``tool_output`` and ask ``Add the output to the chat?``; recent ones ask ``Add 0.2k tokens of
command output to the chat?`` and log only ``Added 6 lines of output to the chat.``) and
``aider/reasoning_tags.py``:

* ``editblock``: a recent Aider with the diff (SEARCH/REPLACE) edit format, Anthropic cache
  counts, ``/run``, a file the model asked for, ``/ask``, ``/tokens``; then an architect session
  (the editor's reply answers the architect, not the user);
* ``whole-reasoning``: the whole edit format with a local reasoning model: a session whose call
  failed, reasoning tags, a confirm group's ``####`` answer, an interrupted reply;
* ``older-run-clear``: an older Aider (``Model: … using udiff edit format``, counts with commas,
  ``/run`` output logged after ``Add the output to the chat? y``) and ``/clear``;
* ``damaged``: a history cut at the front, a session with no turn, bytes that are not UTF-8.
"""

from __future__ import annotations

import json
import random
import tempfile
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_export_roundtrip import assert_same_tables, roundtrip

from ctxreplay.datasets.importers import AmbiguousFormat, detect, get_importer
from ctxreplay.datasets.importers.aider import HEADER, LATE_HEADER_SCORE
from ctxreplay.datasets.ingest import import_paths
from ctxreplay.datasets.messages import ROLES, Part, Session, Usage
from ctxreplay.datasets.rejects import FLAGS, REASONS, Reject
from ctxreplay.datasets.store import Corpus

from builders import FIXTURES, ROOT, corpus_path, read_items

AIDER = FIXTURES / "aider"
EDITBLOCK = AIDER / "editblock.aider.chat.history.md"
WHOLE = AIDER / "whole-reasoning.aider.chat.history.md"
OLDER = AIDER / "older-run-clear.aider.chat.history.md"
DAMAGED = AIDER / "damaged.aider.chat.history.md"
ALL = [EDITBLOCK, WHOLE, OLDER, DAMAGED]
THINK = "thinking-content-7bbeb8e1441453ad999a0bbba8a46d4b"


def _block(path: Path, start: str, end: str | None = None) -> bytes:
    """The exact bytes of the session block whose header holds ``start``."""
    data = path.read_bytes()
    begin = data.index(f"{HEADER} {start}".encode())
    stop = data.index(f"{HEADER} {end}".encode()) if end else len(data)
    return data[begin:stop]


def _shape(items: list[Session | Reject]) -> list[object]:
    return [
        (i.source_session_id, i.messages, i.metadata) if isinstance(i, Session) else i.reason
        for i in items
    ]


# --- what each fixture holds ------------------------------------------------------------------


def test_fixtures_are_detected() -> None:
    for path in ALL:
        assert detect(path) == "aider"


def test_diff_edit_format_session() -> None:
    (s, architect), rejects = read_items("aider", EDITBLOCK)
    assert rejects == []
    assert (s.source_session_id, s.workload, s.source_record) == ("2025-03-14 09:12:03", "aider", 0)
    assert [m.role for m in s.messages] == ["user", "assistant", "user", "assistant", "assistant",
                                            "user", "assistant"]  # fmt: skip
    ask, edit, fix, asks_for_file, edit_test, why, answer = s.messages
    assert ask.parts == (
        Part.text(
            "The /health endpoint returns 500 when the database is down.\n"
            "Make it return 503 with a JSON body instead."
        ),
    )
    assert ask.source_path == "line 12"
    assert edit.text.startswith("I'll catch the database error in the health check and answer 503.")
    assert '<<<<<<< SEARCH\n@app.get("/health")' in edit.text  # the edit block is what it wrote
    assert edit.text.endswith(">>>>>>> REPLACE\n```")
    assert edit.usage == Usage(prompt_tokens=4200, cached_tokens=2000, completion_tokens=312)
    # `/run` in a recent Aider: the output went into the chat but not into the log
    assert fix.parts == (Part.text("What's wrong? Fix"),)
    assert asks_for_file.usage == Usage(5100, 2900, 96)
    # the reply after the user let tests/test_health.py in answers Aider's own message
    assert edit_test.flags == ("unlogged_input",)
    assert edit_test.usage == Usage(5600, 3000, 140)
    assert why.parts == (Part.text("why did the import break?"),)  # /ask sends its question
    # a heading and a quote of the reply's own Markdown stay in the reply
    assert answer.text.startswith("#### Why it broke\n> `DatabaseError` moved to `app/db.py`")
    assert answer.usage == Usage(5900, 3100, 88)
    assert [m.flags for m in s.messages] == [(), (), (), (), ("unlogged_input",), (), ()]
    assert s.metadata == {
        "started_at": "2025-03-14 09:12:03",
        "line": 2,
        "command_line": "/home/dev/.local/bin/aider --model sonnet app.py",
        "aider_version": "0.82.1",
        "model": "anthropic/claude-3-7-sonnet-20250219",
        "edit_format": "diff",
        "weak_model": "anthropic/claude-3-5-haiku-20241022",
        "git_repo": ".git",
        "repo_files": 42,
        "repo_map_tokens": 4096,
        "cost_usd": 0.05,
        "token_totals": {"sent": 20800, "received": 636, "cache_hit": 11000, "cache_write": 1100},
        "requests": 4,
        "notices": 26,
        "prompt_answers": 2,
        "commits": 2,
        "search_replace_blocks": 2,
        "unlogged_inputs": 1,
        "commands": {"ask": 1, "exit": 1, "run": 1, "tokens": 1},
        "files_added": ["app.py", "tests/test_health.py"],
        "edited_files": ["app.py", "tests/test_health.py"],
    }
    # architect mode: the editor's reply answers the architect's plan, which Aider sent itself
    assert [(m.role, m.flags) for m in architect.messages] == [
        ("user", ()),
        ("assistant", ()),
        ("assistant", ("unlogged_input",)),
    ]
    assert architect.messages[0].parts == (Part.text("Log every request's duration."),)
    assert architect.messages[2].usage == Usage(2800, 1900, 160)
    meta = architect.metadata
    assert (meta["model"], meta["edit_format"]) == ("o3-mini", "architect")
    assert meta["editor_model"] == "anthropic/claude-3-7-sonnet-20250219"
    assert (meta["editor_edit_format"], meta["weak_model"]) == ("editor-diff", "gpt-4o-mini")
    assert meta["commands"] == {"add": 1} and meta["files_added"] == ["app.py"]
    assert meta["token_totals"] == {"sent": 6100, "received": 221, "cache_hit": 1900}


def test_whole_edit_format_with_reasoning_interrupts_and_a_failed_call() -> None:
    (s,), (failed,) = read_items("aider", WHOLE)
    # the first session: the call failed, nothing was answered
    assert failed.reason == "empty_session"
    assert failed.detail == (
        "the session holds no model reply (1 user, 0 assistant messages, 17 CLI notices, 1 error;"
        " the first: litellm.AuthenticationError: AuthenticationError: Lm_studioException -"
        " Incorrect API key provided: fake-api-key.)"
    )
    assert failed.raw == _block(WHOLE, "2026-04-22 22:40:12", "2026-04-22 22:41:05")
    assert (failed.line, failed.record, failed.session_id) == (2, 0, "2026-04-22 22:40:12")
    assert s.source_session_id == "2026-04-22 22:41:05"
    roles = [(m.role, m.flags) for m in s.messages]
    assert roles == [
        ("user", ()),
        ("assistant", ()),
        ("user", ()),
        ("assistant", ()),
        ("assistant", ("turn_aborted", "unlogged_input")),
        ("user", ()),
        ("assistant", ()),
    ]
    create, hello, name, asks, cut, argv, done = s.messages
    # a multi-line input, its blank line kept
    assert create.parts == (
        Part.text("Create hello.py that prints a greeting.\n\nKeep it to one function."),
    )
    assert hello.parts[0] == Part(
        "reasoning",
        content="The user wants a new file hello.py with one function that prints a greeting.",
    )
    assert hello.parts[1] == Part.text(
        'hello.py\n```\ndef main():\n    print("Hello, world!")\n\n\n'
        'if __name__ == "__main__":\n    main()\n```'
    )
    assert hello.usage == Usage(1900, None, 412)
    assert name.parts == (
        Part.text("Also greet by name; the name comes from cli.py and config.py"),
    )
    assert asks.parts[-1] == Part.text("Please add cli.py and config.py to the chat.")
    # interrupted while reasoning: the tag never closed, no token report
    assert cut.parts == (
        Part(
            "reasoning",
            content="Both files are in the chat now. cli.py parses --name with argparse and "
            "config.py holds the\ndefault name, so hello.py should",
        ),
    )
    assert cut.usage is None
    assert argv.parts == (Part.text("Just use sys.argv"),)  # `#### <blank>` before it sent nothing
    assert [p.type for p in done.parts] == ["reasoning", "text"]
    assert done.usage == Usage(3100, None, 205)
    assert all(THINK not in (p.content or "") for m in s.messages for p in m.parts)
    assert s.metadata == {
        "started_at": "2026-04-22 22:41:05",
        "line": 24,
        "command_line": "/Users/dev/.local/bin/aider --model lm_studio/qwen3-30b-a3b",
        "aider_version": "0.86.2",
        "model": "lm_studio/qwen3-30b-a3b",
        "edit_format": "whole",
        "git_repo": ".git",
        "repo_files": 7,
        "repo_map_tokens": 1024,
        "token_totals": {"sent": 7300, "received": 737},
        "requests": 3,
        "notices": 24,
        "prompt_answers": 4,  # three `>` answers and the confirm group's `####` answer
        "blank_inputs": 1,
        "commits": 2,
        "unlogged_inputs": 1,
        "interrupted": 1,
        "files_added": ["cli.py", "config.py"],
        "edited_files": ["hello.py"],
    }


def test_older_aider_run_output_and_clear() -> None:
    (first, second), rejects = read_items("aider", OLDER)
    assert rejects == []
    # /run output logged after `Add the output to the chat? y`: what the model was given
    output, fix = first.messages
    assert (output.role, output.flags, output.source_path) == (
        "user",
        ("command_output",),
        "line 16",
    )
    assert output.parts == (
        Part.text(
            "F...\nFAILED tests/test_calc.py::test_div - ZeroDivisionError: division by zero\n"
            "1 failed, 3 passed in 0.04s"
        ),
    )
    assert (fix.role, fix.flags) == ("assistant", ())
    assert fix.usage == Usage(1288, None, 74)  # "Tokens: 1,288 sent, 74 received."
    # /clear emptied the model's context: the rest of the block is a session of its own
    assert (first.source_session_id, second.source_session_id) == (
        "2024-01-09 16:20:11",
        "2024-01-09 16:20:11#2",
    )
    assert [m.role for m in second.messages] == ["user", "assistant"]
    assert second.messages[0].parts == (Part.text("Add a docstring to div()."),)
    assert second.messages[1].usage == Usage(903, None, 41)
    assert first.metadata["cleared"] == {"part": 1, "parts": 2}
    assert second.metadata["cleared"] == {"part": 2, "parts": 2}
    assert (first.metadata["model"], first.metadata["edit_format"]) == (
        "gpt-4-1106-preview",
        "udiff",
    )
    # settings carry across the /clear; counters do not
    assert second.metadata["model"] == "gpt-4-1106-preview"
    assert first.metadata["commands"] == {"clear": 1, "run": 1}
    assert "commands" not in second.metadata
    assert (first.metadata["cost_usd"], second.metadata["cost_usd"]) == (0.02, 0.03)
    assert first.key != second.key


def test_damaged_history_rejects_its_bad_blocks_and_imports_the_rest() -> None:
    (cut, good), (empty, bad_bytes) = read_items("aider", DAMAGED)
    # the file starts inside a session: its lines before the first header are one
    assert cut.source_session_id == "damaged.aider.chat.history.md:preamble"
    assert [m.text for m in cut.messages] == [
        "and the tests too",
        "Done: tests/test_calc.py now covers division by zero.",
    ]
    assert cut.metadata == {
        "line": 1,
        "token_totals": {"sent": 2000, "received": 30},
        "requests": 1,
        "notices": 1,
    }
    assert (empty.reason, empty.line, empty.record) == ("empty_session", 8, 1)
    assert empty.detail == (
        "the session holds no user message (0 user, 0 assistant messages, 2 CLI notices)"
    )
    assert empty.raw == _block(DAMAGED, "2024-02-01 11:00:00", "2024-02-01 11:05:00")
    assert (bad_bytes.reason, bad_bytes.line, bad_bytes.json_path) == (
        "invalid_utf8",
        13,
        "line 17",
    )
    assert bad_bytes.raw == _block(DAMAGED, "2024-02-01 11:05:00", "2024-02-01 11:10:00")
    assert b"caf\xe9_total" in bad_bytes.raw
    assert good.source_session_id == "2024-02-01 11:10:00"
    assert [m.text for m in good.messages] == ["What does div() return for b == 0?", "`None`."]


def test_commands_questions_and_lint_output(tmp_path: Path) -> None:
    """Lines as Aider writes them (``user_input``, ``tool_error``, ``confirm_ask``)."""
    path = tmp_path / "h.aider.chat.history.md"
    path.write_text(
        "\n# aider chat started at 2025-05-01 08:00:00\n\n"
        "> Models: gpt-4o with diff edit format, weak model gpt-4o-mini  \n"
        "\n#### Is it safe to rename? yes  \n"
        "\nYes.\n\n"
        "> Tokens: 900 sent, 2 received.  \n"
        "\n#### !ls  \n"
        "\n#### /architect split app.py  \n"
        "#### into two modules  \n"
        "\nSplit it.\n\n"
        "> Applied edit to app.py  \n"
        "> # Fix any errors below, if possible.  \n"
        "> app.py:3:1: F401 'os' imported but unused  \n"
        "> Attempt to fix lint errors? (Y)es/(N)o [Yes]: y  \n"
        "\nRemoved the import.\n\n"
    )
    (s,), _ = read_items("aider", path)
    assert [(m.role, m.text, m.flags) for m in s.messages] == [
        ("user", "Is it safe to rename? yes", ()),  # a question of the user's, not a prompt
        ("assistant", "Yes.", ()),
        ("user", "split app.py\ninto two modules", ()),  # /architect sends its argument
        ("assistant", "Split it.", ()),
        ("user", "# Fix any errors below, if possible.\napp.py:3:1: F401 'os' imported but unused",
         ("command_output",)),
        ("assistant", "Removed the import.", ()),
    ]  # fmt: skip
    assert s.messages[4].source_path == "line 20"
    assert s.metadata["commands"] == {"architect": 1, "run": 1}
    assert (s.metadata["model"], s.metadata["weak_model"]) == ("gpt-4o", "gpt-4o-mini")
    assert s.messages[1].usage == Usage(900, None, 2)


# --- the corpus, accounting, round trip -------------------------------------------------------


def test_fixtures_import_into_a_corpus(tmp_path: Path) -> None:
    summary = import_paths(ALL, tmp_path / "c", progress=False)
    print(summary.render())
    assert (summary.files, summary.sessions, summary.rejects) == (4, 7, 3)
    assert summary.records == summary.sessions + summary.rejects + sum(summary.skipped.values())
    assert summary.records == 10 and summary.unaccounted == 0
    assert summary.by_format == {"aider": 7}
    corpus = Corpus(tmp_path / "c")
    sessions = corpus.sessions()
    by_id = {r["source_session_id"]: r for r in sessions.to_dicts()}
    assert {k: (r["n_messages"], r["n_user_turns"]) for k, r in by_id.items()} == {
        "2025-03-14 09:12:03": (7, 3),
        "2025-03-14 10:02:41": (3, 1),
        "2026-04-22 22:41:05": (7, 3),
        "2024-01-09 16:20:11": (2, 1),
        "2024-01-09 16:20:11#2": (2, 1),
        "damaged.aider.chat.history.md:preamble": (2, 1),
        "2024-02-01 11:10:00": (2, 1),
    }
    assert all(r["tokens"] > 0 and r["n_tool_calls"] == 0 for r in by_id.values())
    diff = by_id["2025-03-14 09:12:03"]
    assert (diff["usage_prompt_tokens"], diff["usage_cached_tokens"]) == (20800, 11000)
    assert diff["usage_completion_tokens"] == 636
    assert json.loads(diff["metadata"])["model"] == "anthropic/claude-3-7-sonnet-20250219"
    messages = corpus.messages()
    assert set(messages["role"]) == {"user", "assistant"}
    assert messages.filter(messages["tokens"] <= 0).height == 0
    flags = Counter(f for fl in messages["flags"].to_list() if fl for f in fl)
    assert flags == {"unlogged_input": 3, "turn_aborted": 1, "command_output": 1}
    assert set(flags) <= set(FLAGS)
    loaded = corpus.load_session(by_id["2026-04-22 22:41:05"]["session_id"])
    assert loaded[1].parts[0].type == "reasoning" and loaded[1].tokens > 0
    rejects = corpus.rejects().to_dicts()
    assert Counter(r["reason"] for r in rejects) == {"empty_session": 2, "invalid_utf8": 1}
    for r in rejects:
        assert r["raw"] in Path(r["source_location"]).read_bytes()


def test_roundtrip_through_export(tmp_path: Path) -> None:
    a, b, _, _ = roundtrip(ALL, tmp_path, sessions=7)
    assert set(a.sessions()["source_format"]) == {"aider"}
    assert_same_tables(a, b)


# --- detection --------------------------------------------------------------------------------


def _sniff(path: Path) -> float:
    with path.open("rb") as f:
        return get_importer("aider").sniff(path, f.read(1 << 20))


def test_other_formats_fixtures_are_not_aider() -> None:
    others = [p for p in FIXTURES.rglob("*") if p.is_file() and AIDER not in p.parents]
    assert len(others) > 30
    for path in others:
        assert _sniff(path) == 0.0, path
        try:
            assert detect(path) != "aider", path
        except AmbiguousFormat as e:
            assert "aider" not in [name for name, _ in e.candidates], path


def test_other_markdown_is_not_aider(tmp_path: Path) -> None:
    docs = [p for p in ROOT.glob("*.md")] + list((ROOT / "docs").rglob("*.md"))
    assert docs
    for path in docs:
        assert _sniff(path) == 0.0, path
    # a document quoting a chat history inside a code fence, with Aider-looking lines around it
    quoted = tmp_path / "notes.md"
    quoted.write_text(
        "# Using aider\n\n#### Step one  \n> a quote  \n\n```\n"
        "# aider chat started at 2025-01-01 10:00:00\n\n#### hi  \n```\n"
    )
    assert _sniff(quoted) == 0.0 and detect(quoted) is None
    # JSON, whatever its name
    fake = tmp_path / "history.md"
    fake.write_text(json.dumps({"messages": [{"role": "user", "content": "# aider chat"}]}))
    assert _sniff(fake) == 0.0
    # a history with something written before its first header is still found
    prefixed = tmp_path / "prefixed.md"
    prefixed.write_bytes(b"notes\n" + WHOLE.read_bytes())
    assert _sniff(prefixed) == LATE_HEADER_SCORE and detect(prefixed) == "aider"


# --- line endings, stripped spaces, encodings, forced format ---------------------------------


def test_crlf_and_stripped_trailing_spaces_read_the_same(tmp_path: Path) -> None:
    for source in (EDITBLOCK, WHOLE, OLDER):
        expected = _shape(list(get_importer("aider").read(source)))
        crlf = tmp_path / f"crlf-{source.name}"
        crlf.write_bytes(source.read_bytes().replace(b"\n", b"\r\n"))
        assert _shape(list(get_importer("aider").read(crlf))) == expected
    # an editor that strips trailing spaces loses the two Aider writes: read leniently
    stripped = tmp_path / f"stripped-{WHOLE.name}"
    stripped.write_text("\n".join(line.rstrip() for line in WHOLE.read_text().split("\n")))
    got = list(get_importer("aider").read(stripped))
    assert [s.messages for s in got if isinstance(s, Session)] == [
        s.messages for s in read_items("aider", WHOLE)[0]
    ]


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-32", "utf-8-sig"])
def test_wide_encodings_and_a_bom(encoding: str, tmp_path: Path) -> None:
    path = tmp_path / "h.aider.chat.history.md"
    path.write_bytes(WHOLE.read_text().encode(encoding))
    assert detect(path) == "aider"
    items = list(get_importer("aider").read(path))
    assert _shape(items) == _shape(list(get_importer("aider").read(WHOLE)))
    (reject,) = [i for i in items if isinstance(i, Reject)]
    assert reject.raw in path.read_bytes() and len(reject.raw) > 100


def test_forced_format_on_other_files(tmp_path: Path) -> None:
    json_file = FIXTURES / "openai_chat" / "object.json"
    importer = get_importer("aider")
    (reject,) = list(importer.read(json_file))
    assert reject.reason == "malformed" and reject.raw == json_file.read_bytes()
    assert reject.detail == (
        "not an Aider chat history: no '# aider chat started at' header and no '#### ' user line"
    )
    assert importer.tally.seen == 1
    empty = tmp_path / "empty.md"
    empty.write_text("\n\n")
    importer = get_importer("aider")
    (reject,) = list(importer.read(empty))
    assert (reject.reason, reject.raw, importer.tally.seen) == ("empty_file", b"\n\n", 1)
    summary = import_paths([json_file], tmp_path / "c", fmt="aider", progress=False)
    assert (summary.records, summary.sessions, summary.rejects) == (1, 0, 1)


# --- the property test: mutated lines and bytes never raise, every block is accounted for ---

#: lines a mutation may insert: the structure's own lines, damaged or out of place
_TRICKY = [
    "# aider chat started at 2025-01-01 10:00:00",
    "# aider chat started at",
    "#### hello  ",
    "####",
    "#### /clear  ",
    "#### /ask  ",
    "#### Add file to the chat? (Y)es/(N)o [Yes]: y  ",
    "> Tokens: 1.2k sent, 3 received.  ",
    "> Tokens: 99999999999999999999k sent, 1e999 received.  ",
    "> Add the output to the chat? y  ",
    "> Attempt to fix lint errors? (Y)es/(N)o [Yes]: y  ",
    "> ^C again to exit  ",
    "> Model: m with whole edit format, weak model w  ",
    f"<{THINK}>",
    f"</{THINK}>",
    "<<<<<<< SEARCH",
    "",
    "plain reply text",
]
_MUTATIONS = ["delete", "duplicate", "swap", "insert", "strip", "crlf", "truncate", "bad_utf8",
              "flip", "nul"]  # fmt: skip


def _mutate(data: bytes, kind: str, rng: random.Random) -> bytes:
    lines = data.split(b"\n")
    i = rng.randrange(len(lines))
    if kind == "delete":
        del lines[i]
    elif kind == "duplicate":
        lines.insert(i, lines[i])
    elif kind == "swap":
        j = rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
    elif kind == "insert":
        lines.insert(i, rng.choice(_TRICKY).encode())
    elif kind == "strip":
        lines[i] = lines[i].rstrip()
    elif kind == "crlf":
        lines[i] += b"\r"
    else:
        at = rng.randrange(len(data) + 1)
        if kind == "truncate":
            return data[:at]
        if kind == "bad_utf8":
            return data[:at] + rng.choice([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xe9"]) + data[at:]
        if kind == "nul":
            return data[:at] + b"\x00" * rng.randrange(1, 4) + data[at:]
        if data:  # flip
            at = min(at, len(data) - 1)
            return data[:at] + bytes([data[at] ^ (1 << rng.randrange(8))]) + data[at + 1 :]
        return data
    return b"\n".join(lines)


_SAMPLE = EDITBLOCK.read_bytes() + WHOLE.read_bytes() + OLDER.read_bytes()


def _expected_blocks(data: bytes) -> int | None:
    """Records a UTF-8 file holds: one per header line, and the lines before the first header
    when they hold anything (None for a file read as UTF-16/32)."""
    head = data[:4]
    if head.startswith((b"\xff\xfe", b"\xfe\xff", b"\x00\x00\xfe\xff")) or (
        len(head) >= 4
        and ((head[0] and not head[1] and not head[3] and head[2])
             or (not head[0] and head[1] and not head[2] and head[3]))
    ):  # fmt: skip
        return None
    text = data.removeprefix(b"\xef\xbb\xbf").decode("utf-8", "surrogateescape")
    lines = [line.rstrip("\r") for line in text.split("\n")]
    headers = [i for i, line in enumerate(lines) if line.startswith(HEADER)]
    before = lines[: headers[0]] if headers else lines
    return len(headers) + (1 if any(line.strip() for line in before) else 0)


@settings(max_examples=150, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])  # fmt: skip
@given(
    mutations=st.lists(
        st.tuples(st.sampled_from(_MUTATIONS), st.integers(0, 2**32 - 1)), min_size=1, max_size=4
    )
)
def test_mutated_histories_never_raise_and_account_for_every_block(
    mutations: list[tuple[str, int]],
) -> None:
    data = _SAMPLE
    for kind, seed in mutations:
        data = _mutate(data, kind, random.Random(seed))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "m.aider.chat.history.md"
        path.write_bytes(data)
        importer = get_importer("aider")
        items = list(importer.read(path))  # never raises
        get_importer("aider").sniff(path, data[: 1 << 20])  # nor does detection
    sessions = [i for i in items if isinstance(i, Session)]
    rejects = [i for i in items if isinstance(i, Reject)]
    assert len(sessions) + len(rejects) == len(items)
    tally = importer.tally
    assert tally.seen == len(sessions) + len(rejects) + sum(tally.skipped.values())
    expected = _expected_blocks(data)
    if expected is not None and expected:
        # every block ends as sessions (a /clear makes several) or one reject
        blocks = {s.source_record for s in sessions} | {r.record for r in rejects}
        assert blocks == set(range(expected))
        assert len({r.record for r in rejects}) == len(rejects)
        assert not blocks & {s.source_record for s in sessions} & {r.record for r in rejects}
    for r in rejects:
        assert r.reason in REASONS
        assert r.raw and r.raw in data, r
        # what damage can cause; anything else (malformed, import_error) is a bug of the reader
        assert r.reason in ("empty_session", "invalid_utf8", "empty_file") or r.detail.startswith(
            "not an Aider chat history"
        ), r
    assert len({s.key for s in sessions}) == len(sessions)
    for s in sessions:
        assert {m.role for m in s.messages} <= ROLES
        assert any(m.role == "user" for m in s.messages)
        assert any(m.role == "assistant" for m in s.messages)


# --- the real histories -----------------------------------------------------------------------


@pytest.mark.corpora
def test_real_histories(tmp_path: Path) -> None:
    opencoder = corpus_path("aider", "Asphyksia", "OpenCoder", ".aider.chat.history.md")
    mozgoslav = corpus_path("aider", "AlexShchuka", "mozgoslav", ".aider.chat.history.md")
    expected = {  # file: (blocks, sessions, messages, user, assistant)
        opencoder: (34, 5, 10, 5, 5),
        mozgoslav: (3, 2, 26, 10, 16),
    }
    for path, (blocks, n_sessions, n_messages, n_user, n_assistant) in expected.items():
        assert detect(path) == "aider"
        importer = get_importer("aider")
        items = list(importer.read(path))
        sessions = [i for i in items if isinstance(i, Session)]
        rejects = [i for i in items if isinstance(i, Reject)]
        assert importer.tally.seen == blocks == len(sessions) + len(rejects)
        assert len(sessions) == n_sessions
        assert {r.reason for r in rejects} == {"empty_session"}  # the calls failed
        assert all(r.raw in path.read_bytes() for r in rejects)
        roles = Counter(m.role for s in sessions for m in s.messages)
        assert roles == {"user": n_user, "assistant": n_assistant}
        assert sum(len(s.messages) for s in sessions) == n_messages
    sessions, rejects = read_items("aider", opencoder)
    assert [s.metadata["model"] for s in sessions] == ["Qwen/Qwen3-Coder"] * 5
    assert all(m.usage is not None for s in sessions for m in s.messages if m.role == "assistant")
    assert sum(1 for r in rejects if "no model reply" in r.detail) == 27
    sessions, rejects = read_items("aider", mozgoslav)
    replies = [m for s in sessions for m in s.messages if m.role == "assistant"]
    assert Counter(f for m in replies for f in m.flags) == {"unlogged_input": 6, "turn_aborted": 2}
    assert all(m.parts[0].type == "reasoning" for m in replies)  # a reasoning model
    assert sum(1 for m in replies if m.usage is not None) == 14  # the interrupted two have none
    assert sessions[0].metadata["edit_format"] == "whole"
    assert sessions[1].metadata["commits"] == 2
    summary = import_paths([opencoder, mozgoslav], tmp_path / "c", progress=False)
    print(summary.render())
    assert (summary.sessions, summary.rejects, summary.unaccounted) == (7, 30, 0)
    assert summary.records == 37

"""Small hand-built sessions and corpora for tests, with token counts from the real tokenizer;
where the test fixtures and the real public corpora are."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from types import ModuleType

import pytest

from ctxreplay.datasets.messages import Message, Part, Session
from ctxreplay.datasets.rejects import Reject
from ctxreplay.datasets.store import Corpus, CorpusWriter
from ctxreplay.datasets.tokenizer import get_tokenizer
from ctxreplay.datasets.validate import validate_session

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
#: the real public corpora; the labelled sets (gold-dev, gold-long) lie beside them, so one
#: setting (``CTXREPLAY_CORPORA`` pointing nowhere) hides the whole shared folder
_CORPORA = Path(os.environ.get("CTXREPLAY_CORPORA", ROOT.parent / "shared" / "corpora"))
#: the test running now (set by conftest's ``pytest_runtest_setup``), so that ``shared_path``
#: can refuse a test that reads the shared folder without the ``corpora`` marker
current_test: pytest.Item | None = None


def shared_missing() -> str | None:
    """Why the shared folder cannot serve the tests marked ``corpora`` (None: it can)."""
    if _CORPORA.is_dir():
        return None
    return f"real corpora not available at {_CORPORA} (set CTXREPLAY_CORPORA to run this test)"


def shared_path(*parts: str) -> Path:
    """A path in the shared folder (``corpora``, ``gold-dev``, ``gold-long``): the one way a test
    reaches it. The test must be marked ``corpora`` (the mark skips it, with the reason, when the
    folder is absent: conftest); a path that is missing inside a present folder skips too."""
    if current_test is not None and current_test.get_closest_marker("corpora") is None:
        raise AssertionError(
            f"{current_test.nodeid} reads the shared folder ({'/'.join(parts)}) but is not "
            "marked @pytest.mark.corpora: without the mark it fails on a clone without it"
        )
    path = _CORPORA.parent.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"not available: {path} (set CTXREPLAY_CORPORA to run this test)")
    return path


def corpus_path(*parts: str) -> Path:
    """A path inside the shared ``corpora`` folder (see ``shared_path``)."""
    return shared_path("corpora", *parts)


def load_benchmark(name: str) -> ModuleType:
    """``benchmarks/<name>.py`` as a module, its folder on the path as when it runs (the
    scripts share ``benchmarks/_shared.py``)."""
    folder = ROOT / "benchmarks"
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
    spec = importlib.util.spec_from_file_location(name, folder / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # (dataclasses look their module up)
    spec.loader.exec_module(module)
    return module


def run_benchmark(name: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``python benchmarks/<name>.py ARGS`` as a user runs it."""
    script = ROOT / "benchmarks" / f"{name}.py"
    return subprocess.run(
        [sys.executable, str(script), *args], capture_output=True, text=True, timeout=300
    )


def quick_twice(
    name: str, out: Path, *extra: str
) -> tuple[subprocess.CompletedProcess[str], subprocess.CompletedProcess[str]]:
    """A benchmark's ``--quick`` run into ``out``, then again (which must reuse its stages);
    both must succeed."""
    args = ("--quick", "--quiet", "--workers", "1", "--out", str(out), *extra)
    runs = (run_benchmark(name, *args), run_benchmark(name, *args))
    for done in runs:
        assert done.returncode == 0, done.stderr[-3000:]
    return runs


def read_items(fmt: str, path: Path) -> tuple[list[Session], list[Reject]]:
    """What importer ``fmt`` reads from ``path``: the sessions and the rejects, each in order."""
    from ctxreplay.datasets.importers import get_importer

    items = list(get_importer(fmt).read(path))
    return (
        [i for i in items if isinstance(i, Session)],
        [i for i in items if isinstance(i, Reject)],
    )


def count(text: str) -> int:
    """Tokens of ``text`` (o200k_base); the tokenizer loads on the first call, not on import."""
    return get_tokenizer().count(text)


def numbered(messages: list[Message], start: int = 0) -> tuple[Message, ...]:
    """Messages numbered from ``start`` with their token counts, as a judge's input holds them
    (not validated: a test may build what a corpus would refuse)."""
    return tuple(
        replace(m, seq=start + i, tokens=sum(count(s) for p in m.parts for s in p.token_texts()))
        for i, m in enumerate(messages)
    )


def counted(messages: list[Message]) -> list[Message]:
    """Messages as the corpus would hold them: validated, numbered, token counts stored."""
    checked = validate_session(Session("test", "t", messages)).messages
    return [
        replace(m, tokens=sum(count(s) for p in m.parts for s in p.token_texts())) for m in checked
    ]


def system(text: str = "You are a coding agent.") -> Message:
    return Message("system", (Part.text(text),))


def user(text: str) -> Message:
    return Message("user", (Part.text(text),))


def say(text: str) -> Message:
    return Message("assistant", (Part.text(text),))


def call(cid: str, name: str, args: dict, text: str | None = None) -> Message:
    parts = (Part.text(text),) if text else ()
    return Message("assistant", (*parts, Part.call(cid, name, args)))


def result(cid: str, body: str, error: bool = False) -> Message:
    return Message("tool", (Part.response(cid, body),), is_error=error)


def coding_session() -> list[Message]:
    """Two user turns; reads, a re-read (superseded), a failing run, an edit."""
    body = "\n".join(f"{i:4d}  line {i} of app.py" for i in range(1, 201))
    log = (
        "\n".join(f"test_case_{i} PASSED" for i in range(120))
        + "\nFAILED test_parse - KeyError: 'x'"
    )
    return counted(
        [
            system(),
            user("Fix the failing parser test."),
            call("c1", "read_file", {"path": "app.py"}, "Let me look."),
            result("c1", body),
            call("c2", "run_tests", {"target": "tests/"}),
            result("c2", log, error=True),
            say("The parser fails on a missing key."),
            user("Please also keep the public API unchanged."),
            call("c3", "read_file", {"path": "app.py"}),
            result("c3", body + "\n 201  # end"),
            call(
                "c4",
                "edit_file",
                {"path": "app.py", "old_str": "line 7 of", "new_str": "line seven of"},
            ),
            result("c4", "ok"),
        ]
    )


def convo(name: str, turns: int, body: str = "x") -> list[Message]:
    """system (0); then per turn t: user (4t-3), assistant call (4t-2), tool result (4t-1),
    assistant answer (4t); the result is ``body`` fifty times."""
    msgs = [Message("system", (Part.text("sys"),))]
    for t in range(1, turns + 1):
        msgs += [
            Message("user", (Part.text(f"question {t}"),)),
            Message("assistant", (Part.call(f"{name}{t}", "lookup", {"q": t}),)),
            Message("tool", (Part.response(f"{name}{t}", body * 50),)),
            Message("assistant", (Part.text(f"answer {t}"),)),
        ]
    return msgs


def make_corpus(path: Path, sessions: Mapping[str, Sequence[Message]]) -> Corpus:
    """A corpus of hand-built sessions: source id ``name`` becomes session id ``s-<name>``."""
    w = CorpusWriter(path, get_tokenizer())
    for name, messages in sessions.items():
        session = Session("openai-chat", name, list(messages), key=name, session_id=f"s-{name}")
        w.add(validate_session(session))
    w.close([])
    return Corpus(path)


def view_input(prefix: tuple, future: tuple, *edits, case_id: str = "case"):
    """A judge's input for ``prefix`` committed under ``edits`` (``replay.plan.Edit``), with the
    real future: what the engine would hand a judge for one (case, policy)."""
    from ctxreplay.judges.base import JudgeInput
    from ctxreplay.replay.objects import build_index
    from ctxreplay.replay.plan import Plan, rehearse
    from ctxreplay.replay.view import commit

    index = build_index(prefix, count)
    view = commit(rehearse(Plan.of(*edits), index), prefix, index, count)
    return JudgeInput(
        case_id, "s", "p", prefix, view.messages, future, index, dict(view.actions), view.archives
    )

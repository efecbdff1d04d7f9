"""The shared folder (``../shared``: the real corpora and the labelled sets) is optional: a
user's clone has none. Every test reaches it through ``builders.shared_path`` and carries the
``corpora`` mark, which skips it with the reason when the folder is absent. Checked two ways:
no test module names the folder around ``shared_path`` (read from the source), and a test that
does the one or forgets the other fails (run in a child pytest).
"""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
#: the modules that define the way in (and nothing else may hold it)
WAY_IN = {TESTS / "builders.py", TESTS / "conftest.py"}
#: a literal path into the shared folder
SHARED_LITERAL = re.compile(r"(^|/)\.\./shared\b|\bshared/(corpora|gold-dev|gold-long)\b")


def _bypasses(path: Path) -> list[str]:
    """Where a module reaches the shared folder other than through ``shared_path``."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    prose = {  # docstrings and other bare strings may name the folder: they read nothing
        id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr)
    }
    for node in ast.walk(tree):
        where = f"{path.name}:{getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.ImportFrom) and node.module == "builders":
            found += [f"{where} imports {a.name}" for a in node.names if a.name == "_CORPORA"]
        elif isinstance(node, ast.Attribute) and node.attr == "_CORPORA":
            found.append(f"{where} reads builders._CORPORA")
        elif (
            isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in prose
        ):
            if node.value == "CTXREPLAY_CORPORA" or SHARED_LITERAL.search(node.value):
                found.append(f"{where} names the shared folder: {node.value!r}")
        elif (
            isinstance(node, ast.BinOp)
            and isinstance(node.op, ast.Div)
            and isinstance(node.right, ast.Constant)
            and node.right.value == "shared"
        ):
            found.append(f"{where} joins a path onto 'shared'")
    return found


def test_no_test_reaches_the_shared_folder_around_shared_path() -> None:
    modules = [p for p in sorted(TESTS.rglob("*.py")) if p not in WAY_IN and p != Path(__file__)]
    assert len(modules) > 50
    assert [b for p in modules for b in _bypasses(p)] == []


def test_only_test_modules_call_shared_path() -> None:
    """CI reruns the test modules that call ``shared_path`` with the folder hidden (``.ci/run``
    greps for them): a helper module calling it would hide its callers from that run."""
    helpers = [p for p in sorted(TESTS.rglob("*.py")) if not p.name.startswith("test_")]
    calls = re.compile(r"\b(corpus_path|shared_path)\(")
    assert [p.name for p in helpers if p not in WAY_IN and calls.search(p.read_text())] == []


def test_the_check_sees_each_way_around(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(
        "from pathlib import Path\nimport os\nfrom builders import _CORPORA\n"
        "A = Path(__file__).parent / 'shared'\nB = '../shared/gold-dev/cases.jsonl'\n"
        "C = os.environ['CTXREPLAY_CORPORA']\n"
    )
    assert len(_bypasses(bad)) == 4


CHILD_TESTS = """
import pytest
from builders import corpus_path, shared_path

@pytest.mark.corpora
def test_marked():
    assert corpus_path("tau-bench").is_dir()

def test_unmarked():
    shared_path("gold-dev")

@pytest.fixture
def real(request):
    return corpus_path("tau-bench")

@pytest.mark.corpora
def test_marked_fixture(real):
    assert real.is_dir()
"""


def _child(tmp_path: Path, corpora: Path) -> subprocess.CompletedProcess[str]:
    """The three tests above run by a child pytest with this suite's conftest and builders,
    the shared folder at ``corpora``."""
    for name in ("conftest.py", "builders.py"):
        shutil.copy(TESTS / name, tmp_path / name)
    (tmp_path / "test_child.py").write_text(CHILD_TESTS)
    env = {"CTXREPLAY_CORPORA": str(corpora), "PATH": "/usr/bin:/bin"}
    args = ["-p", "no:cacheprovider", "-rs", "-o", "markers=corpora: test", str(tmp_path)]
    return subprocess.run(
        [sys.executable, "-m", "pytest", *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_marked_tests_skip_with_the_reason_when_the_folder_is_absent(tmp_path: Path) -> None:
    out = _child(tmp_path, tmp_path / "nowhere" / "corpora")
    # both marked tests skip before their fixtures run; the unmarked one fails loudly
    assert "1 failed, 2 skipped" in out.stdout, out.stdout
    assert f"real corpora not available at {tmp_path}/nowhere/corpora" in out.stdout
    assert "is not marked @pytest.mark.corpora" in out.stdout


def test_an_unmarked_test_fails_even_where_the_folder_is_present(tmp_path: Path) -> None:
    corpora = tmp_path / "shared" / "corpora"
    (corpora / "tau-bench").mkdir(parents=True)
    (corpora.parent / "gold-dev").mkdir()
    out = _child(tmp_path, corpora)
    assert "1 failed, 2 passed" in out.stdout, out.stdout
    assert "test_unmarked" in out.stdout and "is not marked @pytest.mark.corpora" in out.stdout


@pytest.mark.parametrize("script", ["bench_import.py", "bench_llm_prompt.py"])
def test_benchmarks_say_where_they_looked_for_the_corpora(tmp_path: Path, script: str) -> None:
    nowhere = tmp_path / "nowhere"
    out = subprocess.run(
        [sys.executable, str(TESTS.parent / "benchmarks" / script)],
        env={"CTXREPLAY_CORPORA": str(nowhere), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 1, out.stdout + out.stderr
    assert f"no corpora at {nowhere}" in out.stdout + out.stderr

"""README lines run as written: the Python snippet, the import of a user's own coding-agent
logs, the calibration recipe, the sweep recipe and the ways to get the plot, each run literally
in a folder laid out as the README assumes (``traces/``, ``labels/``, a home with
``~/.claude/projects`` and ``~/.codex/sessions``). ``test_readme.py`` checks that every other
command and option the README shows exists."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from builders import FIXTURES

README = Path(__file__).resolve().parents[1] / "README.md"
LOCO = FIXTURES / "loco"


def bash_blocks() -> list[str]:
    """The README's bash blocks, continuation lines joined and comments dropped."""
    blocks = re.findall(r"```bash\n(.*?)```", README.read_text(), re.S)
    out = []
    for block in blocks:
        lines = [ln.split("  #")[0].strip() for ln in block.replace("\\\n", " ").splitlines()]
        out.append("\n".join(ln for ln in lines if ln))
    return out


def block_with(needle: str) -> str:
    (found,) = [b for b in bash_blocks() if needle in b]
    return found


def inline(prefix: str) -> list[str]:
    """The README's inline ``ctxreplay …`` commands that start with ``prefix``."""
    prose = re.sub(r"```.*?```", "", README.read_text(), flags=re.S)
    commands = [" ".join(s.split()) for s in re.findall(r"`(ctxreplay [^`]+)`", prose, re.S)]
    return [c for c in commands if c.startswith(prefix)]


def run_lines(script: str, cwd: Path, home: Path | None = None) -> str:
    """``script`` run by bash, line by line (the first failure stops it), with this
    environment's ``ctxreplay`` first on the PATH."""
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "HOME": str(home or cwd),
    }
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, f"{script}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"
    return done.stdout


def test_the_python_snippet_runs_as_written(capsys: pytest.CaptureFixture[str]) -> None:
    # the API example (the plugin example is run by tests/policies/test_readme_plugin.py)
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    assert len(blocks) == 2
    (snippet,) = [b for b in blocks if "replay_messages" in b]
    exec(compile(snippet, "README.md", "exec"), {})
    rate, committed, messages = capsys.readouterr().out.split()
    assert 0 < float(rate) < 1 and committed == "True" and int(messages) > 0


def test_coding_agent_logs_import_from_home_into_one_corpus(tmp_path: Path) -> None:
    home = tmp_path / "home"
    shutil.copytree(FIXTURES / "claude-code", home / ".claude" / "projects" / "-home-dev-shop")
    shutil.copytree(FIXTURES / "codex-cli", home / ".codex" / "sessions" / "2025" / "06")
    line = "ctxreplay import ~/.claude/projects ~/.codex/sessions -o corpus"
    assert line in bash_blocks()  # a block of its own (the compaction recipe starts with it too)
    out = run_lines(line, tmp_path, home)
    assert "by format: claude-code" in out and "codex-cli" in out
    assert (tmp_path / "corpus" / "manifest.json").is_file()


def test_sql_describe_runs_as_written(tmp_path: Path) -> None:
    (line,) = inline("ctxreplay sql --describe")
    assert "sessions" in run_lines(line, tmp_path)


@pytest.fixture(scope="module")
def labelled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder as the calibration recipe assumes: ``traces/`` and ``labels/``, the recipe run
    in it."""
    root = tmp_path_factory.mktemp("readme")
    traces = root / "traces"
    for corpus in (LOCO / "corpora").iterdir():
        shutil.copytree(corpus, traces / corpus.name)
    labels = root / "labels"
    labels.mkdir()
    for name in ("cases.jsonl", "dependencies.jsonl"):
        text = "".join((LOCO / part / name).read_text() for part in ("labels-a", "labels-b"))
        (labels / name).write_text(text)
    out = run_lines(block_with("--cuts labels/cases.jsonl"), root)
    assert "against deps:" in out and "sensitivity" in out
    return root


def test_the_calibration_recipe_runs_as_written(labelled: Path) -> None:
    assert (labelled / "run" / "calibration").is_dir()
    assert list((labelled / "run" / "calibration").glob("flow-*.json"))


def test_the_plot_lines_write_the_pngs(labelled: Path) -> None:
    lines = inline("ctxreplay report run -o")
    assert {ln.split()[-1] for ln in lines} == {"report.md", "tables", "report.html"}
    run_lines("\n".join(lines), labelled)
    for png in ("report.png", "tables/tradeoff.png"):
        assert (labelled / png).read_bytes().startswith(b"\x89PNG"), png
    assert (labelled / "report.html").read_text().startswith("<!doctype html>")


def test_the_sweep_recipe_runs_as_written(labelled: Path) -> None:
    out = run_lines(block_with("ctxreplay sweep corpus"), labelled)
    assert "Frontier" in out


def test_the_compaction_audit_recipe_runs_as_written(tmp_path: Path) -> None:
    """A home holding Claude Code and Codex CLI logs with recorded compactions: the recipe cuts a
    case before each, replays the recorded summary and reports it."""
    home = tmp_path / "home"
    shutil.copytree(FIXTURES / "claude-code", home / ".claude" / "projects" / "-home-dev-shop")
    shutil.copytree(FIXTURES / "codex-cli", home / ".codex" / "sessions" / "2025" / "06")
    out = run_lines(block_with("--trigger compactions"), tmp_path, home)
    assert "by trigger: compactions 3" in out
    assert re.search(r"^recorded +3 +3 ", out, re.M), out

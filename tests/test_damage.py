"""Damaged run and corpus state is detected and named: a resumed replay redoes what a done-marker
cannot vouch for, the judge sets unreadable verdict parts aside and turns a damaged archive into
an unscored verdict, readers raise one error naming the file and its repair, and temporary files
killed writers left are removed."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from ctxreplay.cli import main
from ctxreplay.datasets.cases import cut_corpus
from ctxreplay.datasets.store import Corpus, CorpusError, DamagedCorpusError
from ctxreplay.engines.judge import run_judge
from ctxreplay.engines.replay import run_replay
from ctxreplay.files import remove_stale_temps, stale_temp
from ctxreplay.runs import (
    DamagedRunError,
    Run,
    RunError,
    chunk_path,
    done_path,
    query_verdicts,
    read_done,
    read_verdicts,
    slug,
)

POLICIES = ["noop", "self-gc"]


def replay(corpus: Path, cases: Path, run: Path, policies=POLICIES):
    return run_replay(corpus, cases, policies, run, workers=1, chunk_size=8, progress=False)


@pytest.fixture(scope="module")
def base(synth_corpus: Path, synth_cases: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = tmp_path_factory.mktemp("damage") / "run"
    replay(synth_corpus, synth_cases, run)
    run_judge(run, "flow", workers=1, progress=False)
    return run


@pytest.fixture
def run(base: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "run"
    shutil.copytree(base, copy)
    return copy


def tables(run: Path) -> dict[str, pl.DataFrame]:
    r = Run(run)
    return {t: r.table(t).sort(["policy", "case_id"]) for t in ("figures", "views")}


def truncate(path: Path, keep: float = 0.5) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * keep)])


def same(a: dict[str, pl.DataFrame], b: dict[str, pl.DataFrame]) -> bool:
    return all(a[t].equals(b[t]) for t in a)


# --- replay parts and their done-markers ----------------------------------------------------


def test_a_done_marker_records_rows_sizes_and_what_the_parts_were_made_from(run: Path) -> None:
    marker = read_done(run, "self-gc", 0)
    assert marker is not None
    assert marker["policy"] == "self-gc" and marker["policy_spec"]["name"] == "self-gc"
    assert {"corpus_fingerprint", "cases_fingerprint", "cases"} <= set(marker)
    for table in ("figures", "decisions", "views"):
        part = chunk_path(run, table, "self-gc", 0)
        assert marker["parts"][table]["rows"] == pq.read_metadata(part).num_rows
        assert marker["parts"][table]["bytes"] == part.stat().st_size


@pytest.mark.parametrize("table", ["figures", "views", "decisions"])
def test_a_truncated_part_is_named_by_readers_and_redone_on_resume(
    run: Path, base: Path, synth_corpus, synth_cases, table: str
) -> None:
    whole = tables(base)
    part = chunk_path(run, table, "self-gc", 3)
    truncate(part)
    with pytest.raises(DamagedRunError, match=rf"{part.name} is damaged.*re-run `ctxreplay replay"):
        Run(run).table("figures")  # any table: a reader of one reads the others
    summary = replay(synth_corpus, synth_cases, run)
    assert (summary.computed, summary.skipped) == (1, 2 * summary.chunks - 1)
    assert same(tables(run), whole)


def test_a_part_with_other_rows_than_its_marker_is_redone(
    run: Path, base: Path, synth_corpus, synth_cases
) -> None:
    part = chunk_path(run, "views", "noop", 2)
    table = pq.read_table(part)
    pq.write_table(table.slice(0, table.num_rows - 1), part)  # readable, one row short
    with pytest.raises(DamagedRunError, match="rows, written with"):
        Run(run).table("views")
    assert replay(synth_corpus, synth_cases, run).computed == 1
    assert same(tables(run), tables(base))


def test_a_missing_part_is_named_and_redone(run: Path, base, synth_corpus, synth_cases) -> None:
    part = chunk_path(run, "decisions", "noop", 0)
    part.unlink()
    with pytest.raises(DamagedRunError, match=rf"{part.name} is missing"):
        Run(run).table("figures")
    assert replay(synth_corpus, synth_cases, run).computed == 1
    assert part.is_file()


def test_a_chunk_without_its_done_marker_is_redone(run: Path, synth_corpus, synth_cases) -> None:
    done_path(run, "noop", 4).unlink()
    assert Run(run).table("figures").height  # the parts themselves still read
    summary = replay(synth_corpus, synth_cases, run)
    assert summary.computed == 1 and read_done(run, "noop", 4) is not None


def test_without_a_manifest_parts_of_other_cases_are_not_reused(
    run: Path, synth_corpus: Path, tmp_path: Path
) -> None:
    """The issue's case: manifest.json deleted, then a replay with a different cases file
    reused the old chunks (4,770 of 8,050 rows of cases not in the new file), exit 0."""
    (run / "manifest.json").unlink()
    other = cut_corpus(Corpus(synth_corpus), tmp_path / "other.parquet", triggers=["every:3"])[1]
    before = {p: p.read_bytes() for p in run.rglob("chunk-*.parquet")}
    with pytest.raises(RunError, match="cannot be attributed to these corpus and cases"):
        replay(synth_corpus, other, run)
    assert {p: p.read_bytes() for p in run.rglob("chunk-*.parquet")} == before  # untouched


def test_without_a_manifest_parts_of_the_same_cases_are_reused(
    run: Path, base: Path, synth_corpus, synth_cases
) -> None:
    (run / "manifest.json").unlink()
    summary = replay(synth_corpus, synth_cases, run, policies=["noop"])
    assert summary.computed == 0
    # the other policy's parts are attributed by their markers: the manifest lists it again
    assert set(Run(run).policies) == set(POLICIES)
    assert same(tables(run), tables(base))


def test_a_corrupt_manifest_is_named_by_readers_and_rebuilt_by_replay(
    run: Path, base: Path, synth_corpus, synth_cases
) -> None:
    manifest = run / "manifest.json"
    manifest.write_text(manifest.read_text()[:150])
    with pytest.raises(RunError, match=r"manifest.json is damaged"):
        Run(run)
    assert replay(synth_corpus, synth_cases, run).computed == 0
    assert (run / "manifest.json.damaged").is_file()
    assert json.loads(manifest.read_text())["policies"].keys() == set(POLICIES)
    assert same(tables(run), tables(base))


# --- verdicts --------------------------------------------------------------------------------


def verdict_parts(run: Path) -> list[Path]:
    return sorted((run / "verdicts" / slug("flow")).glob("*.parquet"))


def test_a_truncated_verdict_part_is_named_then_set_aside_and_rejudged(
    run: Path, base: Path
) -> None:
    whole = read_verdicts(base).sort(["policy", "case_id"])
    part = verdict_parts(run)[0]
    lost = pq.read_metadata(part).num_rows
    truncate(part)
    with pytest.raises(DamagedRunError, match=rf"{part.name} is damaged.*ctxreplay judge"):
        read_verdicts(run)
    with pytest.raises(DamagedRunError, match=rf"{part.name} is damaged.*ctxreplay judge"):
        query_verdicts(run, lambda scan: scan.select("label"))  # the report's reader too
    summary = run_judge(run, "flow", workers=1, progress=False)
    assert summary.judged == lost and summary.set_aside == [part.with_name(part.name + ".damaged")]
    assert "set aside damaged" in summary.render()
    again = read_verdicts(run).sort(["policy", "case_id"])
    assert (
        again.height == whole.height and not again.select("policy", "case_id").is_duplicated().any()
    )
    assert again["label"].to_list() == whole["label"].to_list()


def test_a_verdicts_file_is_named_then_set_aside(run: Path, base: Path) -> None:
    shutil.rmtree(run / "verdicts")
    (run / "verdicts").write_text("oops\n")
    with pytest.raises(DamagedRunError, match="is a file, not the verdicts folder"):
        read_verdicts(run)
    summary = run_judge(run, "flow", workers=1, progress=False)
    assert summary.judged == read_verdicts(base).height
    assert (run / "verdicts.damaged").is_file()


@pytest.mark.parametrize("how", ["altered", "deleted"])
def test_a_damaged_archive_makes_its_verdicts_unscored_and_the_run_goes_on(
    run: Path, base: Path, how: str
) -> None:
    shutil.rmtree(run / "verdicts")
    payload = sorted(p for p in (run / "sidecar").rglob("*") if p.is_file())[0]
    if how == "altered":
        data = bytearray(payload.read_bytes())
        data[len(data) // 2] ^= 0xFF
        payload.write_bytes(bytes(data))
    else:
        payload.unlink()
    summary = run_judge(run, "flow", workers=2, progress=False)
    verdicts = read_verdicts(run)
    assert verdicts.height == read_verdicts(base).height == summary.judged
    damaged = verdicts.filter(pl.col("unscored_reason").str.contains("archived payload damaged"))
    assert 0 < damaged.height < verdicts.height
    assert damaged["unscored_reason"].str.contains(payload.name[:16]).all()
    assert not damaged["retryable"].any()  # not a model failure: asking again cannot help


def test_a_damaged_judge_state_is_computed_again(run: Path, base: Path) -> None:
    for state in (run / "judge-state").glob("*.json"):
        state.write_text("{half")
    verdict_parts(run)[0].unlink()
    run_judge(run, "flow", workers=1, progress=False)
    assert read_verdicts(run).height == read_verdicts(base).height
    for state in (run / "judge-state").glob("*.json"):
        json.loads(state.read_text())


# --- temporary files -------------------------------------------------------------------------


def make_temp(folder: Path, name: str, age: float = 3600.0) -> Path:
    path = folder / name
    path.write_bytes(b"half")
    then = time.time() - age
    os.utime(path, (then, then))
    return path


def test_only_temporary_files_of_writers_that_are_gone_are_removed(tmp_path: Path) -> None:
    dead = make_temp(tmp_path, ".chunk-00000.parquet.999999999-abcd1234.tmp")
    unnamed = make_temp(tmp_path, ".manifest.json.x1y2z3_a.tmp")  # older versions: no pid
    live = make_temp(tmp_path, f".chunk-00001.parquet.{os.getppid()}-abcd1234.tmp")
    mine = make_temp(tmp_path, f".chunk-00002.parquet.{os.getpid()}-abcd1234.tmp")
    fresh = make_temp(tmp_path, ".chunk-00003.parquet.abcd1234.tmp", age=-5)  # after we started
    data = make_temp(tmp_path, "chunk-00000.parquet")
    hidden = make_temp(tmp_path, ".notes.tmp")
    assert stale_temp(dead) and stale_temp(unnamed) and not stale_temp(live)
    removed = remove_stale_temps(tmp_path)
    assert sorted(removed) == sorted([dead, unnamed])
    assert all(p.exists() for p in (live, mine, fresh, data, hidden))


def test_replay_and_judge_remove_leftover_temporary_files(
    run: Path, synth_corpus, synth_cases
) -> None:
    folder = chunk_path(run, "figures", "noop", 0).parent
    left = make_temp(folder, ".chunk-00000.parquet.999999999-deadbeef.tmp")
    replay(synth_corpus, synth_cases, run)
    assert not left.exists()
    left = make_temp(run / "verdicts" / slug("flow"), ".part-1.parquet.999999999-deadbeef.tmp")
    run_judge(run, "flow", workers=1, progress=False)
    assert not left.exists()


# --- the corpus ------------------------------------------------------------------------------


@pytest.fixture
def corpus(synth_corpus: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "corpus"
    shutil.copytree(synth_corpus, copy)
    return copy


def test_a_truncated_corpus_part_is_named(corpus: Path) -> None:
    part = sorted((corpus / "messages").rglob("*.parquet"))[0]
    truncate(part)
    c = Corpus(corpus)
    assert c.sessions().height  # another table: still reads
    for read in (
        c.messages,
        lambda: list(c.iter_sessions()),
        lambda: c.load_session(c.sessions()["session_id"][0]),
        lambda: c.sql("SELECT count(*) FROM messages"),
    ):
        with pytest.raises(DamagedCorpusError) as e:
            read()
        assert str(part) in str(e.value) and "ctxreplay import" in str(e.value)


def test_a_corrupt_corpus_manifest_is_named(corpus: Path) -> None:
    manifest = corpus / "manifest.json"
    manifest.write_text(manifest.read_text()[:80])
    with pytest.raises(CorpusError, match=r"manifest\.json is damaged"):
        Corpus(corpus)


# --- the commands: one line, exit 2 ----------------------------------------------------------


def test_commands_name_a_damaged_part_in_one_line(run: Path, synth_corpus) -> None:
    case = Run(run).table("figures", "noop")["case_id"][0]  # before the damage: reads
    truncate(chunk_path(run, "views", "self-gc", 1))
    runner = CliRunner()
    for args in (
        ["report", str(run)],
        ["show", str(run), case, "--policy", "self-gc"],
        ["audit", str(run), "--category", "live_state"],
        ["judge", str(run), "--quiet"],
    ):
        result = runner.invoke(main, args)
        assert result.exit_code == 2, (args, result.output)
        lines = result.output.strip().splitlines()
        assert lines[-1].startswith("error: part ") and "is damaged" in lines[-1], args
        assert "re-run `ctxreplay replay" in lines[-1]
        assert not isinstance(result.exception, Exception) or isinstance(
            result.exception, SystemExit
        )

"""Corpora, cases and runs on object storage: the same commands against a real S3-compatible
server (moto's, on 127.0.0.1) give what they give on local folders, resume there, and never store
the credentials they were given through the environment."""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner, Result

from ctxreplay import storage
from ctxreplay.cli import main
from ctxreplay.datasets.cases import read_cases
from ctxreplay.datasets.store import Corpus
from ctxreplay.runs import Run, read_verdicts
from s3_server import ACCESS_KEY, S3, SECRET_KEY, moto_s3

POLICIES = ("noop", "tool-prune")


def cli(*args: str | Path, code: int = 0) -> Result:
    result = CliRunner().invoke(main, [str(a) for a in args])
    assert result.exit_code == code, (result.output, result.exception)
    return result


@dataclass(frozen=True)
class Both:
    """The same work done on local folders and on the S3 server."""

    s3: S3
    local: Path
    outputs: dict[str, str]  # what each S3 command printed


def _pipeline(corpus: str | Path, cases: str | Path, run: str | Path) -> dict[str, str]:
    out = {}
    out["cases"] = cli("cases", corpus, "-o", cases, "--trigger", "user-turns").output
    replay = ["replay", corpus, "--cases", cases, "-o", run, "--quiet", "--workers", "1"]
    for p in POLICIES:
        replay += ["--policy", p]
    out["replay"] = cli(*replay).output
    out["judge"] = cli("judge", run, "--quiet", "--workers", "1").output
    return out


@pytest.fixture(scope="module")
def both(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Both]:
    """A synthetic corpus exported as traces; imported, cut, replayed and judged locally and,
    from a trace file uploaded to the bucket, entirely on S3."""
    root = tmp_path_factory.mktemp("objects")
    with pytest.MonkeyPatch.context() as mp, moto_s3() as s3:
        mp.setenv("CTXREPLAY_CACHE_DIR", str(root / "cache"))
        cli("synth", "-o", root / "synth", "--sessions", "6", "--quiet")
        cli("export", root / "synth", "-o", root / "traces.jsonl")
        storage.write_bytes(s3.uri("in/traces.jsonl"), (root / "traces.jsonl").read_bytes())
        cli("import", root / "traces.jsonl", "-o", root / "corpus", "--quiet")
        outputs = {
            "import": cli("import", s3.uri("in/traces.jsonl"), "-o", s3.uri("corpus")).output
        }
        _pipeline(root / "corpus", root / "cases.parquet", root / "run")
        outputs |= _pipeline(s3.uri("corpus"), s3.uri("cases.parquet"), s3.uri("run"))
        yield Both(s3, root, outputs)


def _copy(uri: str) -> Path:
    """A local copy of a folder on the server, read with the local readers."""
    target = Path(tempfile.mkdtemp()) / uri.rsplit("/", 1)[-1]
    assert storage.download(uri, target) > 0
    return target


def test_locations_are_told_apart() -> None:
    assert storage.is_uri("s3://bucket/prefix") and storage.is_uri("gs://b/p")
    assert not storage.is_uri("runs/a") and not storage.is_uri("file:///tmp/x")
    assert not storage.is_uri(Path("s3:/bucket"))  # a Path is always local
    assert storage.location("s3://b/run/") == "s3://b/run"
    assert storage.location("file:///tmp/x") == Path("/tmp/x")
    assert storage.redact("s3://key:secret@b/p?x=1") == "s3://b/p"


def test_the_storage_layer_round_trips_on_s3(both: Both) -> None:
    uri = both.s3.uri("scratch")
    storage.write_text(f"{uri}/a/b.json", '{"x": 1}')
    storage.write_bytes(f"{uri}/c.bin", b"\0\1")
    assert storage.read_text(f"{uri}/a/b.json") == '{"x": 1}'
    assert storage.list_files(uri) == ["a/b.json", "c.bin"]
    assert (
        storage.is_dir(uri)
        and storage.is_file(f"{uri}/c.bin")
        and not storage.is_dir(f"{uri}/c.bin")
    )
    assert storage.fingerprint(f"{uri}/c.bin") == storage.fingerprint(_copy(uri) / "c.bin")
    storage.delete(uri)
    assert not storage.exists(uri) and storage.list_files(uri) == []


def test_import_to_s3_holds_what_a_local_import_holds(both: Both) -> None:
    assert "6 sessions" in both.outputs["import"] or "sessions: 6" in both.outputs["import"]
    keys = both.s3.keys("corpus/")
    assert "corpus/manifest.json" in keys
    assert any(k.startswith("corpus/messages/bucket=") for k in keys)
    assert not any(".build-" in k or k.endswith(".tmp") for k in keys)
    remote, local = Corpus(both.s3.uri("corpus")), Corpus(both.local / "corpus")
    assert remote.location == both.s3.uri("corpus")
    for name in ("sessions", "messages"):
        # where each session was read from: the same file name (the S3 one through a local copy)
        a, b = (
            pl.from_arrow(c.table(name))
            .drop("bucket", strict=False)
            .with_columns(pl.col("^source_location$").str.extract(r"([^/]+)$"))
            for c in (remote, local)
        )
        key = ["session_id", "seq"] if name == "messages" else ["session_id"]
        assert a.height == b.height > 0
        assert a.sort(key).equals(b.sort(key)), name
    tokens = [c.messages().select(pl.col("tokens").sum()).item() for c in (remote, local)]
    assert tokens[0] == tokens[1] > 0


def test_a_corpus_on_s3_is_replaced_only_with_overwrite(both: Both) -> None:
    uri = both.s3.uri("replaced")
    cli("synth", "-o", uri, "--sessions", "4", "--quiet")
    storage.write_text(f"{uri}/stale.txt", "left by someone")
    out = cli("synth", "-o", uri, "--sessions", "3", "--quiet", code=2).output
    assert "use --overwrite" in out
    assert Corpus(uri).sessions().height == 4
    cli("synth", "-o", uri, "--sessions", "3", "--quiet", "--overwrite")
    assert Corpus(uri).sessions().height == 3
    assert "replaced/stale.txt" not in both.s3.keys("replaced/")


def test_replay_and_judge_from_s3_to_s3_equal_the_local_run(both: Both) -> None:
    remote, local = Run(_copy(both.s3.uri("run"))), Run(both.local / "run")
    # the run names where its inputs are, so a later command on any machine finds them
    assert remote.manifest["corpus_path"] == both.s3.uri("corpus")
    assert remote.manifest["cases_path"] == both.s3.uri("cases.parquet")
    # the same cases (their file differs only in the corpus it names)
    cases = [read_cases(r.manifest["cases_path"])[0] for r in (remote, local)]
    assert cases[0].height > 0 and cases[0].equals(cases[1])
    for p in POLICIES:
        key = ["case_id"]
        views = [r.table("views", p).sort(key) for r in (remote, local)]
        assert views[0].height > 0 and views[0].equals(views[1]), p
    verdicts = [read_verdicts(r.path).sort(["policy", "case_id"]) for r in (remote, local)]
    assert verdicts[0].height == 2 * views[0].height
    assert verdicts[0].equals(verdicts[1])
    assert set(verdicts[0]["label"]) >= {"no_impact", "impact"}


def test_report_reads_a_run_on_s3(both: Both) -> None:
    remote = cli("report", both.s3.uri("run"), "--format", "json", "--bootstrap", "50").output
    local = cli("report", both.local / "run", "--format", "json", "--bootstrap", "50").output
    pick = lambda text: json.loads(text)["tables"]["no_impact"]  # noqa: E731
    assert pick(remote) == pick(local)


def test_report_writes_to_s3_with_its_plot_beside(both: Both) -> None:
    out = both.s3.uri("reports/run.md")
    cli("report", both.s3.uri("run"), "-o", out, "--bootstrap", "50")
    assert both.s3.keys("reports/") == ["reports/run.md", "reports/run.png"]
    assert b"no-impact" in both.s3.get("reports/run.md").lower()


def test_the_whole_pipeline_runs_into_s3_and_is_reused(both: Both) -> None:
    args = ["run", "-o", both.s3.uri("pipe"), "--synth-sessions", "3", "--policy", "noop"]
    args += ["--workers", "1", "--bootstrap", "20", "--quiet", "--report-format", "json"]
    cli(*args)
    manifest = json.loads(storage.read_text(both.s3.uri("pipe/run/manifest.json")))
    # the run names its corpus and cases where they now are, not the local copy it was made in
    assert manifest["corpus_path"] == both.s3.uri("pipe/corpus")
    assert manifest["cases_path"] == both.s3.uri("pipe/cases.parquet")
    again = cli(*args).output
    assert "corpus: reusing" in again and "replay: reusing" in again


def test_the_other_commands_take_uris_too(both: Both) -> None:
    s3 = both.s3
    info = [cli("info", c).output.split("\n", 1) for c in (s3.uri("corpus"), both.local / "corpus")]
    assert info[0][0].startswith(f"corpus {s3.uri('corpus')} (tokenizer")
    assert info[0][1] == info[1][1]
    cli("export", s3.uri("corpus"), "-o", s3.uri("out/chat.jsonl"))
    cli("export", both.local / "corpus", "-o", both.local / "chat.jsonl")
    lines = s3.get("out/chat.jsonl").splitlines()
    assert len(lines) == 6 and lines == (both.local / "chat.jsonl").read_bytes().splitlines()
    case = Run(both.local / "run").table("views", "tool-prune")["case_id"][0]
    shown = cli("show", s3.uri("run"), case, "--policy", "tool-prune", "--width", "100")
    assert (
        shown.output
        == cli("show", both.local / "run", case, "--policy", "tool-prune", "--width", "100").output
    )


def test_the_case_browser_reads_a_run_on_s3(both: Both, tmp_path: Path) -> None:
    """``ctxreplay view s3://…/run --bundle DIR`` holds the grid of the same run read locally."""
    import json

    def rows(run: str | Path, out: Path) -> list[dict]:
        cli("view", run, "--bundle", out, "--quiet")
        text = (out / "data" / "bundle.js").read_text()
        return json.loads(text[len("window.CTXREPLAY_BUNDLE=") : -2])["rows"]

    remote = rows(both.s3.uri("run"), tmp_path / "remote")
    assert remote and remote == rows(both.local / "run", tmp_path / "local")


def test_sql_over_a_run_on_s3(both: Both) -> None:
    query = (
        "select v.policy, v.label, count(*) n, sum(s.n_messages) m from verdicts v "
        "join sessions s using (session_id) group by all order by all"
    )
    remote = cli("sql", both.s3.uri("run"), query, "--format", "csv").output
    local = cli("sql", both.local / "run", query, "--format", "csv").output
    assert remote == local and remote.count("\n") > 2
    # the corpus on its own, with its hive partition column
    out = cli(
        "sql",
        both.s3.uri("corpus"),
        "select count(distinct bucket) b, count(*) n from sessions",
        "--format",
        "csv",
    )
    assert out.output.splitlines()[1].endswith(",6")
    bad = cli("sql", both.s3.uri("run"), "select nope from verdicts", code=2)
    assert "nope" in bad.output and SECRET_KEY not in bad.output


def test_resume_on_s3_skips_finished_parts(both: Both) -> None:
    s3 = both.s3
    before = {k: s3.get(k) for k in s3.keys("run/views/")}
    again = ["replay", s3.uri("corpus"), "--cases", s3.uri("cases.parquet"), "-o", s3.uri("run")]
    again += ["--quiet", "--workers", "1", *[a for p in POLICIES for a in ("--policy", p)]]
    out = cli(*again).output
    assert "(0 chunk-policies computed" in out
    assert {k: s3.get(k) for k in s3.keys("run/views/")} == before
    # a finished part lost on the server is the one part done again
    marker = next(k for k in s3.keys("run/done/") if "tool-prune" in k)
    storage.delete(s3.uri(marker))
    out = cli(*again).output
    assert (
        "(1 chunk-policies computed" in out and s3.uri(marker) and storage.is_file(s3.uri(marker))
    )
    assert "(0 already judged)" not in cli("judge", s3.uri("run"), "--quiet").output


def test_credentials_are_never_stored(both: Both) -> None:
    keys = both.s3.keys()
    assert any(k.startswith("run/") for k in keys)
    for key in keys:
        data = both.s3.get(key)
        assert SECRET_KEY.encode() not in data and ACCESS_KEY.encode() not in data, key
    for text in both.outputs.values():
        assert SECRET_KEY not in text and ACCESS_KEY not in text


def test_a_missing_or_wrong_location_is_one_line(both: Both) -> None:
    out = cli("info", both.s3.uri("nowhere"), code=2).output
    assert "does not exist" in out
    out = cli(
        "replay",
        both.s3.uri("run"),
        "--cases",
        both.s3.uri("cases.parquet"),
        "--policy",
        "noop",
        "-o",
        both.s3.uri("x"),
        code=2,
    ).output
    assert "is a ctxreplay run, not a corpus" in out and SECRET_KEY not in out


#: a process that dies (as if killed) between writing a temporary object and publishing it,
#: the first time it would publish a path containing ``{where}``
DIES_BEFORE_PUBLISHING = """
import os
from ctxreplay import storage
from ctxreplay.engines.replay import run_replay

real = storage._publish
def publish(fs, tmp, path):
    if {where!r} in path:
        os._exit(9)
    real(fs, tmp, path)
storage._publish = publish
run_replay({corpus!r}, {cases!r}, {policies!r}, {run!r}, workers=1, progress=False)
"""


@pytest.mark.parametrize("where", ["/figures/", "/done/"])
def test_a_writer_killed_before_publishing_leaves_nothing_taken_for_a_part(
    both: Both, where: str
) -> None:
    import subprocess
    import sys

    s3 = both.s3
    prefix = f"killed{where.strip('/')}"
    run = s3.uri(prefix)
    script = DIES_BEFORE_PUBLISHING.format(
        where=where, corpus=s3.uri("corpus"), cases=s3.uri("cases.parquet"),
        policies=list(POLICIES), run=run,
    )  # fmt: skip
    died = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert died.returncode == 9, died.stderr
    temps = [k for k in s3.keys(prefix + "/") if storage.is_temp(k)]
    assert temps and all(where in f"/{k}" for k in temps)  # it was written, not published
    # no reader takes it for a part: not listed, not copied, not a finished chunk
    assert not any(storage.is_temp(n) for n in storage.list_files(run))
    copy = _copy(run)
    assert not any(storage.is_temp(p.name) for p in copy.rglob("*"))
    assert not (copy / "done").exists()
    if where == "/figures/":
        assert Run(copy).table("figures").height == 0
    # the re-run does the chunk, removes the dead writer's object (one written before it
    # began: S3 keeps whole seconds), and equals the local run
    time.sleep(2.1)
    replay = ["replay", s3.uri("corpus"), "--cases", s3.uri("cases.parquet"), "-o", run]
    out = cli(*replay, "--quiet", "--workers", "1", *[a for p in POLICIES for a in ("--policy", p)])
    assert " 0 already done)" in out.output
    assert not [k for k in s3.keys(prefix + "/") if storage.is_temp(k)]
    for table in ("figures", "views", "done"):
        mine = {k.split("/", 1)[1]: s3.get(k) for k in s3.keys(f"{prefix}/{table}/")}
        theirs = {k.split("/", 1)[1]: s3.get(k) for k in s3.keys(f"run/{table}/")}
        assert mine == theirs and mine, table


def test_payloads_and_responses_are_kept_on_s3(both: Both) -> None:
    """A task on another node archives payloads and caches model answers in the run on S3."""
    from ctxreplay.llm.cache import ResponseCache
    from ctxreplay.runs import SidecarStore

    store = SidecarStore(both.s3.uri("kept/sidecar"))
    ref = store.put(b"\x00exact bytes\xff")
    assert store.put(b"\x00exact bytes\xff") == ref and ref in store
    assert store.recover(ref) == store.recover(ref[: len("sha256:") + 16]) == b"\x00exact bytes\xff"
    digest = ref.split(":")[1]
    storage.write_bytes(both.s3.uri(f"kept/sidecar/{digest[:2]}/{digest}"), b"altered")
    with pytest.raises(Exception, match="corrupt"):
        store.recover(ref)
    cache = ResponseCache(both.s3.uri("kept/llm-cache"))
    cache.put("ab" * 32, {"text": "é"})
    assert cache.get("ab" * 32) == {"text": "é"} and cache.get("cd" * 32) is None
    assert len(cache) == 1 and both.s3.keys("kept/llm-cache/") == [
        f"kept/llm-cache/ab/{'ab' * 32}.json"
    ]

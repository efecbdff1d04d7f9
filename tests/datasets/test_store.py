"""The corpus store: exact round trip, hash buckets, DuckDB views, rejects kept raw."""

from __future__ import annotations

import json

import polars as pl
import pyarrow.parquet as pq
from click.testing import CliRunner

from ctxreplay.cli import main
from ctxreplay.datasets.messages import Message, Part, Session, Usage
from ctxreplay.datasets.rejects import Reject
from ctxreplay.datasets.store import Corpus, CorpusWriter, bucket_of
from ctxreplay.datasets.tokenizer import get_tokenizer
from ctxreplay.datasets.validate import validate_session


def session(n: int) -> Session:
    msgs = [
        Message("system", (Part.text("You are a helpful agent."),)),
        Message("user", (Part.text(f"Task {n}: read the config"),)),
        Message(
            "assistant",
            (
                Part.text("Reading it."),
                Part.call(f"c{n}", "read_file", {"path": f"/etc/app{n}.toml"}),
            ),
            usage=Usage(100 + n, 50, 12),
        ),
        Message("tool", (Part.response(f"c{n}", f"port = {8000 + n}\nname = 'svc{n}'"),)),
        Message("assistant", (Part.text(f"The port is {8000 + n}."),)),
    ]
    return validate_session(
        Session("openai-chat", f"s{n}", msgs, key=f"k{n}", source_location="mem")
    )


def write(tmp_path, sessions, buckets=1):
    w = CorpusWriter(tmp_path / "c", get_tokenizer(), buckets=buckets, flush_messages=7)
    for s in sessions:
        assert w.add(s) is None
    w.close([{"path": "mem"}])
    return Corpus(tmp_path / "c")


def test_round_trip_messages_exactly(tmp_path) -> None:
    s = session(1)
    c = write(tmp_path, [s])
    (sid,) = c.sessions()["session_id"].to_list()
    back = c.load_session(sid)
    tok = get_tokenizer()
    for original, loaded in zip(s.messages, back, strict=True):
        assert loaded.parts == original.parts
        assert loaded.role == original.role
        assert loaded.usage == original.usage
        expected = sum(tok.count(t) for p in original.parts for t in p.token_texts())
        assert loaded.tokens == expected


def test_sessions_never_span_files_and_buckets_stream(tmp_path) -> None:
    c = write(tmp_path, [session(i) for i in range(40)], buckets=4)
    files = sorted((tmp_path / "c" / "messages").rglob("*.parquet"))
    owner: dict[str, str] = {}
    for f in files:
        bucket = int(f.parent.name.split("=")[1])
        for sid in set(pq.read_table(f, columns=["session_id"])["session_id"].to_pylist()):
            assert sid not in owner, f"{sid} in {owner.get(sid)} and {f}"
            owner[sid] = str(f)
            assert bucket_of(sid, 4) == bucket
    assert len(owner) == 40
    streamed = dict(c.iter_sessions())
    assert len(streamed) == 40 and all(len(m) == 5 for m in streamed.values())
    subset = sorted(owner)[:3]
    assert sorted(dict(c.iter_sessions(subset))) == subset


def test_duplicate_session_becomes_reject(tmp_path) -> None:
    w = CorpusWriter(tmp_path / "c", get_tokenizer())
    assert w.add(session(1)) is None
    dup = w.add(session(1))
    assert dup is not None and dup.reason == "duplicate_session"


def test_sql_and_frames(tmp_path) -> None:
    c = write(tmp_path, [session(i) for i in range(5)], buckets=2)
    frame = c.sql("SELECT role, count(*) AS n FROM messages GROUP BY role ORDER BY role")
    assert dict(frame.iter_rows()) == {"assistant": 10, "system": 5, "tool": 5, "user": 5}
    assert isinstance(c.messages(), pl.DataFrame) and c.messages().height == 25
    sessions = c.sessions()
    assert sessions["n_tool_calls"].to_list() == [1] * 5
    assert sessions["usage_prompt_tokens"].sum() == sum(100 + i for i in range(5))
    manifest = json.loads((tmp_path / "c" / "manifest.json").read_text())
    assert manifest["tokenizer"]["name"] == "o200k_base" and manifest["counts"]["sessions"] == 5


def test_rejects_keep_raw_bytes(tmp_path) -> None:
    w = CorpusWriter(tmp_path / "c", get_tokenizer())
    w.add(session(1))
    raw = b'{"broken": \xff\xfe'
    w.add_reject(
        Reject("f.jsonl", "invalid_utf8", "bad bytes", raw, "openai-chat", 3, 4, None, "$")
    )
    w.close([])
    rejects = Corpus(tmp_path / "c").rejects()
    assert rejects["raw"].to_list() == [raw]
    assert rejects.row(0, named=True)["line"] == 4


def test_cli_sql_prints_table(tmp_path) -> None:
    write(tmp_path, [session(i) for i in range(3)])
    out = CliRunner().invoke(
        main, ["sql", str(tmp_path / "c"), "SELECT count(*) AS n FROM sessions"]
    )
    assert out.exit_code == 0, out.output
    assert "│ 3   │" in out.output.splitlines()  # the one cell: three sessions
    bad = CliRunner().invoke(main, ["sql", str(tmp_path / "c"), "SELECT * FROM nope"])
    assert bad.exit_code == 2
    assert bad.output == "error: Catalog Error: Table with name nope does not exist!\n"


def test_info_reports_roles_outputs_and_rejects_by_reason(tmp_path) -> None:
    from ctxreplay.datasets.info import corpus_info

    w = CorpusWriter(tmp_path / "c", get_tokenizer())
    for i in range(3):
        w.add(session(i))
    w.add_reject(Reject("f.jsonl", "orphan_tool_result", "no call", b"{}", "openai-chat", 0, 1))
    w.close([])
    info = corpus_info(Corpus(tmp_path / "c"))
    assert info["overview"].row(0, named=True)["sessions"] == 3
    by_role = info["by_role"].group_by("role").agg(pl.col("messages").sum())
    assert dict(by_role.iter_rows()) == {"assistant": 6, "system": 3, "tool": 3, "user": 3}
    content = dict(info["by_content"].select("content", "messages").iter_rows())
    assert content["tool results"] == 3 and sum(content.values()) == 15
    assert info["largest_outputs"]["tool_name"].to_list() == ["read_file"] * 3
    reject = info["rejects"].row(0, named=True)
    assert reject["reason"] == "orphan_tool_result" and "never made" in reject["meaning"]
    out = CliRunner().invoke(main, ["info", str(tmp_path / "c")])
    assert out.exit_code == 0 and "by role" in out.output and "orphan_tool_result" in out.output

"""Streaming import: files read record by record, the corpus written a bounded chunk at a time.

Whatever the chunk size (how many rows are held before a part is written) and whatever the read
block size, the corpus is the same row for row; the streaming reader gives exactly what the
whole-text reader gives (records, rejects with file, line, JSON path, detail and raw bytes);
parts are sorted by session with row groups readers skip by their session-id statistics.
"""

from __future__ import annotations

import codecs
import itertools
import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from ctxreplay.cli import main
from ctxreplay.datasets.export import export_corpus
from ctxreplay.datasets.importers import reader
from ctxreplay.datasets.importers.reader import iter_records
from ctxreplay.datasets.importers.records import Record
from ctxreplay.datasets.importers.sniffing import decode_bytes
from ctxreplay.datasets.ingest import import_paths
from ctxreplay.datasets.rejects import Reject
from ctxreplay.datasets.store import Corpus, CorpusWriter, bucket_of
from ctxreplay.datasets.synth import generate
from ctxreplay.datasets.tokenizer import LONG_TEXT, get_tokenizer

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
BAD = FIXTURES / "bad"
READABLE = (".json", ".jsonl", ".traj")


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """A synthetic corpus exported as OpenAI chat JSONL, and as one JSON array with a malformed
    element and trailing text; plus the bad-record fixtures (rejects of every kind)."""
    folder = tmp_path_factory.mktemp("traces")
    generate(folder / "syn", sessions=24, seed=3, progress=False)
    export_corpus(folder / "syn", folder / "syn.jsonl")
    lines = (folder / "syn.jsonl").read_text().splitlines()
    array = ",\n".join([*lines[:5], '{"messages": [}', *lines[5:9]])
    (folder / "array.json").write_text(f"[\n{array}\n] trailing")
    return [folder / "syn.jsonl", folder / "array.json", *sorted(BAD.glob("*.jsonl"))]


def tables(corpus: Corpus) -> dict[str, list[dict[str, Any]]]:
    return {t: getattr(corpus, t)().to_dicts() for t in ("sessions", "messages", "rejects")}


def parquet_files(corpus: Path, table: str) -> list[Path]:
    return sorted((corpus / table).rglob("*.parquet"))


def test_a_tiny_chunk_writes_the_same_corpus_row_for_row(
    traces: list[Path], tmp_path: Path
) -> None:
    whole = import_paths(traces, tmp_path / "whole", fmt="openai-chat", progress=False)
    tiny = import_paths(
        traces, tmp_path / "tiny", fmt="openai-chat", progress=False, chunk_bytes=4096
    )
    assert whole.sessions == tiny.sessions > 20 and whole.rejects == tiny.rejects > 5
    assert len(parquet_files(tmp_path / "whole", "messages")) == 1
    parts = parquet_files(tmp_path / "tiny", "messages")
    assert len(parts) == 1  # many flushes, merged into one part per bucket when closed
    assert pq.ParquetFile(parts[0]).metadata.num_row_groups > 10
    assert tables(Corpus(tmp_path / "whole")) == tables(Corpus(tmp_path / "tiny"))
    manifests = [Corpus(tmp_path / n).manifest for n in ("whole", "tiny")]
    assert manifests[0]["counts"] == manifests[1]["counts"]
    assert manifests[0]["sources"] == manifests[1]["sources"]


def test_chunk_size_is_a_cli_option(traces: list[Path], tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main,
        ["import", str(traces[0]), "-o", str(tmp_path / "c"), "--quiet", "--chunk-mb", "0.01"],
    )
    assert result.exit_code == 0, result.output
    (part,) = parquet_files(tmp_path / "c", "messages")
    assert pq.ParquetFile(part).metadata.num_row_groups > 10  # row groups follow the chunk


def test_parts_are_sorted_by_session_in_row_groups_of_narrow_ranges(
    traces: list[Path], tmp_path: Path
) -> None:
    import_paths(traces[:1], tmp_path / "c", progress=False, chunk_bytes=200_000, buckets=2)
    for table in ("sessions", "messages"):
        for part in parquet_files(tmp_path / "c", table):
            file = pq.ParquetFile(part)
            keys = [(r["session_id"], r.get("seq", 0)) for r in file.read().to_pylist()]
            assert keys == sorted(keys)
            ranges = []
            for g in range(file.metadata.num_row_groups):
                column = file.metadata.row_group(g).column(0)
                assert column.path_in_schema == "session_id"
                ranges.append((column.statistics.min, column.statistics.max))
            assert all(a[1] <= b[0] for a, b in itertools.pairwise(ranges))
            sorting = file.metadata.row_group(0).sorting_columns
            assert [c.column_index for c in sorting] == ([0, 1] if table == "messages" else [0])


def many_row_groups(traces: list[Path], out: Path) -> Corpus:
    import_paths(traces[:1], out, progress=False, chunk_bytes=100_000, buckets=3)
    corpus = Corpus(out)
    groups = sum(pq.ParquetFile(p).metadata.num_row_groups for p in parquet_files(out, "messages"))
    assert groups >= 20
    return corpus


def test_iter_sessions_returns_exactly_the_sessions_asked_for_in_order(
    traces: list[Path], tmp_path: Path
) -> None:
    corpus = many_row_groups(traces, tmp_path / "c")
    ids = corpus.sessions()["session_id"].to_list()
    everything = dict(corpus.iter_sessions())
    assert sorted(everything) == ids
    rng = random.Random(7)
    for k in (1, 2, 5, len(ids) // 2):
        wanted = rng.sample(ids, k)
        got = list(corpus.iter_sessions([*wanted, "no-such-session"]))
        order = sorted(wanted, key=lambda s: (bucket_of(s, corpus.buckets), s))
        assert [sid for sid, _ in got] == order
        for sid, messages in got:
            assert messages == everything[sid] == corpus.load_session(sid)
            assert [m.seq for m in messages] == sorted(m.seq for m in messages)
    frame = corpus.messages([ids[3], ids[9]])
    assert set(frame["session_id"].to_list()) == {ids[3], ids[9]}


def test_reading_one_session_reads_only_the_row_groups_that_can_hold_it(
    traces: list[Path], tmp_path: Path
) -> None:
    corpus = many_row_groups(traces, tmp_path / "c")
    total = corpus.table("messages").num_rows
    sid = corpus.sessions()["session_id"].to_list()[11]
    for read in (
        lambda: corpus.load_session(sid),
        lambda: list(corpus.iter_sessions([sid])),
        lambda: corpus.messages([sid]),
    ):
        corpus.rows_read = 0
        read()
        assert 0 < corpus.rows_read <= total // 5


# --- the streaming reader against the whole-text reader ------------------------------------------


def whole_text(path: Path) -> Iterator[Record | Reject]:
    """The records of a file decoded whole: the reader streaming replaced (kept for UTF-16/32)."""
    data = path.read_bytes()
    return reader._text_records(path, "x", data, decode_bytes(data), True)


def flat(items: Iterator[Record | Reject]) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    for item in items:
        if isinstance(item, Record):
            out.append(("record", item.index, repr(item.value), item.raw, item.line))
        else:
            out.append(
                (
                    "reject",
                    item.source_location,
                    item.reason,
                    item.detail,
                    item.raw,
                    item.record,
                    item.line,
                    item.session_id,
                    item.json_path,
                )
            )
    return out


def damaged(tmp_path: Path) -> list[Path]:
    """Arrays with long, malformed, cut and numeric elements, and JSONL cut mid-record."""
    rng = random.Random(1)
    elements = [
        {"id": i, "text": "é" * rng.randrange(0, 4000), "n": rng.random() * 10 ** rng.randrange(30)}
        for i in range(40)
    ]
    text = json.dumps(elements, indent=1)
    files = {
        "big.json": text,
        "cut.json": text[: len(text) * 2 // 3],
        "broken.json": text.replace("}, {", "}, {{", 2).replace('"text"', '"te\\x"', 1),
        "lost_bracket.json": text.replace("}", "", 1),
        "numbers.json": "[" + ", ".join(str(rng.randrange(10**30)) for _ in range(300)) + ", 1e5]",
        "bom.json": "\ufeff" + text,
        "lines.jsonl": "\n".join(json.dumps(e) for e in elements) + '\n{"cut": "',
    }
    out = []
    for name, body in files.items():
        (tmp_path / name).write_text(body, encoding="utf-8")
        out.append(tmp_path / name)
    return out


@pytest.mark.parametrize("block", [1, 7, 256, reader.BLOCK_BYTES])
def test_streaming_reads_what_the_whole_text_reader_reads(
    block: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(reader, "BLOCK_BYTES", block)  # cuts fall inside records, strings, numbers
    files = [p for p in sorted(FIXTURES.rglob("*")) if p.suffix in READABLE]
    files += damaged(tmp_path)
    assert any(p.parent == BAD for p in files) and len(files) > 40
    for path in files:
        assert flat(iter_records(path, "x")) == flat(whole_text(path)), path


def test_utf16_files_are_read_whole_and_bad_utf8_rejects_only_its_line(tmp_path: Path) -> None:
    record = {"messages": [{"role": "user", "content": "hé"}]}
    wide = tmp_path / "wide.json"
    wide.write_bytes(codecs.BOM_UTF16_LE + json.dumps([record, record]).encode("utf-16-le"))
    assert [type(x) for x in iter_records(wide, "x")] == [Record, Record]
    mixed = tmp_path / "mixed.jsonl"
    good = json.dumps(record, ensure_ascii=False).encode()
    mixed.write_bytes(good + b"\n" + good.replace(b"h\xc3\xa9", b"h\xff") + b"\n" + good)
    items = list(iter_records(mixed, "x"))
    assert [type(x) for x in items] == [Record, Reject, Record]
    bad = items[1]
    assert isinstance(bad, Reject) and bad.reason == "invalid_utf8" and bad.line == 2
    assert bad.raw == mixed.read_bytes().split(b"\n")[1]


def test_a_streamed_line_keeps_where_its_bytes_are_not_the_bytes(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    lines = [json.dumps({"n": i, "text": "x" * (i * 1000)}).encode() for i in range(3)]
    path.write_bytes(b"\xef\xbb\xbf" + b"\r\n".join(lines) + b"\n")
    records = list(iter_records(path, "x"))
    assert all(isinstance(r, Record) and r._raw == b"" for r in records)
    assert [r.raw for r in records if isinstance(r, Record)] == [
        line + b"\r" for line in lines[:2]
    ] + [lines[2]]


# --- memory-minded details ---------------------------------------------------------------------


def test_long_texts_count_exactly_without_a_list_of_tokens() -> None:
    tok = get_tokenizer()
    text = ("see <|endoftext|> and 42 /usr/lib é\n" * (LONG_TEXT // 20))[: LONG_TEXT * 2]
    assert len(text) > LONG_TEXT
    expected = len(tok.encode(text))
    assert tok.count(text) == expected
    assert tok.count_many(["short", text, "x"]) == [tok.count("short"), expected, 1]


def test_the_token_cache_is_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ctxreplay.datasets import store
    from ctxreplay.datasets.messages import Message, Part

    monkeypatch.setattr(store, "_TOKEN_CACHE_CHARS", 10_000)
    writer = CorpusWriter(tmp_path / "c", get_tokenizer())
    for i in range(20):
        writer.count_tokens([Message("tool", (Part.text(f"{i} " + "w " * 1000),))])
        assert writer._token_cache.chars <= 10_000
    repeated = [Message("user", (Part.text("w " * 1000),))] * 2
    assert writer.count_tokens(repeated) == [get_tokenizer().count("w " * 1000)] * 2
    writer.abort()


def test_reading_every_session_streams_a_bucket_s_files_merged_in_id_order(
    traces: list[Path], tmp_path: Path
) -> None:
    """The whole corpus read with no ids: the same sessions, in (bucket, id) order, whether the
    corpus is one file or many files of many row groups, and from parts an older writer left
    unsorted (read whole and sorted)."""
    many = many_row_groups(traces, tmp_path / "many")
    one = import_paths(traces[:1], tmp_path / "one", progress=False, buckets=3)
    assert one.sessions > 20
    order = sorted(
        many.sessions()["session_id"].to_list(), key=lambda s: (bucket_of(s, many.buckets), s)
    )
    many.rows_read = 0
    got = list(many.iter_sessions())
    assert [sid for sid, _ in got] == order
    assert got == list(Corpus(tmp_path / "one").iter_sessions())
    assert many.rows_read == many.manifest["counts"]["messages"]
    # an unsorted part without sorting metadata, as written before parts were sorted
    for part in parquet_files(tmp_path / "many", "messages"):
        table = pq.read_table(part)
        pq.write_table(table.take(list(reversed(range(table.num_rows)))), part)
        assert not pq.ParquetFile(part).metadata.row_group(0).sorting_columns
    assert list(Corpus(tmp_path / "many").iter_sessions()) == got


def test_count_cache_is_bounded_in_characters_and_counts_exactly() -> None:
    """The replay's and judge's memoised counter: the least recently used texts go first once
    the characters kept pass the budget; a text too long to keep is still counted."""
    from ctxreplay.datasets.tokenizer import CountCache

    tok = get_tokenizer()
    cache = CountCache(tok, max_chars=1000)
    texts = [f"text {i} " + "x" * 233 for i in range(5)]  # 240 characters each
    for t in texts:
        assert cache(t) == tok.count(t)
    assert cache.chars == 960 and len(cache) == 4  # the first went to make room for the fifth
    assert cache.get(texts[0]) is None and cache.get(texts[4]) == tok.count(texts[4])
    cache(texts[1])  # used: now the most recent, so texts[2] is the oldest
    cache("y" * 239)
    assert cache.get(texts[2]) is None and cache.get(texts[1]) == tok.count(texts[1])
    long = "z " * 400
    assert cache(long) == tok.count(long) and cache.get(long) is None


def test_closing_merges_each_bucket_s_parts_into_one_sorted_part(tmp_path: Path) -> None:
    """Many flushes leave many parts per bucket; merged (a few at a time, over several rounds
    here) they make one sorted part per bucket with the same rows and the same sessions."""
    import shutil

    from ctxreplay.datasets import store
    from ctxreplay.datasets.synth import iter_sessions

    sessions = [s.session for s in iter_sessions(30, 11, None)]
    for name in ("split", "merged"):
        writer = CorpusWriter(
            tmp_path / name, get_tokenizer(), buckets=2, flush_messages=40, compact=False
        )
        for s in sessions:
            writer.add(s)
        writer.close([])
    split = Corpus(tmp_path / "split")
    for table in ("sessions", "messages"):
        for folder in sorted((tmp_path / "merged" / table).glob("bucket=*")):
            assert len(list(folder.glob("*.parquet"))) > 8
            store.compact_bucket(folder, store._SCHEMAS[table], 20_000, fan_in=3)
            (part,) = folder.glob("*.parquet")
            assert part.name == "part-00000.parquet"
            keys = [(r["session_id"], r.get("seq", 0)) for r in pq.read_table(part).to_pylist()]
            assert keys == sorted(keys)
            if table == "messages":
                assert pq.ParquetFile(part).metadata.num_row_groups > 1
    merged = Corpus(tmp_path / "merged")
    assert tables(merged) == tables(split)
    assert list(merged.iter_sessions()) == list(split.iter_sessions())
    ids = split.sessions()["session_id"].to_list()[::7]
    assert list(merged.iter_sessions(ids)) == list(split.iter_sessions(ids))
    shutil.rmtree(tmp_path / "split")

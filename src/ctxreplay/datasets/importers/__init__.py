"""Importers: one module per trace format, registered by name, detected from file contents.

Detection asks every registered importer how confident it is (``sniff``, from the file's first
records: keys and shapes, not text). The most confident wins; when the two best are close, the
file could be read either way and detection refuses to guess (``AmbiguousFormat``, naming the
candidates and ``--format``). A format whose files are also files of a more general one (a Cline
task's API history is an Anthropic message array) says so in ``Importer.refines``: where it is
sure of a file (``SURE_SCORE``), the general formats step back to ``CEDED_SCORE``.

A third-party importer imports what it needs from here (``__all__``: the ``Importer`` base, the
``importer`` decorator, ``Record``, ``Session``/``Message``/``Part``, the record checks) and is
found through an entry point in the group ``ctxreplay.importers`` (``ctxreplay.registry``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ...errors import CtxreplayError
from ...registry import lazy_exports
from .base import Importer, importers
from .records import Record
from .sniffing import SNIFF_BYTES

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..messages import Message, Part, Session, Usage
    from ..rejects import RecordError, Reject
    from .base import expect, require
    from .parts import content_parts
    from .sniffing import Sample, sample_of
    from .times import timestamp_of

#: the built-in formats, name → ``module:Class`` (each module registers its class with
#: ``@importers.register(name)``; a lookup imports the one module it names)
BUILTIN = {
    "aider": "ctxreplay.datasets.importers.aider:AiderImporter",
    "anthropic-messages": "ctxreplay.datasets.importers.anthropic_messages:AnthropicMessagesImporter",
    "claude-code": "ctxreplay.datasets.importers.claude_code:ClaudeCodeImporter",
    "cline": "ctxreplay.datasets.importers.cline:ClineImporter",
    "codex-cli": "ctxreplay.datasets.importers.codex_cli:CodexCliImporter",
    "gemini-cli": "ctxreplay.datasets.importers.gemini_cli:GeminiCliImporter",
    "goose": "ctxreplay.datasets.importers.goose:GooseImporter",
    "inspect-ai": "ctxreplay.datasets.importers.inspect_ai:InspectAIImporter",
    "langfuse": "ctxreplay.datasets.importers.langfuse:LangfuseImporter",
    "langsmith": "ctxreplay.datasets.importers.langsmith:LangSmithImporter",
    "openai-chat": "ctxreplay.datasets.importers.openai_chat:OpenAIChatImporter",
    "openai-responses": "ctxreplay.datasets.importers.openai_responses:OpenAIResponsesImporter",
    "opencode": "ctxreplay.datasets.importers.opencode:OpenCodeImporter",
    "openhands": "ctxreplay.datasets.importers.openhands:OpenHandsImporter",
    "otel-genai": "ctxreplay.datasets.importers.otel_genai:OtelGenAIImporter",
    "phoenix": "ctxreplay.datasets.importers.phoenix:PhoenixImporter",
    "swe-agent": "ctxreplay.datasets.importers.swe_agent:SweAgentImporter",
    "tau-bench": "ctxreplay.datasets.importers.tau_bench:TauBenchImporter",
    "tau2-bench": "ctxreplay.datasets.importers.tau2_bench:Tau2BenchImporter",
}

#: the rest of the plugin kit, imported when first used (``registry.lazy_exports``)
__getattr__ = lazy_exports(
    __name__,
    {
        "ctxreplay.datasets.messages": ("Message", "Part", "Session", "Usage"),
        "ctxreplay.datasets.rejects": ("RecordError", "Reject"),
        "ctxreplay.datasets.importers.base": ("expect", "require"),
        "ctxreplay.datasets.importers.parts": ("content_parts",),
        "ctxreplay.datasets.importers.sniffing": ("Sample", "sample_of"),
        "ctxreplay.datasets.importers.times": ("timestamp_of",),
    },
)

#: the least confidence that names a format
MIN_SCORE = 0.3
#: two formats closer than this (both above ``MIN_SCORE``) are ambiguous
AMBIGUITY_MARGIN = 0.15
#: how sure a format must be of a file for the formats it ``refines`` to step back
SURE_SCORE = 0.9
#: the most a refined format scores where its refinement is sure
CEDED_SCORE = 0.6


class AmbiguousFormat(CtxreplayError):
    """Two formats fit a file about equally well: the user must say which (``--format``)."""

    def __init__(self, path: Path, candidates: list[tuple[str, float]]) -> None:
        self.path = path
        self.candidates = candidates
        named = ", ".join(f"{name} ({score:.2f})" for name, score in candidates)
        super().__init__(
            f"{path}: the format is ambiguous, it fits {named}; "
            f"say which with --format {candidates[0][0]} (or another)"
        )


def scores(path: Path) -> list[tuple[str, float]]:
    """Every registered format's confidence about ``path``, best first (0 left out)."""
    with path.open("rb") as f:
        head = f.read(SNIFF_BYTES)
    found: list[tuple[str, float]] = []
    for name, cls in importers.items():
        importer = cls()
        if path.suffix and importer.suffixes and path.suffix not in importer.suffixes:
            continue
        try:
            score = float(importer.sniff(path, head))
        except Exception:  # a sniffer that fails on odd bytes has no opinion
            score = 0.0
        if score > 0:
            found.append((name, score))
    ceded = {
        general
        for name, score in found
        if score >= SURE_SCORE
        for general in importers.get(name).refines
    }
    found = [(name, min(score, CEDED_SCORE) if name in ceded else score) for name, score in found]
    return sorted(found, key=lambda item: (-item[1], item[0]))


def detect(path: Path) -> str | None:
    """The registered format most confident about ``path``, or None.

    Raises ``AmbiguousFormat`` when the two most confident formats are within
    ``AMBIGUITY_MARGIN`` of each other.
    """
    ranked = [(name, score) for name, score in scores(path) if score > MIN_SCORE]
    if not ranked:
        return None
    if len(ranked) > 1 and ranked[0][1] - ranked[1][1] < AMBIGUITY_MARGIN:
        close = [(n, s) for n, s in ranked if ranked[0][1] - s < AMBIGUITY_MARGIN]
        raise AmbiguousFormat(path, close)
    return ranked[0][0]


def get_importer(name: str) -> Importer:
    return importers.get(name)()


def importer(name: str) -> Callable[[type[Importer]], type[Importer]]:
    """Register an importer class under ``name`` (``importers.register``)."""
    return importers.register(name)


__all__ = [
    "SNIFF_BYTES",
    "AmbiguousFormat",
    "Importer",
    "Message",
    "Part",
    "Record",
    "RecordError",
    "Reject",
    "Sample",
    "Session",
    "Usage",
    "content_parts",
    "detect",
    "expect",
    "get_importer",
    "importer",
    "importers",
    "require",
    "sample_of",
    "scores",
    "timestamp_of",
]

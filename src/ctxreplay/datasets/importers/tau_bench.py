"""tau-bench results (sierra-research/tau-bench ``historical_trajectories/*.json``).

The file is a JSON list of ``{task_id, trial, reward, info, traj}``; ``traj`` is a plain OpenAI
Chat Completions message list (system prompt included, ``tool_calls[].function.arguments`` a JSON
string), so it is parsed by the openai-chat importer's ``messages_from_openai``. Each element is
one session, ``task-<task_id>/trial-<trial>``; a bad element rejects only itself. gpt-4o reused
tool-call ids within a session (73 times in ``gpt-4o-airline.json``), always after the earlier
call was answered; validation renames such ids (see ``validate.disambiguate_call_ids``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..messages import Session, as_dict
from ..rejects import Reject
from .base import Importer, expect, importers, require
from .openai_chat import (
    ANTHROPIC_BLOCKS_SCORE,
    file_digest,
    messages_from_openai,
    openai_messages_score,
)
from .records import Record
from .sniffing import capped, is_message, sample_of

#: tau-bench names its result files ``<model>-<env>.json`` (e.g. ``gpt-4o-airline.json``)
_STEM = re.compile(r"^(?P<model>.+)-(?P<env>airline|retail)$")


@importers.register("tau-bench")
class TauBenchImporter(Importer):
    """tau-bench run results: a list of ``{task_id, trial, reward, info, traj}``."""

    suffixes = (".json", ".jsonl")

    def sniff(self, path: Path, head: bytes) -> float:
        return sample_of(path, head).mean(_result_score)

    def read(self, path: Path) -> Iterator[Session | Reject]:
        self._digest = file_digest(path)
        yield from super().read(path)

    def sessions_from_record(self, path: Path, record: Record) -> Iterator[Session]:
        value = expect(record.value, dict, "$", "tau-bench result")
        traj = require(value, "traj", "$")
        task_id = value.get("task_id")
        trial = value.get("trial")
        source_id = f"task-{task_id}/trial-{trial}"
        info = as_dict(value.get("info"))
        task = as_dict(info.get("task"))
        metadata: dict[str, Any] = {
            "task_id": task_id,
            "trial": trial,
            "reward": value.get("reward"),
            "user_id": task.get("user_id"),
            "instruction": task.get("instruction"),
            "user_cost": info.get("user_cost"),
            "source": info.get("source"),
        }
        workload = "tau-bench"
        stem = _STEM.match(path.stem)
        if stem:
            workload = f"tau-bench/{stem['env']}"
            metadata["model"] = stem["model"]  # from the file name, the only place it is recorded
        yield Session(
            source_format=self.name,
            source_session_id=source_id,
            messages=messages_from_openai(traj, "$.traj"),
            key=f"{self._digest}:{record.index}:{source_id}",
            source_location=str(path),
            source_record=record.index,
            workload=workload,
            metadata={k: v for k, v in metadata.items() if v is not None},
        )


#: detection: a result: ``task_id`` beside a ``traj`` of OpenAI messages
RESULT_SCORE = 0.95
#: a ``traj`` of OpenAI messages without ``task_id``
TRAJ_SCORE = 0.7


def _result_score(record: Any) -> float:
    """A tau-bench result: ``{task_id, traj: [OpenAI messages], trial?, reward?, info?}``."""
    if not isinstance(record, dict) or not isinstance(record.get("traj"), list):
        return 0.0
    traj = record["traj"]
    if not all(is_message(m) for m in traj):
        return 0.0
    if traj and openai_messages_score(traj, None) == ANTHROPIC_BLOCKS_SCORE:
        return 0.0
    return capped(RESULT_SCORE if "task_id" in record else TRAJ_SCORE, record)

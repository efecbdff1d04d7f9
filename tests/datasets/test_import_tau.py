"""tau-bench and tau2-bench importers: small hand-written fixtures and the real public results."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxreplay.datasets.importers import detect, get_importer
from ctxreplay.datasets.ingest import import_paths
from ctxreplay.datasets.messages import Part, Usage
from ctxreplay.datasets.store import Corpus

from builders import FIXTURES, corpus_path, read_items

TAU = FIXTURES / "tau-bench" / "gpt-test-airline.json"
TAU2 = FIXTURES / "tau2-bench" / "results_small.json"


# --- tau-bench fixture ---------------------------------------------------------------------


def test_tau_bench_fixture_is_detected() -> None:
    assert detect(TAU) == "tau-bench"
    head = TAU.read_bytes()
    assert get_importer("tau-bench").sniff(TAU, head) > get_importer("openai-chat").sniff(TAU, head)


def test_tau_bench_fixture_messages_and_metadata() -> None:
    sessions, rejects = read_items("tau-bench", TAU)
    assert [s.source_session_id for s in sessions] == ["task-3/trial-0", "task-5/trial-0"]
    assert [r.session_id for r in rejects] == ["4"]
    s = sessions[0]
    assert [m.role for m in s.messages] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "assistant",
        "tool",
        "assistant",
    ]
    assert s.messages[2].parts == (
        Part.call("call_1", "get_reservation_details", '{"reservation_id":"ABC123"}'),
    )
    assert s.messages[3].parts == (
        Part.response("call_1", '{"status": "confirmed"}', "get_reservation_details"),
    )
    assert s.workload == "tau-bench/airline"
    assert s.metadata["model"] == "gpt-test"
    assert s.metadata["reward"] == 1.0
    assert s.metadata["user_id"] == "ana_ruiz_1234"
    assert s.key is not None and s.key.endswith(":0:task-3/trial-0")
    json.dumps(s.metadata)  # JSON-serialisable


def test_tau_bench_reused_call_id_is_renamed_and_paired() -> None:
    sessions, _ = read_items("tau-bench", TAU)
    msgs = sessions[0].messages
    assert msgs[5].calls[0].id == "call_1#2"
    assert msgs[6].responses[0].id == "call_1#2"
    assert "call_id_renamed" in msgs[5].flags and "call_id_renamed" in msgs[6].flags
    assert msgs[2].calls[0].id == "call_1"  # the first use keeps its id


def test_tau_bench_bad_record_rejects_only_itself(tmp_path: Path) -> None:
    summary = import_paths([TAU], tmp_path / "c", progress=False)
    assert summary.sessions == 2
    rejects = Corpus(tmp_path / "c").rejects().to_dicts()
    assert len(rejects) == 1
    (r,) = rejects
    assert r["reason"] == "unknown_role"
    assert r["record"] == 1
    assert r["json_path"] == "$.traj[1].role"
    assert json.loads(r["raw"])["task_id"] == 4  # the exact record is kept


# --- tau2-bench fixture --------------------------------------------------------------------


def test_tau2_fixture_is_detected() -> None:
    assert detect(TAU2) == "tau2-bench"
    assert get_importer("tau-bench").sniff(TAU2, TAU2.read_bytes()) == 0.0
    assert get_importer("tau2-bench").sniff(TAU, TAU.read_bytes()) == 0.0


def test_tau2_system_prompt_rebuilt_from_policy() -> None:
    sessions, _ = read_items("tau2-bench", TAU2)
    system = sessions[0].messages[0]
    assert system.role == "system"
    assert system.flags == ("system_rebuilt",)
    assert system.text.startswith("<instructions>\nYou are a customer service agent")
    assert system.text.endswith("<policy>\n# Telecom policy\nHelp the user.\n</policy>")
    assert sessions[0].metadata["system_prompt"] == "llm_agent"


def test_tau2_messages_roles_and_parts() -> None:
    sessions, _ = read_items("tau2-bench", TAU2)
    s = sessions[0]
    assert s.source_session_id == "sim-1"
    assert s.workload == "tau2-bench/telecom"
    assert [m.role for m in s.messages] == [
        "system",
        "assistant",
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
        "tool",
        "user",
        "assistant",
        "tool",
    ]
    call = s.messages[3]
    assert call.parts == (Part.call("call_a", "get_customer", {"phone": "555"}),)
    assert call.usage == Usage(1000, None, 7)
    assert "generation_retried" in call.flags
    assert s.messages[4].parts == (
        Part.response("call_a", '{"customer_id": "C1"}', "get_customer"),
    )
    assert s.messages[10].is_error and not s.messages[4].is_error


def test_tau2_user_side_tool_traffic_is_kept_invisible() -> None:
    sessions, _ = read_items("tau2-bench", TAU2)
    msgs = sessions[0].messages
    user_call, user_result = msgs[6], msgs[7]
    assert (user_call.role, user_call.visible) == ("user", False)
    assert user_call.calls[0].id == "call_u"
    assert (user_result.role, user_result.visible) == ("tool", False)
    assert user_result.responses[0].id == "call_u"
    assert [m.visible for m in msgs].count(False) == 2


def test_tau2_simulator_usage_goes_to_metadata_not_messages() -> None:
    sessions, _ = read_items("tau2-bench", TAU2)
    s = sessions[0]
    assert all(m.usage is None for m in s.messages if m.role == "user")
    assert s.metadata["simulator_usage"] == {
        "prompt_tokens": 820,
        "completion_tokens": 19,
        "requests": 3,
    }
    assert s.metadata["model"] == "agent-model"
    assert s.metadata["user_model"] == "sim-model"


def test_tau2_raw_data_is_not_stored_or_counted(tmp_path: Path) -> None:
    sessions, _ = read_items("tau2-bench", TAU2)
    texts = [t for m in sessions[0].messages for p in m.parts for t in p.token_texts()]
    assert not any("RAWDATA-MARKER" in t for t in texts)
    import_paths([TAU2], tmp_path / "c", progress=False)
    corpus = Corpus(tmp_path / "c")
    row = corpus.sessions().filter(source_session_id="sim-1").to_dicts()[0]
    msgs = corpus.load_session(row["session_id"])
    user = msgs[2]  # "My data is slow." (its raw_data repeats it with a marker)
    assert user.chars == len("My data is slow.")
    assert row["usage_prompt_tokens"] == 1000 + 1100 + 1200  # the agent's requests only


def test_tau2_bad_simulation_rejects_only_itself(tmp_path: Path) -> None:
    summary = import_paths([TAU2], tmp_path / "c", progress=False)
    assert summary.sessions == 2
    (r,) = Corpus(tmp_path / "c").rejects().to_dicts()
    assert r["reason"] == "missing_field"
    assert r["record"] == 1
    assert r["json_path"] == "$.simulations[1].messages[2]"
    assert r["session_id"] == "sim-2"


# --- the real corpora ----------------------------------------------------------------------


def _by_source_id(corpus: Corpus) -> dict[str, dict]:
    return {r["source_session_id"]: r for r in corpus.sessions().to_dicts()}


@pytest.mark.corpora
def test_real_tau_bench(tmp_path: Path) -> None:
    path = corpus_path("tau-bench", "historical_trajectories", "gpt-4o-airline.json")
    assert detect(path) == "tau-bench"
    summary = import_paths([path], tmp_path / "c", progress=False)
    assert summary.rejects == 0
    assert summary.sessions == 200
    rows = _by_source_id(Corpus(tmp_path / "c"))
    source = json.loads(path.read_text())
    assert len(rows) == len(source) == 200
    for rec in source:
        row = rows[f"task-{rec['task_id']}/trial-{rec['trial']}"]
        assert row["n_messages"] == len(rec["traj"])
        assert row["n_tool_calls"] == sum(len(m.get("tool_calls") or []) for m in rec["traj"])
        assert row["n_tool_results"] == sum(1 for m in rec["traj"] if m["role"] == "tool")
        assert row["workload"] == "tau-bench/airline"
        assert json.loads(row["metadata"])["reward"] == rec["reward"]


@pytest.mark.corpora
def test_real_tau2_bench(tmp_path: Path) -> None:
    folder = corpus_path("tau2-bench")
    files = sorted(folder.rglob("*.json"))
    assert len(files) == 2
    assert {detect(f) for f in files} == {"tau2-bench"}
    summary = import_paths([folder], tmp_path / "c", progress=False)
    assert summary.rejects == 0
    assert summary.sessions == 60
    rows = _by_source_id(Corpus(tmp_path / "c"))
    seen = 0
    for f in files:
        for sim in json.loads(f.read_text())["simulations"]:
            seen += 1
            row = rows[sim["id"]]
            msgs = sim["messages"]
            hidden = sum(
                1
                for m in msgs
                if (m["role"] == "user" and m.get("tool_calls"))
                or (m["role"] == "tool" and m.get("requestor") == "user")
            )
            assert row["n_messages"] == len(msgs) + 1  # + the rebuilt system prompt
            assert row["n_visible_messages"] == len(msgs) + 1 - hidden
            assert row["n_tool_calls"] == sum(len(m.get("tool_calls") or []) for m in msgs)
            assert row["n_tool_results"] == sum(1 for m in msgs if m["role"] == "tool")
            agent_prompt = sum(
                m["usage"]["prompt_tokens"]
                for m in msgs
                if m["role"] == "assistant" and m.get("usage")
            )
            assert (row["usage_prompt_tokens"] or 0) == agent_prompt
    assert seen == 60


@pytest.mark.corpora
@pytest.mark.parametrize("fmt", ["tau-bench", "tau2-bench"])
def test_sniffers_ignore_other_real_formats(fmt: str) -> None:
    others = {
        "tau-bench": corpus_path("tau2-bench"),
        "tau2-bench": corpus_path("tau-bench"),
    }[fmt]
    for f in [*others.rglob("*.json"), *corpus_path("openhands").rglob("*.jsonl")]:
        with f.open("rb") as fh:
            head = fh.read(64 * 1024)
        assert get_importer(fmt).sniff(f, head) == 0.0, f

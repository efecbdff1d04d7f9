"""``ctxreplay show``: full object ids, what the view removed with its tokens, each loss of a
judged case with the future message that needed it, ``--judge`` and ``--width``."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from ctxreplay.cli import main
from ctxreplay.datasets.messages import Message, Part
from ctxreplay.reports.formatting import RenderError
from ctxreplay.reports.show import future_excerpt, locate, render_show
from ctxreplay.runs import Run, read_verdicts

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
LOSS_CASE = "synth-browser-00002@18"  # tool-prune loses five dependencies of fetch_url:2


@pytest.fixture(scope="module")
def tau_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tau-bench fixture cut before every request, replayed and judged: object ids longer
    than the 26 characters ``show`` used to print (``function:get_reservation_details:1``)."""
    from ctxreplay.datasets.cases import cut_corpus
    from ctxreplay.datasets.ingest import import_paths
    from ctxreplay.datasets.store import Corpus
    from ctxreplay.engines.judge import run_judge
    from ctxreplay.engines.replay import run_replay

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CTXREPLAY_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "ctxreplay-cache"))
        root = tmp_path_factory.mktemp("tau-show")
        import_paths(
            [FIXTURES / "tau-bench" / "gpt-test-airline.json"], root / "corpus", progress=False
        )
        _, cases = cut_corpus(Corpus(root / "corpus"), root / "cases.parquet", triggers=["every:1"])
        run = root / "run"
        run_replay(root / "corpus", cases, ["noop"], run, workers=1, progress=False)
        run_judge(run, "flow", workers=1, progress=False)
    return run


def _show(run: Path, *args: str) -> list[str]:
    result = CliRunner().invoke(main, ["show", str(run), *args])
    assert result.exit_code == 0, result.output
    return result.output.splitlines()


def test_object_ids_are_printed_whole(tau_run: Path) -> None:
    run = Run(tau_run)
    case = run.table("figures").sort("prefix_messages")["case_id"][-1]
    lines = _show(tau_run, case, "--policy", "noop", "--width", "100")
    assert lines[4:7] == [
        "  #  object                              action  tokens  text; view: what the view holds instead",
        "───  ──────────────────────────────────  ──────  ──────  ───────────────────────────────────────",
        "  0  system                              kept         8  # Airline Agent Policy Be helpful.",
    ]
    assert lines[8].startswith("  2  function:get_reservation_details:1  kept        11  → ")
    # every object the run's tables name (and so the report's examples) can be found
    ids = run.table("decisions").filter(pl.col("case_id") == case)["object_id"].to_list()
    assert "function:get_reservation_details:1" in ids
    text = "\n".join(lines)
    for oid in ids:
        assert f"  {oid}  " in text
    assert lines[-1] == "judge flow: no impact · 2 dependencies, 0 recoverable, 0 lost"


def test_the_view_s_removals_are_marked_with_their_tokens(small_run: Path) -> None:
    lines = _show(small_run, "synth-sql-00001@24", "--policy", "self-gc", "--width", "100")
    # the summary counts the messages the view changed, so it adds up: 5,861 − 4,236 = 1,625
    assert lines[:5] == [
        "case synth-sql-00001@24  ·  policy self-gc",
        "prefix 5,861 tokens → view 4,236 tokens (27.7% pruned)  ·  committed: True (pruning 0.327 > 0.3)",
        "future: 25 messages, seq 24–48 (19,576 tokens)",
        "the view: pruned 1 object (95 → 9 tokens), folded 1 object (1,614 → 75 tokens); 1,625 tokens removed",
        "  in all",
    ]
    decisions = Run(small_run).table("decisions", "self-gc")
    done = decisions.filter(
        (pl.col("case_id") == "synth-sql-00001@24") & (pl.col("action") != "keep")
    )
    assert sorted(
        zip(done["action"], done["tokens_before"], done["tokens_after"], strict=True)
    ) == [
        ("fold", 1830, 75),
        ("prune", 86, 0),
    ]
    at = next(i for i, line in enumerate(lines) if line.startswith(" 10  "))
    assert lines[at : at + 4] == [
        " 10  function:run_sql:6         pruned      43→9  Quick sanity check of the raw totals first. → ru …",
        "                                                  view: Quick sanity check of the raw totals first.",
        ' 11  function:run_sql:6         pruned      52→0  ← Binder Error: Referenced column "amount" not f …',
        "                                                  view: (removed)",
    ]
    assert lines[at + 5].startswith(" 13  function:run_sql:7         folded  1,614→75  ← month | ")
    assert lines[at + 6] == (
        '                                                  view: ← <ctxreplay:folded object="function:run_s …'
    )
    # message 4 calls two tools: both objects, one per line
    assert " 4  function:describe_table:2  kept          37  " in "\n".join(lines)
    assert "     function:describe_table:3  kept" in lines


def test_the_token_summary_adds_up_and_kept_messages_say_kept(small_run: Path) -> None:
    """For every case and policy: the summary's removed total is prefix − view tokens, each
    action's tokens are the sum of its rows, and a message the view holds unchanged (the call
    of a folded or pruned result) is labelled kept, never pruned."""
    run = Run(small_run)
    figures = run.table("figures")
    checked = 0
    for row in figures.iter_rows(named=True):
        lines = _show(small_run, row["case_id"], "--policy", row["policy"], "--width", "400")
        summary = next(x for x in lines if x.startswith("the view"))
        if "removed nothing" in summary:
            assert row["prefix_tokens"] == row["view_tokens"]
            continue
        removed = int(re.search(r"; ([\d,]+) tokens removed in all", summary)[1].replace(",", ""))
        assert removed == row["prefix_tokens"] - row["view_tokens"], summary
        per: dict[str, list[int]] = {}
        for x in lines:
            m = re.match(r"\s*\d+\s{2}\S+\s{2,}(\w+)[*\w :-]*?\s+([\d,]+)(?:→([\d,]+))?\s", x)
            if not m:
                continue
            if m[3] is None:
                assert m[1] == "kept", x  # unchanged in the view
            else:
                b, a = (int(v.replace(",", "")) for v in (m[2], m[3]))
                per.setdefault(m[1], []).append(b - a)
        for verb, before, after in re.findall(
            r"(\w+) [\d,]+ objects? \(([\d,]+) → ([\d,]+)", summary
        ):
            gone = int(before.replace(",", "")) - int(after.replace(",", ""))
            assert sum(per.get(verb, [])) == gone, (verb, summary)
        checked += 1
    assert checked > 5


def test_a_judged_case_shows_each_loss_and_the_future_message_that_needed_it(
    small_run: Path,
) -> None:
    lines = _show(small_run, LOSS_CASE, "--policy", "tool-prune", "--width", "100")
    verdict = read_verdicts(small_run, "flow").filter(
        (pl.col("policy") == "tool-prune") & (pl.col("case_id") == LOSS_CASE)
    )
    losses = verdict["losses"][0].to_list()
    assert len(losses) == 5
    start = lines.index("judge flow: impact · 15 dependencies, 0 recoverable, 5 lost")
    heads = [line for line in lines[start:] if line.startswith("loss ")]
    assert heads == [
        f"loss {k} of 5 · {loss['category'].replace('_', ' ')} · from function:fetch_url:2 "
        f"(pruned) · needed at seq 30"
        for k, loss in enumerate(losses, 1)
    ]
    at = lines.index(
        "loss 3 of 5 · evidence detail · from function:fetch_url:2 (pruned) · needed at seq 30"
    )
    assert lines[at : at + 7] == [
        "loss 3 of 5 · evidence detail · from function:fetch_url:2 (pruned) · needed at seq 30",
        "  lost: By the end of 2024, Agency for Network Operators counted 219.3 GWh of installed battery",
        "        storage capacity, the highest level on record.",
        "  how: line of prefix message 5, used by tokens: 219.3",
        "  needed by seq 30 (assistant): Brief: grid-scale battery storage in Europe - Scale: Agency for",
        "    Network Operators counts «219.3» GWh of installed battery storage capacity at the end of 2024",
        "    (https://acno.europa.eu/research/2024/installed-battery-storage-capacity-80032f). Country …",
    ]
    # the excerpt is the future message's own text
    session = Run(small_run).corpus.load_session("synth-browser-00002")
    future = next(m for m in session if m.seq == 30)
    assert "Network Operators counts 219.3 GWh of installed battery storage capacity" in " ".join(
        future.text.split()
    )
    # each lost span was in prefix message 5, the result the view pruned
    prefix = [m for m in session if m.visible and m.seq < 18]
    body = " ".join(p.content or "" for p in prefix[5].parts)
    assert all(locate(body, loss["anchor"]) for loss in losses)


@pytest.mark.parametrize("width", [60, 80, 100, 160])
@pytest.mark.parametrize(
    ("case", "policy"),
    [(LOSS_CASE, "tool-prune"), ("synth-sql-00001@24", "self-gc"), (LOSS_CASE, "noop")],
)
def test_every_line_fits_the_width(small_run: Path, case: str, policy: str, width: int) -> None:
    text = render_show(Run(small_run), case, policy, width)
    assert [line for line in text.splitlines() if len(line) > width] == []
    assert "function:fetch_url:2" in text or case != LOSS_CASE


def test_judge_option(small_run: Path) -> None:
    # the run holds two judges (flow and edited): the default is the default judge, flow
    default = _show(small_run, LOSS_CASE, "--policy", "tool-prune", "--width", "100")
    assert "judge flow: impact · 15 dependencies, 0 recoverable, 5 lost" in default
    unscored = _show(
        small_run, LOSS_CASE, "--policy", "tool-prune", "--judge", "edited", "--width", "100"
    )
    assert unscored[-1] == "judge edited: unscored (test: made unscored)"
    not_judged = _show(
        small_run,
        "synth-browser-00002@26",
        "--policy",
        "tool-prune",
        "--judge",
        "edited",
        "--width",
        "100",
    )
    assert not_judged[-1] == "judge edited: no verdict of this case under tool-prune"
    bad = CliRunner().invoke(
        main, ["show", str(small_run), LOSS_CASE, "--policy", "tool-prune", "--judge", "nope"]
    )
    assert bad.exit_code == 2
    assert bad.output.strip() == "error: no verdicts from judge 'nope'; this run has: edited, flow"


def test_an_unjudged_run_says_how_to_judge_it(otel_run: Path, tmp_path: Path) -> None:
    bare = tmp_path / "run"
    shutil.copytree(otel_run, bare, ignore=shutil.ignore_patterns("verdicts"))
    case = Run(bare).table("figures")["case_id"][0]
    lines = _show(bare, case, "--policy", "tool-prune", "--width", "200")
    assert lines[-1] == f"not judged: `ctxreplay judge {bare}` says what the view lost"


def test_width_is_checked(small_run: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bad = CliRunner().invoke(
        main, ["show", str(small_run), LOSS_CASE, "--policy", "tool-prune", "--width", "30"]
    )
    assert bad.exit_code == 2 and "--width" in bad.output
    with pytest.raises(RenderError):
        render_show(Run(small_run), LOSS_CASE, "tool-prune", 0)
    monkeypatch.setenv("COLUMNS", "72")  # the default: the terminal's width
    lines = render_show(Run(small_run), LOSS_CASE, "tool-prune").splitlines()
    assert max(map(len, lines)) <= 72
    assert lines == render_show(Run(small_run), LOSS_CASE, "tool-prune", 72).splitlines()


def test_locating_a_tokenised_anchor_in_the_future() -> None:
    text = "The report counts 77.3 million parcels returned across borders in 2024."
    assert locate(text, "77 . 3 million parcels") == (18, 38)
    assert text[18:38] == "77.3 million parcels"
    assert locate(text, "nowhere") is None and locate(text, "  ") is None
    message = Message("assistant", (Part("text", content="x " * 200 + text + " y" * 200),), seq=9)
    loss = {"anchor": "77 . 3 million parcels", "detail": ""}
    excerpt = future_excerpt(message, loss, 80)
    assert "«77.3 million parcels»" in excerpt
    assert excerpt.startswith("… ") and excerpt.endswith(" …") and len(excerpt) <= 84
    # not found: the anchor, then what the judge says the future used of it
    used = {"anchor": "gross amount column", "detail": "line of message 3, used by tokens: 2024"}
    assert "«2024»" in future_excerpt(message, used, 80)
    missing = {"anchor": "absent", "detail": ""}
    assert future_excerpt(message, missing, 20) == "x x x x x x x x x …"


@pytest.mark.parametrize("shape", ["openai-chat", "openai-responses"])
def test_show_as_a_request_body_reads_back_into_the_view(tau_run: Path, shape: str) -> None:
    """``show --request`` prints the exact view as a request body; its format's importer reads it back
    into the view's messages."""
    import json

    from ctxreplay.datasets.importers.openai_chat import messages_from_openai
    from ctxreplay.datasets.importers.openai_responses import messages_from_items

    run = Run(tau_run)
    case = run.table("figures").sort("prefix_messages")["case_id"][-1]
    result = CliRunner().invoke(
        main, ["show", str(tau_run), case, "--policy", "noop", "--request", shape]
    )
    assert result.exit_code == 0, result.output
    body = json.loads(result.output)
    view = run.load_view(case, "noop")
    if shape == "openai-chat":
        assert list(body) == ["messages"]
        back = messages_from_openai(body["messages"], "$")
    else:
        assert list(body) == ["input"]
        back = messages_from_items(body["input"], "$")

    # the same parts in the same order (Responses items merge adjacent assistant messages)
    def flat(messages: list[Message]) -> list[tuple[str, str | None, str | None]]:
        return [(p.type, p.content, p.arguments) for m in messages for p in m.parts]

    assert flat(back) == flat(view)
    if shape == "openai-chat":
        assert [m.role for m in back] == [m.role for m in view]


def test_encrypted_reasoning_is_not_shown_and_a_call_in_a_pruned_turn_says_so() -> None:
    from ctxreplay.datasets.messages import ENCRYPTED_REASONING_MIME
    from ctxreplay.replay.objects import build_index
    from ctxreplay.reports.show import _flat, _with_parents

    m = Message(
        "assistant",
        (Part("reasoning", content="gAAAAsecret", mime_type=ENCRYPTED_REASONING_MIME),),
    )
    assert _flat(m) == "(encrypted reasoning, 11 bytes)"
    prefix = [
        Message("user", (Part.text("first"),)),
        Message("assistant", (Part.call("c1", "ls", {}),)),
        Message("tool", (Part.response("c1", "a b"),)),
        Message("user", (Part.text("second"),)),
    ]
    index = build_index(prefix, lambda s: 0)
    call = next(o.id for o in index.objects if o.kind == "function")
    turn = index.by_id[call].parent
    decisions = {
        turn: {"object_id": turn, "action": "prune", "dropped_reason": None},
        call: {"object_id": call, "action": "keep", "dropped_reason": None},
    }
    shown = _with_parents(decisions, index)
    assert shown[call]["action"] == f"pruned with {turn}"
    assert shown[turn]["action"] == "prune"

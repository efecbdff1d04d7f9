"""Every Parquet table ctxreplay writes: its Arrow schema and one line on each column.

One declaration per table, so the writers, the readers, ``ctxreplay sql --describe`` and the docs
cannot drift apart. A table is declared with :func:`table`, whose rows are ``(name, type, what
the column holds)`` (add ``False`` to forbid nulls); the Arrow schemas carry no metadata, so the
files are the same bytes as before the descriptions existed.

A corpus is a folder::

    CORPUS/manifest.json, sessions/, messages/ (hive partitions by bucket=NN), rejects/,
    ground_truth/ (synthetic corpora only)

A run is a folder::

    RUN/manifest.json, figures/<policy>/, decisions/<policy>/, views/<policy>/, sidecar/,
    verdicts/<judge>/, calls/, calibration/
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, TypedDict, get_type_hints

import pyarrow as pa

Column = tuple[str, pa.DataType, str] | tuple[str, pa.DataType, str, bool]


@dataclass(frozen=True)
class Table:
    """A table's schema, where its files live, and what each row and column is."""

    name: str
    where: str
    about: str
    schema: pa.Schema
    docs: dict[str, str]


#: Every table by name, in the order ``sql --describe`` prints them.
TABLES: dict[str, Table] = {}


def _fields(columns: list[Column]) -> tuple[list[pa.Field], dict[str, str]]:
    fields = [pa.field(c[0], c[1], nullable=c[3] if len(c) > 3 else True) for c in columns]
    return fields, {c[0]: c[2] for c in columns}


def struct(columns: list[Column]) -> pa.StructType:
    return pa.struct(_fields(columns)[0])


def table(name: str, where: str, about: str, columns: list[Column]) -> pa.Schema:
    """Declare (and register) a table; returns its Arrow schema."""
    fields, docs = _fields(columns)
    schema = pa.schema(fields)
    TABLES[name] = Table(name, where, about, schema, docs)
    return schema


def typed_columns(*rows: type) -> list[Column]:
    """The columns of ``TypedDict`` row types, in order: each key annotated
    ``Annotated[python type, arrow type, "what it holds"]`` (add ``NOT_NULL`` to forbid nulls),
    so a writer that builds such a row is checked by mypy against the very declaration its
    table's schema comes from."""
    columns: list[Column] = []
    for row in rows:
        for name, hint in get_type_hints(row, include_extras=True).items():
            arrow, doc, *rest = hint.__metadata__
            columns.append((name, arrow, doc, False) if NOT_NULL in rest else (name, arrow, doc))
    return columns


#: ``typed_columns``: the column may hold no null
NOT_NULL = "not null"


class SchemaMismatch(RuntimeError):
    """Rows written with keys that are not their table's columns: a bug in the writer, never
    bad input (so no importer takes it for a record to reject)."""


def rows_table(
    rows: Sequence[Mapping[str, Any]],
    schema: pa.Schema,
    bookkeeping: frozenset[str] = frozenset(),
) -> pa.Table:
    """``rows`` as an Arrow table of ``schema``, each row holding exactly its columns (and
    perhaps the writer's own ``bookkeeping`` keys, which are not written).

    ``pa.Table.from_pylist`` reads a missing (or misspelt) key as a null column and drops an
    extra one, so a writer's typo would become a column of nulls nobody notices."""
    want = set(schema.names)
    for k, row in enumerate(rows):
        if row.keys() != want and row.keys() - bookkeeping != want:
            name = next((t.name for t in TABLES.values() if t.schema is schema), "a table")
            missing, extra = sorted(want - row.keys()), sorted(row.keys() - want)
            raise SchemaMismatch(
                f"row {k} of {name}: missing {missing or 'nothing'}, not columns {extra or 'none'}"
            )
    return pa.Table.from_pylist(list(rows), schema=schema)


S, I32, I64, F64, B = pa.string(), pa.int32(), pa.int64(), pa.float64(), pa.bool_()

#: The six failure categories of the brief, in its order.
CATEGORIES: tuple[str, ...] = (
    "evidence_detail",
    "locator_handle",
    "behavioural_contract",
    "verbatim_source",
    "live_state",
    "recovery_routing",
)

# --- corpus -------------------------------------------------------------------------------

PART = struct(
    [
        ("type", S, "text | tool_call | tool_call_response | reasoning | blob | uri | file"),
        ("content", S, "the text, the result, or the inline payload"),
        ("id", S, "tool call id (calls and their responses)"),
        ("name", S, "tool name"),
        ("arguments", S, "tool call arguments as JSON text"),
        ("mime_type", S, "media type of blob/uri/file parts"),
        ("uri", S, "where a uri/file part points"),
        ("modality", S, "image | audio | video | document, for media parts"),
    ]
)

MESSAGES = table(
    "messages",
    "CORPUS/messages/bucket=NN/*.parquet",
    "one row per message of every imported session",
    [
        ("session_id", S, "the corpus's session id (source format + source id)", False),
        ("seq", I32, "position of the message in its session, from 0", False),
        ("role", S, "system | developer | user | assistant | tool, as the provider had it", False),
        ("name", S, "the participant name the provider recorded, if any"),
        ("parts", pa.list_(PART), "the message content, part by part", False),
        ("tool_name", S, "tool of the call(s) made or answered"),
        ("tool_call_id", S, "the call a tool result answers"),
        ("tool_call_ids", pa.list_(S), "the calls this message makes"),
        ("is_error", B, "the tool result reports an error", False),
        ("visible", B, "sent to the model (false: bookkeeping events kept for provenance)", False),
        ("image_count", I32, "image parts in the message", False),
        ("file_count", I32, "file parts in the message", False),
        ("tokens", I32, "exact token count of the message with the corpus tokenizer", False),
        (
            "part_tokens",
            pa.list_(I32),
            "tokens of each part, in order (they sum to tokens): what replay reads instead of "
            "counting again; null in corpora imported before it was stored",
        ),
        ("chars", I64, "characters of text in the message", False),
        ("usage_prompt_tokens", I64, "prompt tokens the provider billed for this turn"),
        ("usage_cached_tokens", I64, "of those, tokens served from the provider's cache"),
        ("usage_completion_tokens", I64, "completion tokens the provider billed"),
        ("timestamp", S, "ISO-8601 time of the message, when recorded"),
        ("flags", pa.list_(S), "import notes: non_json_arguments, unanswered_call, ..."),
        ("source_path", S, "JSON path of the record the message came from"),
    ],
)

SESSIONS = table(
    "sessions",
    "CORPUS/sessions/bucket=NN/*.parquet",
    "one row per imported session",
    [
        ("session_id", S, "the corpus's session id", False),
        ("source_format", S, "the importer that read it (openai-chat, tau-bench, ...)", False),
        ("source_location", S, "the file it came from"),
        ("source_record", I64, "index of the record inside that file"),
        ("source_session_id", S, "the id the source itself gave the session"),
        ("workload", S, "the workload or domain, when the source names one"),
        ("n_messages", I32, "messages, visible or not", False),
        ("n_visible_messages", I32, "messages sent to the model", False),
        ("n_user_turns", I32, "user messages", False),
        ("n_tool_calls", I32, "tool calls made", False),
        ("n_tool_results", I32, "tool results returned", False),
        ("tokens", I64, "tokens of all messages", False),
        ("system_tokens", I64, "tokens of system and developer messages", False),
        ("tool_output_tokens", I64, "tokens of tool results", False),
        ("image_count", I32, "image parts in the session", False),
        ("file_count", I32, "file parts in the session", False),
        ("usage_prompt_tokens", I64, "sum of billed prompt tokens, when recorded"),
        ("usage_cached_tokens", I64, "sum of cache-served prompt tokens, when recorded"),
        ("usage_completion_tokens", I64, "sum of billed completion tokens, when recorded"),
        ("flags", pa.list_(S), "session-level import notes"),
        ("metadata", S, "JSON object from the source: reward, task, model, ..."),
    ],
)

REJECTS = table(
    "rejects",
    "CORPUS/rejects/*.parquet",
    "every record that could not be imported, with its raw bytes",
    [
        ("source_format", S, "the importer that tried it"),
        ("source_location", S, "the file", False),
        ("record", I64, "index of the record inside the file"),
        ("line", I64, "1-based line, for line-oriented files"),
        ("session_id", S, "the source's own id, when it could be read"),
        ("json_path", S, "where in the record the problem is"),
        ("reason", S, "short machine-readable reason", False),
        ("detail", S, "what exactly is wrong", False),
        ("raw", pa.large_binary(), "the record's bytes as read", False),
    ],
)

GROUND_TRUTH = table(
    "ground_truth",
    "CORPUS/ground_truth/*.parquet",
    "synthetic corpora only: the planted dependencies",
    [
        ("session_id", S, "the session", False),
        ("dep_id", S, "the dependency's id", False),
        ("category", S, "one of the six failure categories", False),
        ("anchor", S, "the exact text the later message depends on", False),
        ("source_seq", I32, "message that first holds the anchor", False),
        ("need_seq", I32, "message that needs it", False),
        ("note", S, "how the dependency was planted"),
    ],
)

# --- cases --------------------------------------------------------------------------------

CASES = table(
    "cases",
    "cases.parquet",
    "one row per case: a session cut at a request point",
    [
        ("case_id", S, "session id and cut", False),
        ("session_id", S, "the session", False),
        ("source_session_id", S, "the id the source gave the session"),
        ("cut", I32, "seq of the first message after the prefix", False),
        ("trigger", S, "the trigger that chose the cut", False),
        ("prefix_messages", I32, "visible messages before the cut", False),
        ("prefix_tokens", I64, "their tokens", False),
        ("prefix_tool_tokens", I64, "of those, tokens of tool results", False),
        ("tool_share", F64, "prefix_tool_tokens / prefix_tokens", False),
        ("user_turns", I32, "user messages in the prefix", False),
        ("future_start", I32, "seq where the future begins", False),
        ("future_end", I32, "seq after the last future message (the horizon)", False),
        ("future_messages", I32, "visible messages in the future", False),
        ("future_requests", I32, "model requests in the future", False),
        ("future_tokens", I64, "tokens of the future messages", False),
    ],
)

# --- run: replay --------------------------------------------------------------------------


class FiguresColumns(TypedDict):
    """A ``figures`` row up to its cost columns (``engines.replay.outcome_rows`` writes it)."""

    policy: Annotated[str, S, "policy label with its non-default parameters"]
    policy_name: Annotated[str, S, "registered policy name"]
    case_id: Annotated[str, S, "the case"]
    session_id: Annotated[str, S, "the session"]
    cut: Annotated[int, I32, "seq of the cut"]
    prefix_messages: Annotated[int, I32, "messages of the prefix"]
    prefix_tokens: Annotated[int, I64, "tokens of the prefix"]
    view_messages: Annotated[int, I32, "messages of the view"]
    view_tokens: Annotated[int, I64, "tokens of the view"]
    pruning_rate: Annotated[float, F64, "1 − view_tokens / prefix_tokens"]
    editable_tokens: Annotated[
        int, I64, "tokens a policy may touch (no system, no latest user turn)"
    ]
    editable_pruning: Annotated[float, F64, "share of the editable tokens removed"]
    budget_note: Annotated[str | None, S, "why a target/budget was not met"]
    no_edit: Annotated[
        str | None, S, "why the policy proposed no edit (a trigger not reached, too little freed)"
    ]
    n_objects: Annotated[int, I32, "context objects in the prefix"]
    n_fold: Annotated[int, I32, "objects folded in the committed view"]
    n_mask: Annotated[int, I32, "objects masked"]
    n_prune: Annotated[int, I32, "objects pruned"]
    n_planned: Annotated[int, I32, "edits the plan proposed"]
    n_dropped: Annotated[int, I32, "edits rehearsal dropped"]
    dropped_reasons: Annotated[str, S, "JSON {reason: count} of the dropped edits"]
    touched_latest_turn: Annotated[bool, B, "the plan tried to edit the protected latest user turn"]
    batch_rejected: Annotated[str | None, S, "why an all-or-nothing plan was rejected"]
    estimated_saving: Annotated[int, I64, "tokens the plan would save"]
    committed: Annotated[bool, B, "the view replaced the prefix"]
    commit_reason: Annotated[str, S, "why it was or was not committed"]
    planner_failure: Annotated[
        str | None, S, "why a model planner failed (the case keeps the prefix)"
    ]
    planner_prompt_tokens: Annotated[int | None, I64, "planner prompt tokens"]
    planner_completion_tokens: Annotated[int | None, I64, "planner completion tokens"]
    planner_usd: Annotated[float | None, F64, "planner cost"]
    planner_prompt_hash: Annotated[str | None, S, "sha256 of the planner request"]
    planner_params: Annotated[str | None, S, "JSON: the parameters actually sent to the model"]
    planner_cache_hit: Annotated[bool | None, B, "the planner answer came from the cache"]
    n_archives: Annotated[int, I32, "payloads archived in the sidecar"]


class CostColumns(TypedDict):
    """A ``figures`` row's cost columns (``replay.cost.CaseCost.as_row``)."""

    requests: Annotated[int, I32, "model requests in the future"]
    input_baseline: Annotated[int, I64, "prompt tokens of those requests without the policy"]
    input_policy: Annotated[int, I64, "the same with the view"]
    cached_max_baseline: Annotated[int, I64, "cache-served tokens under perfect prefix caching"]
    cached_max_policy: Annotated[int, I64, "the same with the view"]
    output_tokens: Annotated[int, I64, "completion tokens of the future requests"]
    cache_break_tokens: Annotated[int, I64, "tokens re-read because the edit broke the cache"]
    usd_baseline_low: Annotated[float, F64, "cost without the policy, perfect caching"]
    usd_baseline_high: Annotated[float, F64, "cost without the policy, no caching"]
    usd_policy_low: Annotated[float, F64, "cost with the view, perfect caching"]
    usd_policy_high: Annotated[float, F64, "cost with the view, no caching"]
    recorded_cache: Annotated[bool, B, "the trace recorded cache hits for every future request"]


class FiguresRow(FiguresColumns, CostColumns):
    """One ``figures`` row."""


FIGURES = table(
    "figures",
    "RUN/figures/<policy>/chunk-NNNNN.parquet",
    "one row per case and policy: tokens, pruning, actions, planner calls and cost",
    typed_columns(FiguresColumns, CostColumns),
)

DECISIONS = table(
    "decisions",
    "RUN/decisions/<policy>/chunk-NNNNN.parquet",
    "one row per context object of each case: what was proposed and what was done",
    [
        ("policy", S, "policy label"),
        ("case_id", S, "the case"),
        ("session_id", S, "the session"),
        ("object_id", S, "conversation:user:K or function:<tool>:N"),
        ("kind", S, "conversation | function"),
        ("tool_name", S, "tool of a function object"),
        ("turn", I32, "user turn the object belongs to"),
        ("is_error", B, "the tool result was an error"),
        ("superseded", B, "a later object supersedes it"),
        ("proposed", S, "what the plan proposed (null: not mentioned)"),
        ("action", S, "what the committed view did: keep | fold | mask | prune | compact"),
        ("dropped_reason", S, "why rehearsal dropped the proposed edit"),
        ("tokens_before", I64, "tokens of the object in the prefix"),
        ("tokens_after", I64, "tokens left in the view"),
        ("note", S, "the agent's note on a fold"),
        ("reason", S, "the planner's reason"),
        ("ref", S, "sidecar ref of the archived payload"),
    ],
)

ENTRY = struct(
    [
        ("index", I32, "position in the prefix; null for harness blocks"),
        ("seq", I32, "seq of the message"),
        ("role", S, "role"),
        ("edited", B, "the view changed the message"),
        ("object_ids", pa.list_(S), "objects the message belongs to"),
        ("parts", pa.list_(PART), "null when the message is the prefix message unchanged"),
        ("flags", pa.list_(S), "pointer, summary, mask, ... markers"),
        ("tokens", I32, "tokens of the message in the view"),
    ]
)
ARCHIVE = struct(
    [
        ("ref", S, "sha256:<hex> of the payload in RUN/sidecar"),
        ("object_id", S, "the object archived"),
        ("handle", S, "the handle the view shows"),
        ("pointer_visible", B, "the view shows a pointer to it"),
    ]
)

VIEWS = table(
    "views",
    "RUN/views/<policy>/chunk-NNNNN.parquet",
    "one row per case and policy: enough to rebuild the view exactly",
    [
        ("policy", S, "policy label"),
        ("case_id", S, "the case"),
        ("session_id", S, "the session"),
        ("cut", I32, "seq of the cut"),
        ("entries", pa.list_(ENTRY), "the view's messages"),
        ("archives", pa.list_(ARCHIVE), "payloads the view archived"),
        ("summary", S, "a one-line account of the view"),
    ],
)

# --- run: judge ---------------------------------------------------------------------------

LOSS = struct(
    [
        ("category", S, "failure category"),
        ("anchor", S, "what the future needed"),
        ("source_object", S, "the object that held it"),
        ("need_seq", I32, "the future message that needed it"),
        ("detail", S, "how it was lost"),
    ]
)


class VerdictRow(TypedDict):
    """One ``verdicts`` row (``engines.judge.verdict_row`` writes it)."""

    run: Annotated[str, S, "the run folder"]
    policy: Annotated[str, S, "policy label"]
    case_id: Annotated[str, S, "the case"]
    session_id: Annotated[str, S, "the session"]
    judge: Annotated[str, S, "judge label with its non-default parameters"]
    judge_name: Annotated[str, S, "registered judge name"]
    label: Annotated[str, S, "no_impact | impact | unscored"]
    losses: Annotated[list[dict[str, Any]], pa.list_(LOSS), "what the view lost"]
    n_losses: Annotated[int, I32, "number of losses"]
    dependencies: Annotated[int, I32, "dependencies the judge checked"]
    recoverable: Annotated[int, I32, "losses whose payload the view can still recover"]
    unscored_reason: Annotated[str | None, S, "why no verdict could be given"]
    retryable: Annotated[
        bool, B, "unscored after a transient failure: `judge --retry-unscored` asks again"
    ]
    explanation: Annotated[str | None, S, "the judge's account of a scored verdict"]
    prompt_tokens: Annotated[int, I64, "LLM judge prompt tokens"]
    completion_tokens: Annotated[int, I64, "LLM judge completion tokens"]
    usd: Annotated[float, F64, "LLM judge cost"]
    calls: Annotated[int, I32, "model calls made for the verdict"]
    cache_hit: Annotated[bool, B, "the answer came from the cache"]
    prompt_hash: Annotated[str | None, S, "sha256 of the request"]
    raw: Annotated[str | None, S, "the model's raw answer"]


VERDICTS = table(
    "verdicts",
    "RUN/verdicts/<judge>/part-*.parquet",
    "one row per case, policy and judge",
    typed_columns(VerdictRow),
)

CALLS = table(
    "calls",
    "RUN/calls/*.parquet",
    "one row per model call made for a run (planners and judges), success or failure",
    [
        ("finished_at", S, "ISO-8601 time (UTC) the call finished"),
        ("caller", S, "the policy or judge label that made it"),
        ("request_hash", S, "sha256 of the canonical request (the cache key)"),
        ("endpoint", S, "base URL of the OpenAI-compatible server"),
        ("model", S, "model name"),
        ("status", S, "ok | cached (from the response cache, no request) | error"),
        ("error", S, "why the call failed (secrets redacted)"),
        ("attempts", I32, "requests sent, retries included"),
        ("prompt_tokens", I64, "prompt tokens of the answer (0 for a failure)"),
        ("completion_tokens", I64, "completion tokens of the answer (0 for a failure)"),
        ("usd", F64, "what the call cost at the tariff: 0 for a cache hit, null when unknown"),
        ("latency_s", F64, "seconds from the first attempt to the answer"),
        ("cache_hit", B, "served from the response cache without a request"),
    ],
)

# --- exports ------------------------------------------------------------------------------

PHOENIX = table(
    "phoenix",
    "export-verdicts --to phoenix",
    "one evaluation per verdict, in Arize Phoenix's span-evaluation layout",
    [
        ("context.span_id", S, "the span the evaluation is attached to"),
        ("context.trace_id", S, "its trace"),
        ("name", S, "evaluation name: ctxreplay.<policy>.<judge>"),
        ("annotator_kind", S, "CODE or LLM"),
        ("score", F64, "1 no impact, 0 impact, null unscored"),
        ("label", S, "no_impact | impact | unscored"),
        ("explanation", S, "the judge's account or the unscored reason"),
        ("identifier", S, "stable id of the evaluation"),
        ("metadata", S, "JSON: losses, judge, run"),
        ("case_id", S, "the case"),
        ("session_id", S, "the session"),
        ("source_session_id", S, "the source's own session id"),
        ("policy", S, "policy label"),
        ("judge", S, "judge label"),
    ],
)


def describe(names: list[str] | None = None) -> str:
    """Every table (or the named ones) as text: where, what a row is, each column."""
    out: list[str] = []
    for name in names or list(TABLES):
        t = TABLES[name]
        out.append(f"{t.name}  ({t.where}): {t.about}")
        width = max(len(f.name) for f in t.schema)
        for f in t.schema:
            kind = str(f.type) if len(str(f.type)) <= 24 else type(f.type).__name__.lower()
            null = "" if f.nullable else " not null"
            out.append(f"  {f.name:<{width}}  {kind + null:<24}  {t.docs[f.name]}")
        out.append("")
    return "\n".join(out).rstrip() + "\n"

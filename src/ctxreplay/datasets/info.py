"""``ctxreplay info``: what a corpus holds, in a few small tables (DuckDB over the Parquet).

Besides the content tables, ``files`` accounts for every input file from the manifest: records
seen = sessions + rejects + skipped (by reason), checked row by row; ``flags`` counts the import
notes on sessions and messages (values dropped, parts kept as text, conversations split...).
"""

from __future__ import annotations

import os
from typing import Any

import polars as pl

from ..schema import MESSAGES, SESSIONS
from .rejects import FLAGS, REASONS
from .store import Corpus

QUERIES: dict[str, str] = {
    "overview": """
        SELECT count(*) AS sessions, sum(n_messages)::BIGINT AS messages, sum(tokens)::BIGINT AS tokens,
               sum(n_tool_calls)::BIGINT AS tool_calls, sum(n_user_turns)::BIGINT AS user_turns,
               round(sum(tool_output_tokens) / nullif(sum(tokens), 0), 3) AS tool_output_share,
               sum(image_count)::BIGINT AS images, sum(file_count)::BIGINT AS files
        FROM sessions""",
    "by_format": """
        SELECT source_format, count(*) AS sessions, sum(n_messages)::BIGINT AS messages,
               sum(tokens)::BIGINT AS tokens, median(tokens) AS median_tokens,
               round(sum(tool_output_tokens) / nullif(sum(tokens), 0), 3) AS tool_output_share
        FROM sessions GROUP BY 1 ORDER BY 1""",
    # by what a message holds as well as its role: Claude Code and Anthropic logs carry tool
    # results in messages of role user, so a share by role alone hides most of the tool output
    "by_role": """
        SELECT role,
               CASE WHEN tool_call_id IS NOT NULL THEN 'tool results'
                    WHEN len(tool_call_ids) > 0 THEN 'tool calls'
                    ELSE 'text' END AS content,
               count(*) AS messages, sum(tokens)::BIGINT AS tokens,
               round(sum(tokens) / sum(sum(tokens)) OVER (), 3) AS share,
               count(*) FILTER (WHERE NOT visible) AS hidden_from_agent
        FROM messages GROUP BY 1, 2 ORDER BY tokens DESC""",
    "by_content": """
        SELECT CASE WHEN tool_call_id IS NOT NULL THEN 'tool results'
                    WHEN len(tool_call_ids) > 0 THEN 'tool calls'
                    WHEN role IN ('system', 'developer') THEN 'system'
                    ELSE 'text' END AS content,
               count(*) AS messages, sum(tokens)::BIGINT AS tokens,
               round(sum(tokens) / sum(sum(tokens)) OVER (), 3) AS share
        FROM messages GROUP BY 1 ORDER BY tokens DESC""",
    "largest_outputs": """
        SELECT m.session_id, s.source_session_id, m.seq, m.tool_name, m.tokens
        FROM messages m JOIN sessions s USING (session_id)
        WHERE m.tool_call_id IS NOT NULL ORDER BY m.tokens DESC LIMIT 10""",
    "flags": """
        WITH s AS (SELECT unnest(flags) AS flag FROM sessions WHERE flags IS NOT NULL),
             m AS (SELECT unnest(flags) AS flag FROM messages WHERE flags IS NOT NULL)
        SELECT flag, count(*) AS sessions,
               coalesce((SELECT count(*) FROM m WHERE m.flag = s.flag), 0) AS messages
        FROM s GROUP BY flag ORDER BY sessions DESC, flag""",
    "rejects": """
        SELECT reason, count(*) AS records, any_value(source_location) AS example_file
        FROM rejects GROUP BY 1 ORDER BY 2 DESC""",
}


def file_accounts(manifest: dict[str, Any]) -> pl.DataFrame:
    """One row per input file: records seen, sessions, rejects, skipped (with reasons), and
    whether records seen = sessions + rejects + skipped."""
    sources = [s for s in manifest.get("sources") or [] if isinstance(s, dict)]
    paths = [str(s.get("path", "")) for s in sources]
    try:
        common = os.path.commonpath(paths) if len(paths) > 1 else os.path.dirname(paths[0])
    except (ValueError, IndexError):
        common = ""
    rows = []
    for s, path in zip(sources, paths, strict=True):
        found = s.get("skipped")
        skipped: dict[str, int] = (
            {str(k): int(v) for k, v in found.items()} if isinstance(found, dict) else {}
        )
        sessions, rejects = int(s.get("sessions") or 0), int(s.get("rejects") or 0)
        n_skipped = sum(skipped.values())
        records = s.get("records")
        records = int(records) if isinstance(records, int) else sessions + rejects + n_skipped
        rows.append(
            {
                "file": os.path.relpath(path, common) if common else path,
                "format": s.get("format"),
                "records": records,
                "sessions": sessions,
                "rejects": rejects,
                "skipped": n_skipped,
                "skipped_by_reason": ", ".join(f"{k} {v}" for k, v in sorted(skipped.items())),
                "balanced": records == sessions + rejects + n_skipped,
            }
        )
    schema = {
        "file": pl.String,
        "format": pl.String,
        "records": pl.Int64,
        "sessions": pl.Int64,
        "rejects": pl.Int64,
        "skipped": pl.Int64,
        "skipped_by_reason": pl.String,
        "balanced": pl.Boolean,
    }
    return pl.DataFrame(rows, schema=schema)


def corpus_info(corpus: Corpus) -> dict[str, pl.DataFrame]:
    out: dict[str, pl.DataFrame] = {}
    with corpus.connect() as con:
        tables = {r[0] for r in con.execute("SELECT view_name FROM duckdb_views()").fetchall()}
        for table, schema in (("sessions", SESSIONS), ("messages", MESSAGES)):
            if table not in tables:  # nothing imported: the tables are empty, not missing
                con.register(table, schema.empty_table())
        for name, query in QUERIES.items():
            if name == "rejects" and "rejects" not in tables:
                out[name] = pl.DataFrame({"reason": [], "records": []})
                continue
            out[name] = con.sql(query).pl()
    if out["rejects"].height:
        out["rejects"] = out["rejects"].with_columns(
            meaning=pl.col("reason").replace_strict(REASONS, default="", return_dtype=pl.String)
        )
    if out["flags"].height:
        out["flags"] = out["flags"].with_columns(
            meaning=pl.col("flag").replace_strict(FLAGS, default="", return_dtype=pl.String)
        )
    out["files"] = file_accounts(corpus.manifest)
    return out


def render_info(corpus: Corpus) -> str:
    parts = [f"corpus {corpus.shown} (tokenizer {corpus.tokenizer_name}, {corpus.buckets} buckets)"]
    info = corpus_info(corpus)
    files = info["files"]
    with pl.Config(
        tbl_rows=50,
        tbl_cols=-1,
        fmt_str_lengths=64,
        tbl_width_chars=200,
        tbl_hide_dataframe_shape=True,
    ):
        for name, frame in info.items():
            title = name.replace("_", " ")
            if name == "files":
                title = (
                    "files (records seen = sessions + rejects + skipped: "
                    + ("every file balances" if files["balanced"].all() else "NOT BALANCED")
                    + ")"
                )
            body = str(frame) if frame.height else "  (none)"
            parts.append(f"\n{title}\n{body}")
    return "\n".join(parts)

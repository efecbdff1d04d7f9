"""``ctxreplay info``: what a corpus holds, in a few small tables (DuckDB over the Parquet)."""

from __future__ import annotations

import polars as pl

from .rejects import REASONS
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
    "by_role": """
        SELECT role, count(*) AS messages, sum(tokens)::BIGINT AS tokens,
               round(sum(tokens) / sum(sum(tokens)) OVER (), 3) AS share,
               count(*) FILTER (WHERE NOT visible) AS hidden_from_agent
        FROM messages GROUP BY 1 ORDER BY tokens DESC""",
    "largest_outputs": """
        SELECT m.session_id, s.source_session_id, m.seq, m.tool_name, m.tokens
        FROM messages m JOIN sessions s USING (session_id)
        WHERE m.tool_call_id IS NOT NULL ORDER BY m.tokens DESC LIMIT 10""",
    "rejects": """
        SELECT reason, count(*) AS records, any_value(source_location) AS example_file
        FROM rejects GROUP BY 1 ORDER BY 2 DESC""",
}


def corpus_info(corpus: Corpus) -> dict[str, pl.DataFrame]:
    out: dict[str, pl.DataFrame] = {}
    with corpus.connect() as con:
        tables = {r[0] for r in con.execute("SELECT view_name FROM duckdb_views()").fetchall()}
        for name, query in QUERIES.items():
            if name == "rejects" and "rejects" not in tables:
                out[name] = pl.DataFrame({"reason": [], "records": []})
                continue
            out[name] = con.sql(query).pl()
    if out["rejects"].height:
        out["rejects"] = out["rejects"].with_columns(
            meaning=pl.col("reason").replace_strict(REASONS, default="", return_dtype=pl.String)
        )
    return out


def render_info(corpus: Corpus) -> str:
    parts = [f"corpus {corpus.path} (tokenizer {corpus.tokenizer_name}, {corpus.buckets} buckets)"]
    with pl.Config(
        tbl_rows=20,
        tbl_cols=-1,
        fmt_str_lengths=64,
        tbl_width_chars=200,
        tbl_hide_dataframe_shape=True,
    ):
        for name, frame in corpus_info(corpus).items():
            title = name.replace("_", " ")
            body = str(frame) if frame.height else "  (none)"
            parts.append(f"\n{title}\n{body}")
    return "\n".join(parts)

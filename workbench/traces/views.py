"""DuckDB views over trace roots: one view per table, every schema column present, damaged files skipped.

    con = connect(["data/traces"], session_ids=["c-offline-1"], warn=print)
    con.execute("SELECT count(*) FROM evaluations").fetchone()

Part files come from the writer's live set (traces/writer.py); transcripts are joined to the outside agent's
campaign they belong to (join.py) before `session_ids` narrows the views.
"""
from __future__ import annotations

from pathlib import Path

import duckdb
import pandas as pd
import pyarrow.parquet as pq

from workbench.traces.join import link_transcripts
from workbench.traces.schema import TABLES
from workbench.traces.writer import table_files


class TraceError(ValueError):
    """Bad input to the analysis: the message says what and where."""


# ---- loading -----------------------------------------------------------------------------------------
def readable_parts(roots, table: str, warn=None) -> list[str]:
    """The table's live part files under every root, less those that cannot be read (a zero-byte or truncated
    file): each of those is named to `warn` and skipped, so one bad file never loses the report."""
    files = []
    for root in roots:
        for path in table_files(root, table):
            if not path.is_file():          # a FIFO named part-*.parquet would block the report
                if warn:
                    warn(f"{path}: skipped, not a regular file; delete it or re-import its session")
                continue
            try:
                pq.ParquetFile(path).close()
            except Exception as err:         # pyarrow raises several types for a damaged footer
                if warn:
                    warn(f"{path}: skipped, not a readable parquet file ({type(err).__name__}: "
                         f"{str(err).splitlines()[0][:120]}); delete it or re-import its session")
                continue
            files.append(str(path))
    return files


def connect(roots, session_ids=None, warn=None) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection with one view per trace table over every root (missing tables are empty, columns
    a file lacks are null, `filename` is the part file a row came from). Transcripts are joined to their outside
    agent's campaign (join.py) first; session_ids then keeps only those sessions. warn: told about unreadable
    files."""
    roots = [Path(r) for r in ([roots] if isinstance(roots, (str, Path)) else roots)]
    for root in roots:
        if not root.is_dir():
            raise TraceError(f"{root}: no such trace directory (expected <root>/sessions/<id>/part-*.parquet)")
    con = duckdb.connect()
    con.execute("SET threads TO 2")
    for table, schema in TABLES.items():
        files = readable_parts(roots, table, warn)
        con.register(f"{table}_empty", schema.empty_table())
        if files:
            listed = ", ".join("'" + f.replace("'", "''") + "'" for f in files)
            source = f"read_parquet([{listed}], union_by_name = true, filename = true)"
            present = {row[0] for row in con.execute(f"DESCRIBE SELECT * FROM {source}").fetchall()}
            types = {row[0]: row[1] for row in con.execute(f"DESCRIBE SELECT * FROM {table}_empty").fetchall()}
            columns = [name if name in present else f"CAST(NULL AS {types[name]}) AS {name}"
                       for name in schema.names] + ["filename"]
            con.execute(f"CREATE VIEW {table} AS SELECT {', '.join(columns)} FROM {source}")
        else:
            con.execute(f"CREATE VIEW {table} AS SELECT *, CAST(NULL AS VARCHAR) AS filename FROM {table}_empty")
    link_transcripts(con)       # an outside agent's campaign and its imported transcript become one session
    if session_ids is not None:
        con.register("wanted_sessions", pd.DataFrame({"session_id": pd.Series(list(session_ids), dtype=object)}))
        for table in TABLES:
            con.execute(f"ALTER VIEW {table} RENAME TO {table}_all_sessions")
            con.execute(f"CREATE VIEW {table} AS SELECT * FROM {table}_all_sessions "
                        "WHERE session_id IN (SELECT session_id FROM wanted_sessions)")
    return con

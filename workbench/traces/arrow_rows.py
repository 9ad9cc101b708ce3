"""Rows (dicts) to pyarrow tables of the trace schema, every string redacted on the way: nothing reaches a
parquet file without passing `workbench.redaction` (writer.py writes what `to_table` returns).

Free text (FREE_TEXT columns) is redacted as streams, so a secret split over two rows is caught
(`redact_free_text`); every other string column value by itself, each distinct value once per column.
"""
from __future__ import annotations

from typing import Iterable

import pyarrow as pa

from workbench.redaction import context_after, redact, redact_pieces, replace_surrogates
from workbench.secret_forms import environment_read_once
from workbench.traces.schema import TABLES

FREE_TEXT = ("text", "input_json", "output_text", "error", "question_text", "detail")   # ids are never joined


def redact_free_text(rows: list[dict], names, tails: dict | None = None, row_order: bool = False) -> dict:
    """{(row, column): redacted text} of the free-text columns, read as streams so that a secret split over two
    rows is caught: each author's stream (a column's values of one role, in row order: the agent's texts over
    its turns, the tool outputs one after the other), and with row_order every value in row order too (a
    turn's text, tool input and output). tails: the raw end of each stream before these rows (a recorder's
    earlier turns), updated in place; None for rows on their own."""
    slots = [(i, name) for i, row in enumerate(rows) for name in names if row.get(name) is not None]
    raw = {slot: replace_surrogates(str(rows[slot[0]][slot[1]])) for slot in slots}
    clean = dict(raw)
    streams: dict = {}
    for i, name in slots:
        streams.setdefault((name, rows[i].get("role")), []).append((i, name))
    for key, members in list(streams.items()) + ([("rows", slots)] if row_order else []):
        context = (tails or {}).get(key, "")
        for slot, text in zip(members, redact_pieces([clean[s] for s in members], context=context)):
            clean[slot] = text
        if tails is not None:
            tails[key] = context_after(context, [raw[s] for s in members])
    return clean


REFUSED = (pa.ArrowException, TypeError, ValueError, OverflowError)     # what pa.array raises for a bad value


def to_table(table: str, rows: Iterable[dict], fixed: dict | None = None, fit=None) -> pa.Table:
    """Rows (dicts) to a pyarrow Table of the table's schema; unknown keys are an error, missing ones null.
    Strings are redacted (free text as streams, redact_free_text) and lone surrogates replaced (they cannot be
    written as UTF-8). fixed: {column: value} for every row, as if each row held it (no copy of the rows).
    fit(values, arrow_type) -> values: for a column pyarrow refuses as it is, the values it can take, written
    back into the rows (an import's rule, importers/values.py); without it a refused column raises."""
    schema = TABLES[table]
    rows = list(rows)
    fixed = fixed or {}
    unknown = set(fixed).union(*rows) - set(schema.names)        # union(*rows): the rows' keys
    if unknown:
        raise KeyError(f"trace table {table!r} has no column(s) {sorted(unknown)}")
    with environment_read_once():
        return _to_arrow(schema, rows, fixed, fit)


def _to_arrow(schema: pa.Schema, rows: list[dict], fixed: dict, fit) -> pa.Table:
    free = {}
    roles = _column(rows, "role", fixed)        # the free-text streams are per role: its fitted value, if fitted
    if fit is not None and "role" in schema.names:
        roles = _fitted(rows, "role", roles, schema.field("role").type, fit)
    for name in [n for n in FREE_TEXT if n in schema.names]:
        values = _column(rows, name, fixed)
        values = _fitted(rows, name, values, schema.field(name).type, fit) if fit is not None else values
        free[name] = _free_text(values, roles)
    columns = {}
    for field in schema:
        name = field.name       # a pyarrow property makes a new str at every read: read once, not once a row
        if name in free:
            values = free[name]
        elif pa.types.is_string(field.type):
            values = _column(rows, name, fixed)
            values = _redacted(_fitted(rows, name, values, field.type, fit) if fit is not None else values)
        else:
            values = _column(rows, name, fixed)
            if fit is not None:         # converted once: the conversion is the test of whether it fits
                try:
                    columns[name] = pa.array(values, type=field.type)
                    continue
                except REFUSED:
                    values = _fitted(rows, name, values, field.type, fit, tried=True)
        columns[name] = pa.array(values, type=field.type)
    return pa.table(columns, schema=schema)


def _free_text(values: list, roles: list) -> list:
    """One free-text column redacted as redact_free_text does it for rows on their own (one stream per role, in
    row order), kept as a column: no {(row, column): text} dicts for a table of an import."""
    texts = [replace_surrogates(str(v)) if v is not None else None for v in values]
    streams: dict = {}
    for i, text in enumerate(texts):
        if text is not None:
            streams.setdefault(roles[i], []).append(i)
    for members in streams.values():
        for i, clean in zip(members, redact_pieces([texts[i] for i in members])):
            texts[i] = clean
    return texts


def _column(rows: list[dict], name: str, fixed: dict) -> list:
    return [fixed[name]] * len(rows) if name in fixed else [row.get(name) for row in rows]


def _fitted(rows: list[dict], name: str, values: list, arrow_type, fit, tried: bool = False) -> list:
    """values, or fit's values (also written into the rows that hold the column) when pyarrow refuses them. A
    column of only strings and None is taken as it is without the test: a refusal could only be of its size,
    and fitting leaves a string as it is."""
    if not tried:
        if pa.types.is_string(arrow_type) and set(map(type, values)) <= {str, type(None)}:
            return values
        try:
            pa.array(values, type=arrow_type)
            return values
        except REFUSED:
            pass
    values = fit(values, arrow_type)
    for row, value in zip(rows, values):
        if name in row:
            row[name] = value
    return values


def _redacted(values: list) -> list:
    """redact(replace_surrogates(str(v))) of each value, None kept. A column repeats most of its values (the
    session id, role, model, file on every row), so each distinct string is redacted once; a column of only
    strings and None (nearly all) is then mapped in one C-level pass."""
    if set(map(type, values)) <= {str, type(None)}:
        done = {v: redact(replace_surrogates(v)) for v in set(values) if v is not None}
        return list(map(done.get, values))          # None is not a key: it stays None
    return [redact(replace_surrogates(str(v))) if v is not None else None for v in values]

"""Values read from a transcript made safe to use: ids as strings, counts as bounded integers, prices and
timestamps as finite numbers. A transcript is input: any field can hold any JSON value (a list where an id
belongs, 1e20 where a token count belongs, NaN as a time), and none of that may stop an import. What does not
fit becomes None (a count: 0); a timestamp that is not a time is also reported (`bad_time`).
"""
from __future__ import annotations

import json
import math
from datetime import datetime, timezone

MAX_COUNT = 1 << 53             # token counts above this are not counts (and would not fit the int64 columns)
# datetime covers years 1..9999; epoch seconds outside this range are not times (and overflow fromtimestamp)
MIN_EPOCH_S, MAX_EPOCH_S = -62135596800.0, 253402300799.0
EPOCH_MS_ABOVE = 1e11           # a number above this is epoch milliseconds (1e11 s is the year 5138)


def text_id(value) -> str | None:
    """An id (uuid, call id, message id) as a string; None for a container or a non-finite number."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else None
    return None


def text(value) -> str | None:
    """Text for a string column: strings as they are, anything else as its JSON."""
    if value is None or isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=True)
    except (TypeError, ValueError, RecursionError):
        return str(value)


def number(value) -> float | None:
    """A finite float, or None (bools, strings, containers, NaN and infinities are not numbers here)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        value = float(value)
    except OverflowError:       # an int too large for a float
        return None
    return value if math.isfinite(value) else None


def count(value) -> int:
    """A token count: a non-negative integer up to MAX_COUNT; 0 for anything else."""
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    n = number(value)
    return int(n) if n is not None and 0 <= n <= MAX_COUNT else 0


def parse_ts(value) -> datetime | None:
    """A UTC datetime from epoch seconds, epoch milliseconds or ISO 8601 text; None for anything else
    (see bad_time for which of those a reader should hear about)."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        seconds = number(value)
        if seconds is None:
            return None
        seconds = seconds / 1000.0 if seconds > EPOCH_MS_ABOVE else seconds
        if not MIN_EPOCH_S <= seconds <= MAX_EPOCH_S:
            return None
        try:
            return datetime.fromtimestamp(seconds, tz=timezone.utc)
        except (OverflowError, OSError, ValueError):
            return None
    if not isinstance(value, str):
        return None
    try:
        ts = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    try:
        return ts.astimezone(timezone.utc) if ts.tzinfo else ts.replace(tzinfo=timezone.utc)
    except (OverflowError, ValueError):         # an offset that moves it past year 1 or 9999
        return None


def bad_time(value) -> bool:
    """True for a timestamp field that is present but is not a time (so its line gets none)."""
    return value is not None and value != "" and parse_ts(value) is None


def _fit(value, arrow_type):
    """value as the column type wants it, or None when it cannot be (import rows only: see fit_rows)."""
    import pyarrow as pa
    if value is None:
        return None
    if pa.types.is_string(arrow_type):
        return text(value)
    if pa.types.is_boolean(arrow_type):
        return value if isinstance(value, bool) else None
    if pa.types.is_integer(arrow_type):
        n = number(value)
        return int(n) if n is not None and n == int(n) and abs(n) < 2 ** 63 else None
    if pa.types.is_floating(arrow_type):
        return number(value)
    if pa.types.is_timestamp(arrow_type):
        return value if isinstance(value, datetime) else parse_ts(value)
    return value


def fit_values(values: list, arrow_type) -> list:
    """A column's values that pyarrow refused as they are, each as the type wants it or None (fit_rows' rule;
    writer.replace_session applies it to an import's tables as it converts them)."""
    return [_fit(value, arrow_type) for value in values]


def fit_rows(table: str, rows: list[dict]) -> int:
    """Make every column of the rows convertible to the table's schema, in place: a column that pyarrow takes
    as it is stays untouched (the common case costs one conversion); in one it refuses, each value that does
    not fit (a dict for a name, 10**30 for a count) becomes null. Returns how many values were nulled."""
    import pyarrow as pa

    from workbench.traces.schema import TABLES

    nulled = 0
    for field in TABLES[table]:
        name = field.name       # a pyarrow property makes a new str at every read: read once, not once a row
        values = [row.get(name) for row in rows]
        try:
            pa.array(values, type=field.type)
            continue
        except (pa.ArrowException, TypeError, ValueError, OverflowError):
            pass
        for row, value, fitted in zip(rows, values, fit_values(values, field.type)):
            if value is not None and fitted is None:
                nulled += 1
            if name in row:
                row[name] = fitted
    return nulled

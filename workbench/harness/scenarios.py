"""Scenarios and suites: the shapes a kernel is judged on, read from CSV files.

A suite is a CSV under kernels/attn_fwd/suites/ (or any path a user passes) with the columns
    name, batch, heads_q, heads_kv, seqlen_q, seqlen_k, head_dim, causal, dtype[, category]
Bad rows are refused with the file, the line and the reason, never half-loaded. This module is attention's
Scenario; the suite loader reads any problem's suites through its problem.py (problems.py): `problem=` names it.
"""
from __future__ import annotations

import csv
import math
import os
import stat
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Optional

from workbench.harness.paths import DEFAULT_PROBLEM, SUITES_DIR

REQUIRED_COLUMNS = ("name", "batch", "heads_q", "heads_kv", "seqlen_q", "seqlen_k", "head_dim", "causal", "dtype")
OPTIONAL_COLUMNS = ("category",)
SUPPORTED_DTYPES = ("bf16",)
MAX_HEAD_DIM = 256
CATEGORY_NAMES = {
    "A": "FlashAttention grid",
    "B": "GQA model shapes",
    "C": "ragged lengths",
    "D": "KV-cache prefill + cross",
    "E": "edge cases of the contract",
    "serving": "shapes of a real serving run (workbench suite from-flashinfer)",
    "user": "user shapes",
}


class SuiteError(ValueError):
    """A suite file or row that cannot be used; the message names file, line and reason."""


@dataclass(frozen=True)
class Scenario:
    name: str
    batch: int
    heads_q: int
    heads_kv: int
    seqlen_q: int
    seqlen_k: int
    head_dim: int
    causal: bool
    dtype: str = "bf16"
    category: str = "user"

    @property
    def key(self) -> str:
        """Identity for caches: the shape, not the (user-chosen) name."""
        return (f"b{self.batch}_hq{self.heads_q}_hkv{self.heads_kv}_sq{self.seqlen_q}_sk{self.seqlen_k}"
                f"_d{self.head_dim}_c{int(self.causal)}_{self.dtype}")

    @property
    def group_size(self) -> int:
        return self.heads_q // self.heads_kv

    def visible_keys(self, i: int) -> int:
        """How many keys query row i attends to (bottom-right aligned causal mask)."""
        if not self.causal:
            return self.seqlen_k
        return max(0, min(self.seqlen_k, i + self.seqlen_k - self.seqlen_q + 1))

    def attended_pairs(self) -> int:
        """Exact count of (query, key) pairs that are not masked, per (batch, head)."""
        if not self.causal:
            return self.seqlen_q * self.seqlen_k
        sq, sk = self.seqlen_q, self.seqlen_k
        offset = sk - sq  # row i sees keys 0 .. i + offset
        # rows with i + offset + 1 <= 0 see nothing; rows with i + offset + 1 >= sk see everything
        total = 0
        first_partial = max(0, -offset)            # first row that sees >= 1 key
        first_full = max(0, min(sq, sk - offset - 1))  # first row that sees all sk keys
        if first_full > first_partial:
            a = first_partial + offset + 1
            b = first_full - 1 + offset + 1
            total += (a + b) * (first_full - first_partial) // 2
        total += max(0, sq - max(first_full, first_partial)) * sk
        return total

    def flops(self) -> float:
        """4*B*Hq*Sq*Sk*D, halved for causal when Sq == Sk (FlashAttention's convention); exact area otherwise."""
        dense = 4.0 * self.batch * self.heads_q * self.seqlen_q * self.seqlen_k * self.head_dim
        if not self.causal:
            return dense
        if self.seqlen_q == self.seqlen_k:
            return dense / 2.0
        return 4.0 * self.batch * self.heads_q * self.attended_pairs() * self.head_dim

    def min_bytes(self) -> float:
        """Fewest bytes any kernel must move: q, k, v read once, o and lse written once."""
        q = self.batch * self.seqlen_q * self.heads_q * self.head_dim * 2
        kv = 2 * self.batch * self.seqlen_k * self.heads_kv * self.head_dim * 2
        o = q
        lse = self.batch * self.heads_q * self.seqlen_q * 4
        return float(q + kv + o + lse)

    def to_dict(self) -> dict:
        return asdict(self)


def _parse_int(raw: str, column: str) -> int:
    try:
        value = int(raw.strip())
    except ValueError:
        raise ValueError(f"column {column!r} must be an integer, got {raw!r}") from None
    return value


def _parse_bool(raw: str) -> bool:
    text = raw.strip().lower()
    if text in ("1", "true", "yes"):
        return True
    if text in ("0", "false", "no"):
        return False
    raise ValueError(f"column 'causal' must be 0/1 or true/false, got {raw!r}")


def scenario_from_row(row: dict) -> Scenario:
    """Build a Scenario from one CSV row, raising ValueError with the reason if it is invalid."""
    missing = [c for c in REQUIRED_COLUMNS if (row.get(c) is None or str(row.get(c)).strip() == "")]
    if missing:
        raise ValueError(f"missing value for {', '.join(missing)}")
    ints = {c: _parse_int(row[c], c) for c in ("batch", "heads_q", "heads_kv", "seqlen_q", "seqlen_k", "head_dim")}
    zero = [c for c, v in ints.items() if v <= 0]
    if zero:
        raise ValueError(f"{', '.join(zero)} must be positive (got {', '.join(str(ints[c]) for c in zero)})")
    if ints["heads_q"] % ints["heads_kv"]:
        raise ValueError(f"heads_q={ints['heads_q']} is not a multiple of heads_kv={ints['heads_kv']}")
    if ints["head_dim"] > MAX_HEAD_DIM or ints["head_dim"] % 8:
        raise ValueError(f"head_dim={ints['head_dim']} must be a multiple of 8 and at most {MAX_HEAD_DIM}")
    dtype = row["dtype"].strip().lower()
    if dtype not in SUPPORTED_DTYPES:
        raise ValueError(f"unknown dtype {row['dtype']!r} (supported: {', '.join(SUPPORTED_DTYPES)})")
    category = (row.get("category") or "user").strip() or "user"
    return Scenario(name=row["name"].strip(), causal=_parse_bool(row["causal"]), dtype=dtype,
                    category=category, **ints)


def resolve_suite_path(suite: str | Path, problem=None) -> Path:
    """A suite is a name under the problem's suites/ (attention's: smoke, dev26, full) or a path to a CSV."""
    path = Path(suite)
    if path.suffix == ".csv" or path.exists():
        return path
    return _suites_dir(problem) / f"{suite}.csv"


def _suites_dir(problem) -> Path:
    return SUITES_DIR if problem is None else problem.suites_dir


def _definition(problem):
    """A problem definition (problems.load's), or None for attention's, which this module's own functions read."""
    return None if problem is None or problem.name == DEFAULT_PROBLEM else problem


def decode_utf8(data: bytes, path: str | Path, what: str = "file") -> str:
    """The text of a file that must be UTF-8 (a BOM is dropped); else UnicodeError naming the byte, its line and
    the fix."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = data[:err.start].count(b"\n") + 1
        raise UnicodeError(f"{path}: not UTF-8 (byte {err.start}) at line {line}: 0x{data[err.start]:02x}; save the "
                           f"{what} as UTF-8 (e.g. iconv -f latin1 -t utf-8 {path})") from None


def read_utf8(path: Path, error=ValueError, limit: int = 16 << 20, what: str = "file") -> str:
    """A regular file's text, or `error` naming the first byte that is not UTF-8 (or a file too large). A FIFO,
    a device or /dev/stdin is refused before it is read (opened without blocking), so no suite can hang a check."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise error(f"{path}: not a regular file (a FIFO, device or socket); pass a CSV file")
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as err:
        raise error(f"{path}: cannot read it: {err.strerror}; pass a readable {what} file") from None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):       # swapped in after the first look
            raise error(f"{path}: not a regular file (a FIFO, device or socket); pass a CSV file")
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise error(f"{path}: larger than {limit >> 20} MiB; is this the right file?")
    try:
        return decode_utf8(data, path, what)
    except UnicodeError as err:
        raise error(str(err)) from None


def load_suite(suite: str | Path, warn: Optional[Callable[[str], None]] = None, problem=None) -> list:
    """The scenarios of a suite; `warn` is told about columns the suite format does not know (they are
    ignored: most often a misspelt optional column). `problem`: the definition (problems.load) whose suite
    format applies (default attention's)."""
    try:
        path = resolve_suite_path(suite, _definition(problem))
        exists, is_dir = path.exists(), path.is_dir()
    except OSError as err:          # a name longer than the system allows, a path through a file
        raise SuiteError(f"suite {str(suite)[:80]!r}: {err.strerror}; pass a CSV path or one of: "
                         f"{suite_names(problem)}") from None
    if not exists:
        raise SuiteError(f"{path}: suite not found; pass a CSV path or one of: {suite_names(problem)}")
    if is_dir:
        raise SuiteError(f"{path}: is a directory; pass a suite CSV file or one of the suite names")
    return parse_suite(read_utf8(path, SuiteError, what="suite"), path, warn, problem)


def suite_names(problem=None) -> str:
    """The named suites (of `problem`, default attention's), as a refusal lists them."""
    return ", ".join(sorted(p.stem for p in _suites_dir(_definition(problem)).glob("*.csv"))) or "(none found)"


def parse_suite(text: str, path: str | Path, warn: Optional[Callable[[str], None]] = None, problem=None) -> list:
    """The scenarios of a suite's text; `path` is what the messages name; `problem` as for load_suite."""
    problem = _definition(problem)
    required = REQUIRED_COLUMNS if problem is None else problem.columns
    from_row = scenario_from_row if problem is None else problem.module.scenario_from_row
    lines = text.splitlines()
    reader = csv.DictReader(line for line in lines if not line.lstrip().startswith("#"))
    header = reader.fieldnames or []
    missing = [c for c in required if c not in header]
    if missing:
        raise SuiteError(f"{path}:1: header lacks column(s) {', '.join(missing)}; "
                         f"expected {','.join(required)}[,category]")
    unknown = [c for c in header if c not in required + OPTIONAL_COLUMNS]
    if unknown and warn:
        warn(f"{path}:1: unknown column(s) {', '.join(map(repr, unknown))} ignored; the columns are "
             f"{','.join(required + OPTIONAL_COLUMNS)}")
    scenarios, names = [], set()
    # line numbers count comment lines too, so we keep them for honest positions
    data_lines = [n for n, line in enumerate(lines, start=1)
                  if line.strip() and not line.lstrip().startswith("#")][1:]
    for line_no, row in zip(data_lines, reader):
        try:
            scenario = from_row(row)
        except ValueError as err:
            raise SuiteError(f"{path}:{line_no}: {err}; fix or remove this row") from None
        if scenario.name in names:
            raise SuiteError(f"{path}:{line_no}: duplicate scenario name {scenario.name!r}")
        names.add(scenario.name)
        scenarios.append(scenario)
    if not scenarios:
        raise SuiteError(f"{path}: the suite has no scenarios")
    return scenarios


def suite_row(s: Scenario) -> list:
    """One scenario as its suite CSV row (REQUIRED_COLUMNS, then category)."""
    return [s.name, s.batch, s.heads_q, s.heads_kv, s.seqlen_q, s.seqlen_k, s.head_dim, int(s.causal), s.dtype,
            s.category]


def write_suite(path: Path, scenarios: list, problem=None) -> None:
    problem = _definition(problem)
    columns = list(REQUIRED_COLUMNS if problem is None else problem.columns) + ["category"]
    row = suite_row if problem is None else problem.module.suite_row
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(columns)
        for s in scenarios:
            writer.writerow(row(s))


def geomean(values) -> float:
    values = [v for v in values if v is not None and math.isfinite(v) and v > 0]
    if not values:
        return float("nan")
    return math.exp(sum(math.log(v) for v in values) / len(values))

"""A folder of FlashInfer-Bench files from a serving run -> the scenarios of one problem's suite, and every file or
line that gave none, with why.

What the folder may hold (FlashInfer-Bench's layout, any depth): Definitions (`*.json`: name, op_type, axes,
inputs, outputs, reference; what `fi_trace` writes per operation and shape) and Workloads, as Trace lines with only
`definition` and `workload` (`*.jsonl`, one definition per file, or one such object in a `*.json`), or bare
Workload lines (`{uuid, axes, inputs}`) in a `.jsonl` named after their definition. A workload binds its
definition's var axes; the const axes come from the definition. Safetensors inputs (ragged attention's indptr
tensors) are read relative to the folder. Which op_types a problem covers and the scenarios they become are its
problem.py's (FLASHINFER_OP_TYPES, from_flashinfer); scenarios of the same shape are kept once, with the number of
workloads they stand for.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from workbench.flashinfer import schema, tensors

FLOAT_DTYPES = ("bfloat16", "float16", "float32", "float8_e4m3fn", "float8_e5m2", "float4_e2m1")
MAX_FILE_BYTES = 64 << 20


@dataclass
class Imported:
    scenarios: list = field(default_factory=list)       # the problem's Scenario objects, in file order
    stands_for: dict = field(default_factory=dict)      # scenario name -> how many workloads it stands for
    skipped: list = field(default_factory=list)         # (where, why)
    definitions: int = 0
    workloads: int = 0


def _load(path: Path, out: Imported):
    """JSON objects of a file with where each came from: (where, object); unreadable lines become skips."""
    if path.stat().st_size > MAX_FILE_BYTES:
        out.skipped.append((str(path), f"larger than {MAX_FILE_BYTES >> 20} MiB"))
        return []
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeError) as err:
        out.skipped.append((str(path), f"cannot be read as UTF-8 ({type(err).__name__})"))
        return []
    if path.suffix == ".json":
        try:
            return [(str(path), json.loads(text))]
        except ValueError as err:
            out.skipped.append((str(path), f"not JSON ({err.msg} at line {err.lineno})"))
            return []
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                found.append((f"{path}:{number}", json.loads(line)))
            except ValueError as err:
                out.skipped.append((f"{path}:{number}", f"not JSON ({err.msg})"))
    return found


def _is_definition(obj) -> bool:
    return isinstance(obj, dict) and "op_type" in obj and "axes" in obj and "workload" not in obj


def _floats(definition: dict) -> set:
    """The floating dtypes of the input tensors (scalars, shape null, and outputs such as an fp32 lse aside)."""
    specs = (definition.get("inputs") or {}).values()
    return {s.get("dtype") for s in specs if isinstance(s, dict) and s.get("shape") is not None
            and s.get("dtype") in FLOAT_DTYPES}


class Reader:
    def __init__(self, folder: Path, problem, any_dtype: bool = False):
        self.folder, self.problem, self.any_dtype = Path(folder), problem, any_dtype
        self.out = Imported()
        self.definitions: dict = {}
        self.keys: dict = {}         # scenario key -> name kept

    def skip(self, where: str, why: str) -> None:
        self.out.skipped.append((where, why))

    def read(self) -> Imported:
        files = sorted(p for p in self.folder.rglob("*") if p.suffix in (".json", ".jsonl") and p.is_file()
                       and not any(part.startswith(".") for part in p.relative_to(self.folder).parts))
        pending = []
        for path in files:
            for where, obj in _load(path, self.out):
                if _is_definition(obj):
                    problems = schema.definition_problems(obj)
                    if problems:
                        self.skip(where, "not a FlashInfer-Bench definition: " + "; ".join(problems[:2]))
                    else:
                        self.definitions[obj["name"]] = obj
                        self.out.definitions += 1
                else:
                    pending.append((where, path, obj))
        bound = set()
        for where, path, obj in pending:
            name = self.workload(where, path, obj)
            if name:
                bound.add(name)
        for name, d in self.definitions.items():
            if name not in bound and d["op_type"] in self.op_types:
                var = [a for a, spec in d["axes"].items() if spec.get("type") == "var"]
                self.skip(f"definition {name}", f"no workload in the folder binds its var axes ({', '.join(var)})")
        return self.out

    @property
    def op_types(self) -> tuple:
        return tuple(getattr(self.problem.module, "FLASHINFER_OP_TYPES", ()))

    def workload(self, where: str, path: Path, obj) -> str:
        """The definition name a workload bound (its scenarios added), or '' (skipped, with why)."""
        if isinstance(obj, dict) and "workload" in obj:
            problems = [p for p in schema.trace_problems(obj) if not p.startswith("evaluation")]
            name, work = obj.get("definition"), obj.get("workload")
        else:
            name, work = path.stem, obj
            problems = [f"workload: {p}" for p in schema.workload_problems(obj)]
        if problems:
            self.skip(where, "not a FlashInfer-Bench workload: " + "; ".join(problems[:2]))
            return ""
        self.out.workloads += 1
        definition = self.definitions.get(name)
        if definition is None:
            self.skip(where, f"its definition {name!r} is not in the folder (a definitions/**/{name}.json)")
            return ""
        if definition["op_type"] not in self.op_types:
            self.skip(where, f"op_type {definition['op_type']}: not one {self.problem.name} covers "
                             f"({', '.join(self.op_types) or 'none'})")
            return name
        floats = _floats(definition) - {"bfloat16"}
        if floats and not self.any_dtype:
            self.skip(where, f"{name} has {', '.join(sorted(floats))} tensors and {self.problem.name} is bf16 (pass "
                             "--any-dtype to keep its shapes: the same work in bf16)")
            return name
        axes = {a: spec["value"] for a, spec in definition["axes"].items() if spec.get("type") == "const"}
        axes.update(work["axes"])
        unbound = [a for a in definition["axes"] if a not in axes]
        if unbound:
            self.skip(where, f"binds no value for axis {', '.join(unbound)} of {name}")
            return name
        try:
            rows = self.problem.module.from_flashinfer(definition, axes, self._tensor_reader(work))
            scenarios = [self.problem.module.scenario_from_row({k: str(v) for k, v in r.items()}) for r in rows]
        except (ValueError, KeyError) as err:
            self.skip(where, f"{name}: {err}")
            return name
        for s in scenarios:
            kept = self.keys.setdefault(s.key, s.name)
            if kept == s.name and s.name not in self.out.stands_for:
                self.out.scenarios.append(s)
            self.out.stands_for[kept] = self.out.stands_for.get(kept, 0) + 1
        return name

    def _tensor_reader(self, work: dict):
        def read(input_name: str):
            """The integers of a safetensors input, or None when the workload gives it as random."""
            spec = work["inputs"].get(input_name)
            if not spec or spec.get("type") != "safetensors":
                return None
            path = Path(spec["path"])
            path = path if path.is_absolute() else self.folder / path
            try:
                return tensors.read_ints(path, spec["tensor_key"])
            except OSError as err:
                raise ValueError(f"input {input_name}: {spec['path']}: {err.strerror}") from None
        return read

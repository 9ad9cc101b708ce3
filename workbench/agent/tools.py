"""The tools an agent gets: JSON schemas (Messages-API form) and their implementations.

File tools are confined to the campaign workspace (Workspace.resolve). `run_harness` judges a file through
the injected evaluator (workbench.harness.check.check by default), after saving it as artifacts/<sha>.cu.
compile_report / sass_summary / ncu_profile need nvcc / cuobjdump / ncu, i.e. the GPU machine, and say so
plainly when the tool is missing. Every failure comes back as `ToolOutcome(is_error=True)` with a message the
agent can act on; no tool raises into the loop.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Optional

from workbench.campaign.workspace import (KERNEL_FILE, MAX_READ_BYTES, MAX_WRITE_BYTES, Workspace,
                                          WorkspaceError)
from workbench.agent.tool_format import (FRAMEWORK_KERNEL, SASS_OPCODES, format_result,  # noqa: F401
                                         summarise_ncu_csv, summarise_sass, unknown_ncu_metrics)
from workbench.redaction import redact

REDACTED_NOTE = " (something that looked like a credential was replaced by [REDACTED]: keys never go to disk)"

OUTPUT_CHARS = 30_000                   # a tool result longer than this is cut (the agent is told) ...
READ_CHARS = 120_000                    # ... except read_file, which returns whole kernels
READ_LINES = 2000                       # read_file's default window
MAX_SUITE_BYTES = 1 << 20
LIST_MAX_ENTRIES = 400
NCU_METRICS = (
    "gpu__time_duration.sum",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "dram__bytes_read.sum",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "sm__inst_executed.sum",
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
    "l1tex__t_sector_hit_rate.pct",
    "lts__t_sector_hit_rate.pct",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum",
    "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",
    "launch__registers_per_thread",
    "launch__grid_size",
)
GPU_TOOLS = ("compile_report", "sass_summary", "ncu_profile")

_PATH = {"type": "string", "description": "path relative to the campaign workspace, e.g. kernel.cu"}
TOOL_SPECS = [
    {"name": "read_file", "description": "Read a text file of the campaign workspace, exactly as stored (files "
     "over 1 MiB are refused); long files come in windows of lines: pass offset (first line, from 1) and limit.",
     "input_schema": {"type": "object", "properties": {
         "path": _PATH, "offset": {"type": "integer", "default": 1},
        "limit": {"type": "integer", "default": READ_LINES}},
         "required": ["path"]}},
    {"name": "list_files", "description": "List files and folders under a workspace folder.",
     "input_schema": {"type": "object", "properties": {"path": {**_PATH, "default": "."}}}},
    {"name": "write_file", "description": "Create or overwrite a text file in the workspace (at most 512 KiB).",
     "input_schema": {"type": "object", "properties": {"path": _PATH, "content": {"type": "string"}},
                      "required": ["path", "content"]}},
    {"name": "edit_file", "description": "Replace one exact, unique occurrence of old_string with new_string.",
     "input_schema": {"type": "object", "properties": {
         "path": _PATH, "old_string": {"type": "string"}, "new_string": {"type": "string"}},
         "required": ["path", "old_string", "new_string"]}},
    {"name": "run_harness", "description": (
        "Build, verify and time a kernel file on the campaign's suite: per-scenario status, error, time, TFLOP/s "
        "and speedups, geomeans, suspicion flags, and whether the stop condition holds. Saves the file as "
        "artifacts/<sha>.cu. Takes minutes."),
     "input_schema": {"type": "object", "properties": {
         "path": {**_PATH, "default": KERNEL_FILE},
         "suite": {"type": "string", "description": "suite name (smoke, dev26, full); default: the campaign's"}}}},
    {"name": "compile_report", "description": "Build a kernel file with nvcc and report errors, registers, "
     "spills, stack and shared memory per kernel (ptxas).",
     "input_schema": {"type": "object", "properties": {"path": {**_PATH, "default": KERNEL_FILE}}}},
    {"name": "sass_summary", "description": "Counts of key SASS instructions (HGMMA, HMMA, FFMA, MUFU.EX2, "
     "LDG/STG, LDS/STS, LDL/STL, BAR, ...) in the built kernel, via cuobjdump. GPU machine only.",
     "input_schema": {"type": "object", "properties": {"path": {**_PATH, "default": KERNEL_FILE}}}},
    {"name": "ncu_profile", "description": "Profile one launch of the kernel on one scenario of the suite with "
     "Nsight Compute (fixed metric set: time, SM/DRAM throughput, occupancy, tensor pipe, cache hit rates, "
     "bank conflicts, stalls; clock control none). GPU machine only.",
     "input_schema": {"type": "object", "properties": {
         "scenario": {"type": "string", "description": "scenario name from the suite"},
         "path": {**_PATH, "default": KERNEL_FILE}}, "required": ["scenario"]}},
    {"name": "revert", "description": "Make kernel.cu a copy of an evaluated version (artifacts/<sha>.cu); "
     "a unique prefix of at least 6 hex digits is enough.",
     "input_schema": {"type": "object", "properties": {"sha": {"type": "string"}}, "required": ["sha"]}},
]
_TYPES = {"string": str, "integer": int, "number": (int, float), "boolean": bool, "object": dict}


# One profiled launch of one scenario takes seconds (session 8/9 on the H200: 10-40 s with the replays); a
# candidate that hangs under the profiler (a constructor doing CUDA work and forking, session 9) must not hold the
# agent's turn for ten minutes.
NCU_TIMEOUT_S = 240.0


def ncu_argv(ncu: str, metrics: list, suite: str, scenario: str, problem: str = "") -> list[str]:
    """Nsight Compute on launch_one, as run inside the sandbox ({private}: the private folder, the kernel there).
    Only the application process is profiled: with `--target-processes all` ncu injects itself into every process
    the candidate's constructor forks and waits for each to end, so a setsid grandchild that sleeps kept the
    profile running to its time limit (the H200, session 8: tests/test_security_gpu.py's hostile constructor)."""
    return [ncu, "--clock-control", "none", "--metrics", ",".join(metrics), "--csv",
            "--target-processes", "application-only",
            sys.executable, "-m", "workbench.agent.launch_one", "--so", "{private}/lib/kernel.so", "--suite", suite,
            "--scenario", scenario, *(["--problem", problem] if problem else [])]


@dataclass
class ToolOutcome:
    text: str
    is_error: bool = False
    result: Any = None                  # SuiteResult for run_harness
    kernel_sha: str = ""
    eval_id: str = ""


@dataclass
class HarnessDefaults:
    suite: str = "dev26"
    stop_expr: str = ""
    anchors: tuple = ("fa3",)
    baseline_path: Optional[str] = None
    cache_dir: Optional[str] = None
    problem: str = ""                   # the campaign's problem (CampaignConfig.problem); '' = attention

    def definition(self):
        from workbench.harness import problems   # no torch: a problem's problem.py reads CSV
        return problems.load(self.problem or None)


def default_evaluator(request):
    from workbench.harness.check import check      # lazy: the GPU harness is heavy and optional here
    return check(request)


def check_input(spec: dict, data: Any) -> str:
    """A one-line problem with `data` against the tool's schema, or ''."""
    schema = spec["input_schema"]
    if not isinstance(data, dict):
        return "input must be a JSON object"
    missing = [k for k in schema.get("required", []) if k not in data]
    if missing:
        return f"missing required input {', '.join(missing)}"
    for key, value in data.items():
        prop = schema["properties"].get(key)
        if prop is None:
            return f"unknown input {key!r}; {spec['name']} takes {', '.join(schema['properties'])}"
        if not isinstance(value, _TYPES[prop["type"]]) or (prop["type"] != "boolean" and isinstance(value, bool)):
            return f"input {key!r} must be a {prop['type']}"
    return ""


class Toolbox:
    def __init__(self, workspace: Workspace, evaluator: Callable | None = None,
                 defaults: HarnessDefaults | None = None, best_provider: Callable[[], Optional[float]] = lambda: None,
                 recorded: dict | None = None):
        self.ws = workspace
        self.evaluator = evaluator or default_evaluator
        self.defaults = defaults or HarnessDefaults()
        self.best_provider = best_provider
        self.recorded = recorded or {}   # call_id -> (text, is_error): GPU tool outputs when replaying
        self.specs = TOOL_SPECS
        self._by_name = {s["name"]: s for s in TOOL_SPECS}

    def run(self, name: str, data: Any, call_id: str = "") -> ToolOutcome:
        spec = self._by_name.get(name)
        if spec is None:
            return ToolOutcome(f"unknown tool {name!r}; available: {', '.join(self._by_name)}", True)
        problem = check_input(spec, data)
        if problem:
            return ToolOutcome(f"{name}: {problem}", True)
        if name in GPU_TOOLS and call_id in self.recorded:
            text, is_error = self.recorded[call_id]
            return ToolOutcome(text, is_error)
        try:
            outcome = getattr(self, f"_{name}")(**data)
        except WorkspaceError as err:
            return ToolOutcome(str(err), True)
        except Exception as err:   # a tool bug must reach the agent as a tool error, not end the campaign
            return ToolOutcome(f"{name} failed: {type(err).__name__}: {err}", True)
        cap = READ_CHARS if name == "read_file" else OUTPUT_CHARS
        if len(outcome.text) > cap:
            outcome.text = outcome.text[:cap] + f"\n[... cut at {cap} characters]"
        return outcome

    # ---- files ---------------------------------------------------------------------------------------
    def _read_file(self, path: str, offset: int = 1, limit: int = READ_LINES) -> ToolOutcome:
        if self.ws.fs.kind(path) == "dir":
            return ToolOutcome(f"{path}: no such file (it is a folder)", True)
        text = self.ws.fs.read_text(path, MAX_READ_BYTES)
        lines = text.splitlines(keepends=True)
        first, count = max(1, offset), max(1, limit)
        if first == 1 and len(lines) <= count:
            return ToolOutcome(text)
        window = lines[first - 1:first - 1 + count]
        last = first + len(window) - 1
        more = f"; read on with offset={last + 1}" if last < len(lines) else ""
        return ToolOutcome("".join(window) + f"\n[lines {first}-{last} of {len(lines)}{more}]")

    def _list_files(self, path: str = ".") -> ToolOutcome:
        if self.ws.fs.kind(path) != "dir":
            return ToolOutcome(f"{path}: no such folder", True)
        entries = self.ws.fs.listing(path, skip_top=("traces", "state", ".lock"), max_entries=LIST_MAX_ENTRIES + 1)
        lines = []
        for e in entries[:LIST_MAX_ENTRIES]:
            lines.append({"dir": f"{e.path}/", "file": f"{e.path}  ({e.size} bytes)",
                          "symlink": f"{e.path}  (symlink to {e.target}: not followed, the file tools refuse it)",
                          "hardlink": f"{e.path}  ({e.size} bytes; a hard link: the file tools refuse it)",
                          }.get(e.kind, f"{e.path}  (not a regular file: refused)"))
        if len(entries) > LIST_MAX_ENTRIES:
            lines.append(f"[... more than {LIST_MAX_ENTRIES} entries]")
        return ToolOutcome("\n".join(lines) or "(empty)")

    def _write_file(self, path: str, content: str) -> ToolOutcome:
        size = len(content.encode("utf-8", "surrogatepass"))
        if size > MAX_WRITE_BYTES:
            return ToolOutcome(f"refused: {size} bytes is more than the {MAX_WRITE_BYTES} a file may hold", True)
        self.ws.check_writable(path)
        clean = redact(content)
        self.ws.fs.write_text(path, clean)
        return ToolOutcome(f"wrote {path} ({size} bytes)" + (REDACTED_NOTE if clean != content else ""))

    def _edit_file(self, path: str, old_string: str, new_string: str) -> ToolOutcome:
        self.ws.check_writable(path)
        if self.ws.fs.kind(path) != "file":
            return ToolOutcome(f"{path}: no such file", True)
        text = self.ws.fs.read_text(path, MAX_READ_BYTES)
        count = text.count(old_string) if old_string else 0
        if count != 1:
            why = "old_string is empty" if not old_string else (
                "old_string was not found" if count == 0 else f"old_string occurs {count} times; add context")
            return ToolOutcome(f"{path}: no edit made: {why}", True)
        new_text = text.replace(old_string, new_string, 1)
        if len(new_text.encode("utf-8", "surrogatepass")) > MAX_WRITE_BYTES:
            return ToolOutcome(f"refused: the edit would make {path} larger than {MAX_WRITE_BYTES} bytes", True)
        clean = redact(new_text)
        self.ws.fs.write_text(path, clean)
        line = text[:text.index(old_string)].count("\n") + 1
        return ToolOutcome(f"edited {path} at line {line}" + (REDACTED_NOTE if clean != new_text else ""))

    def _revert(self, sha: str) -> ToolOutcome:
        name = self.ws.artifact_name(sha)
        self.ws.write_kernel(self.ws.fs.read_text(name, MAX_READ_BYTES))
        sha_full = name.split("/")[-1][:-3]
        return ToolOutcome(f"kernel.cu is now {name} (sha {sha_full[:12]})")

    # ---- the harness ---------------------------------------------------------------------------------
    def _suite(self, suite: str) -> str:
        """A suite the agent names: one of the suites directory by name, or a CSV file of the workspace."""
        SUITES_DIR = self.defaults.definition().suites_dir

        if re.fullmatch(r"[A-Za-z0-9_\-]{1,64}", suite):
            path = SUITES_DIR / f"{suite}.csv"
            if path.is_file() and not path.is_symlink():
                return suite
            known = ", ".join(sorted(p.stem for p in SUITES_DIR.glob("*.csv")))
            raise WorkspaceError(f"no suite {suite!r}; use one of {known}, or a .csv file of the workspace")
        if not suite.endswith(".csv"):
            names = ", ".join(sorted(p.stem for p in SUITES_DIR.glob("*.csv")))
            raise WorkspaceError(f"suite {suite!r}: give a suite name ({names}) "
                                 "or a .csv file of the workspace")
        self.ws.fs.read_text(suite, MAX_SUITE_BYTES)      # inside, no link, one name, small, UTF-8
        return str(self.ws.fs.path(suite))

    def _run_harness(self, path: str = KERNEL_FILE, suite: str | None = None) -> ToolOutcome:
        from workbench.harness.result import CheckRequest

        if self.ws.fs.kind(path) != "file":
            return ToolOutcome(f"{path}: no such file", True)
        suite_path = self._suite(suite) if suite else self.defaults.suite
        sha = self.ws.save_artifact(self.ws.fs.read_text(path, MAX_READ_BYTES))
        d = self.defaults
        request = CheckRequest(kernel_path=str(self.ws.artifacts_dir / f"{sha}.cu"), suite=suite_path,
                               baseline_path=d.baseline_path, anchors=tuple(d.anchors), stop_expr=d.stop_expr,
                               previous_best=self.best_provider(), cache_dir=d.cache_dir,
                               include_root=str(self.ws.root),   # the same include root as compile_report
                               problem=d.problem)
        try:
            result = self.evaluator(request)
        except Exception as err:
            return ToolOutcome(f"the harness could not run: {type(err).__name__}: {err}", True, kernel_sha=sha)
        eval_id = result.eval_id or uuid.uuid4().hex[:12]
        result.eval_id = eval_id
        return ToolOutcome(format_result(result, sha), False, result, sha, eval_id)

    # ---- GPU-machine tools ---------------------------------------------------------------------------
    def _build(self, path: str):
        from workbench.harness.build import build_kernel

        if self.ws.fs.kind(path) != "file":
            raise WorkspaceError(f"{path}: no such file")
        # the workspace is the only include root; build_kernel checks every #include against it
        return build_kernel(self.ws.fs.path(path), cache_dir=self.defaults.cache_dir, include_root=self.ws.root,
                            entry_point=self.defaults.definition().entry_point)

    def _compile_report(self, path: str = KERNEL_FILE) -> ToolOutcome:
        build = self._build(path)
        lines = [build.summary]
        for err in build.errors:
            where = f"{err.file}:{err.line}" if err.line else err.file
            lines.append(f"{err.severity}: {where}: {err.message}")
        lines += [f"forbidden: {reason}" for reason in build.forbidden]
        if build.resources:
            lines.append(build.resource_table())
        return ToolOutcome("\n".join(lines), not build.ok)

    def _gpu_tool_build(self, tool: str, program: str, what: str, path: str, verb: str):
        """(program path, build) for a tool that needs a CUDA program, or the ToolOutcome saying why not."""
        found = shutil.which(program)
        if not found:
            return ToolOutcome(f"{tool} is not available here: {what} ({program}) is not installed; "
                               "it runs on the GPU machine only", True)
        build = self._build(path)
        if not build.ok:
            return ToolOutcome(f"cannot {verb}: {build.summary}", True)
        return found, build

    def _sass_summary(self, path: str = KERNEL_FILE) -> ToolOutcome:
        ready = self._gpu_tool_build("sass_summary", "cuobjdump", "the CUDA toolkit", path, "disassemble")
        if isinstance(ready, ToolOutcome):
            return ready
        cuobjdump, build = ready
        proc = subprocess.run([cuobjdump, "-sass", build.so_path], capture_output=True, text=True, timeout=120)
        if proc.returncode != 0:
            return ToolOutcome(f"cuobjdump failed: {proc.stderr.strip()[:500]}", True)
        return ToolOutcome(summarise_sass(proc.stdout))

    def _ncu_profile(self, scenario: str, path: str = KERNEL_FILE) -> ToolOutcome:
        """Nsight Compute on launch_one, both inside the sandbox (contained_run.py): the candidate's constructors
        and entry point run there, never in this process's environment (the API key) or as its user."""
        from workbench.harness.contained_run import run_contained

        ready = self._gpu_tool_build("ncu_profile", "ncu", "Nsight Compute", path, "profile")
        if isinstance(ready, ToolOutcome):
            return ready
        ncu, build = ready
        files, suite = {"kernel.so": build.so_path}, self.defaults.suite
        if suite.endswith(".csv"):                        # a workspace suite: the uid may not read it where it is
            files["suite.csv"], suite = suite, "{private}/lib/suite.csv"
        metrics = list(NCU_METRICS)
        for _ in range(3):   # an ncu version that lacks a metric refuses the whole set: drop it and retry
            run = run_contained(ncu_argv(ncu, metrics, suite, scenario, self.defaults.problem), files,
                                timeout_s=NCU_TIMEOUT_S)
            if run.timed_out:
                return ToolOutcome(f"ncu_profile: the profiled run of {scenario} did not finish in {NCU_TIMEOUT_S:.0f}"
                                   " s and was killed with everything it started (a kernel or a constructor that "
                                   "hangs under the profiler); profile a smaller scenario or fix the hang", True)
            unknown = unknown_ncu_metrics(run.stdout + run.stderr, metrics)
            if run.returncode == 0 or not unknown:
                break
            metrics = [m for m in metrics if m not in unknown]
        if "ERR_NVGPUCTRPERM" in run.stdout + run.stderr:
            return ToolOutcome("ncu_profile: this machine lets only administrators read the GPU's performance "
                               "counters (ERR_NVGPUCTRPERM), and candidate code never runs as one; the machine's "
                               "admin can allow profiling by all users (NVreg_RestrictProfilingToAdminUsers=0)", True)
        if run.returncode != 0:
            tail = (run.stderr or run.stdout).strip().splitlines()[-5:]
            return ToolOutcome("ncu failed:\n" + "\n".join(tail), True)
        return ToolOutcome(summarise_ncu_csv(run.stdout))

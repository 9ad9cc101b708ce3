"""Issue 25's ncu hang, behind the walls: where does Nsight Compute stop inside `run_contained`?

Uncontained, the hostile probe of tests/test_security_gpu.py finishes under ncu in 7 s (scripts/ncu_probe_diag.sh,
session 10), so the hang is the walls'. This runs, each under `run_contained` with the ncu_profile tool's command
line and a limit of --limit seconds, on the GPU machine (as root):
    version   `ncu --version` (does ncu start at all in there?)
    original  ncu on launch_one with the original kernel (no constructor: the benign case)
    probe     ncu on the hostile probe as the test builds it; probe_nofork: the same without its fork
and `original` once more with WORKBENCH_SANDBOX=off (the same code path, no walls), and with one wall at a time left
down (`relax_uid`, `relax_net`, ...: contained_run.RELAXABLE; session 11 found the benign case stops too, so
one of them is the cause). At --sample seconds every
process left under this one is written down: pid, name, state, wchan, the syscall it is in, kernel stack,
cmdline; then the tree is left to its limit. One line per case, the details as JSON in --out.
    python3 scripts/ncu_contained_diag.py --out $OUT/ncu_contained.json [--cases original,relax_uid,relax_net]
"""
from __future__ import annotations

import argparse
import ast
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _read(path: str, limit: int = 2000) -> str:
    try:
        with open(path, "rb") as fh:
            return fh.read(limit).decode("utf-8", "replace").replace("\0", " ").strip()
    except OSError as err:
        return f"<{err.strerror}>"


def descendants(root_pid: int) -> list[int]:
    """Every live process whose parent chain reaches root_pid (from /proc, as root: namespaces do not hide them)."""
    parent = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            stat = _read(f"/proc/{entry}/stat", 400)
            try:
                parent[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
            except (IndexError, ValueError):
                continue
    out, frontier = [], [root_pid]
    while frontier:
        kids = [p for p, pp in parent.items() if pp in frontier]
        out += kids
        frontier = kids
    return out


def snapshot(root_pid: int) -> list[dict]:
    rows = []
    for pid in descendants(root_pid):
        base = f"/proc/{pid}"
        status = dict(line.split(":", 1) for line in _read(f"{base}/status", 4000).splitlines() if ":" in line)
        rows.append({"pid": pid, "name": status.get("Name", "").strip(), "state": status.get("State", "").strip(),
                     "uid": status.get("Uid", "").split()[:1], "threads": status.get("Threads", "").strip(),
                     "wchan": _read(f"{base}/wchan", 200), "syscall": _read(f"{base}/syscall", 200),
                     "stack": _read(f"{base}/stack", 1500).splitlines()[:8], "cmdline": _read(f"{base}/cmdline", 300)})
    return rows


def probe_so(work: Path, nofork: bool) -> str:
    """The hostile probe's library as tests/test_security_gpu.py builds it (optionally without its fork)."""
    tree = ast.parse((ROOT / "tests" / "test_security_gpu.py").read_text())
    src = next(n.value.value for n in tree.body if isinstance(n, ast.Assign)
               and getattr(n.targets[0], "id", "") == "PROBE")
    if nofork:
        src = src.replace("  if (fork() == 0) {", "  if (0) {", 1)
    cu, so = work / f"probe{'_nofork' if nofork else ''}.cu", work / f"probe{'_nofork' if nofork else ''}.so"
    cu.write_text(src)
    subprocess.run(["nvcc", "-shared", "-Xcompiler", "-fPIC", "-gencode=arch=compute_90a,code=sm_90a", "-o", str(so),
                    str(cu)], check=True, capture_output=True)
    return str(so)


def run_case(name: str, argv: list[str], files: dict, limit: float, sample_s: float, env_off: bool,
             relax: tuple = ()) -> dict:
    from workbench.harness.contained_run import run_contained
    saved = os.environ.get("WORKBENCH_SANDBOX")
    if env_off:
        os.environ["WORKBENCH_SANDBOX"] = "off"
    box: dict = {}
    start = time.time()
    thread = threading.Thread(target=lambda: box.update(run=run_contained(argv, files=files, timeout_s=limit,
                                                                          relax=relax)))
    thread.start()
    thread.join(sample_s)
    sampled = snapshot(os.getpid()) if thread.is_alive() else []
    thread.join()
    if env_off:
        if saved is None:
            os.environ.pop("WORKBENCH_SANDBOX", None)
        else:
            os.environ["WORKBENCH_SANDBOX"] = saved
    run = box.get("run")
    out = {"case": name, "wall_s": round(time.time() - start, 1), "sampled_at_s": sample_s if sampled else None,
           "left_at_sample": sampled}
    if run is not None:
        out.update(returncode=run.returncode, timed_out=run.timed_out, notices=run.notices,
                   stdout_tail=run.stdout[-3000:], stderr_tail=run.stderr[-3000:],
                   profiled=("gpu__time_duration" in run.stdout) or ("Duration" in run.stdout))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="JSON file for the details")
    ap.add_argument("--limit", type=float, default=45.0, help="seconds per case (run_contained's timeout)")
    ap.add_argument("--sample", type=float, default=20.0, help="when to write down what is still running")
    ap.add_argument("--cases", default="", help="comma list of case names (default: all)")
    args = ap.parse_args(argv)
    from workbench.harness.contained_run import RELAXABLE
    names = ["version", "original", "original_walls_off", "probe", "probe_nofork"] + [f"relax_{w}" for w in RELAXABLE]
    wanted = [c for c in args.cases.split(",") if c]
    unknown = sorted(set(wanted) - set(names))
    if unknown:
        print(f"ncu_contained_diag: no case {', '.join(unknown)}; one of {', '.join(names)}", file=sys.stderr)
        return 2
    ncu = shutil.which("ncu")
    if ncu is None or os.geteuid() != 0:
        print("ncu_contained_diag: needs ncu on PATH and root (the walls drop to a fresh uid)", file=sys.stderr)
        return 2
    from workbench.agent.tools import NCU_METRICS, ncu_argv
    from workbench.harness.build import build_kernel
    original = build_kernel(str(ROOT / "kernels" / "attn_fwd" / "original.cu")).so_path
    work = Path(tempfile.mkdtemp(prefix="ncu-diag-"))
    profile = ncu_argv(ncu, list(NCU_METRICS), "smoke", "smoke_basic")
    probe = lambda nofork: (lambda: {"kernel.so": probe_so(work, nofork)})   # noqa: E731 (built only when run)
    cases = [("version", [ncu, "--version"], lambda: {}, False, ()),
             ("original", profile, lambda: {"kernel.so": original}, False, ()),
             ("original_walls_off", profile, lambda: {"kernel.so": original}, True, ()),
             ("probe", profile, probe(False), False, ()),
             ("probe_nofork", profile, probe(True), False, ())]
    cases += [(f"relax_{wall}", profile, lambda: {"kernel.so": original}, False, (wall,)) for wall in RELAXABLE]
    results = []
    for name, case_argv, files, off, relax in cases:
        if wanted and name not in wanted:
            continue
        r = run_case(name, case_argv, files(), args.limit, args.sample, off, relax)
        results.append(r)
        left = ", ".join(f"{p['name']}({p['state'][:1]} {p['wchan']})" for p in r["left_at_sample"]) or "nothing"
        print(f"{name}: rc {r.get('returncode')}, {r['wall_s']} s, timed out {r.get('timed_out')}, "
              f"profiled {r.get('profiled')}, at {args.sample:.0f} s: {left}", flush=True)
        Path(args.out).write_text(json.dumps(results, indent=1))
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""What one call of a kernel puts on the GPU and the host, against an empty kernel of the same launch (question q042).

q042 asks: "does the host wrapper do anything per call (allocation, memset, attribute setting) that the timer sees?
how long does the same grid take with an empty kernel body?". For each shape this script
  1. profiles one warm call of the kernel (torch.profiler, CPU and CUDA): every device activity (kernels with their
     grid, block and shared memory; memsets; copies) and every CUDA runtime call the host made;
  2. times the kernel with the harness's own timer (CUDA graph replay, device time), and an empty __global__ function
     built here with nvcc, launched with the first kernel's grid, block and dynamic shared memory, the same way:
     the launch floor that any kernel of that shape pays.
The table goes to stdout, everything to $OUT/launch_floor.json.

    source scripts/gpu_wheels.sh && python3 scripts/launch_floor.py kernels/attn_fwd/ladder/04_pingpong.cu \
        C_s9000_d256_c0 C_s100_d64_c0
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

EMPTY_CU = r"""
#include <cuda_runtime.h>
__global__ void empty_body() {}
extern "C" int launch_empty(int gx, int gy, int gz, int bx, int by, int bz, int smem, void* stream) {
    static int configured = 0;
    if (!configured) {   // once, like the rung's own attribute setting: not per call
        cudaFuncSetAttribute(empty_body, cudaFuncAttributeMaxDynamicSharedMemorySize, 227 * 1024);
        configured = 1;
    }
    empty_body<<<dim3(gx, gy, gz), dim3(bx, by, bz), smem, (cudaStream_t)stream>>>();
    return (int)cudaGetLastError();
}
"""
CALL_RANGE = "launch_floor_call"
# host-side CUDA runtime calls that cost device time or synchronise (what q042 suspects)
SUSPECT_API = ("cudaMalloc", "cudaFree", "cudaMemset", "cudaMemcpy", "cudaFuncSetAttribute", "cudaDeviceSynchronize",
               "cudaStreamSynchronize", "cudaEventSynchronize", "cudaHostAlloc", "cudaMallocHost")


def compile_empty(work: Path) -> Path:
    """EMPTY_CU built with nvcc into work/empty.so."""
    src, so = work / "empty.cu", work / "empty.so"
    src.write_text(EMPTY_CU)
    subprocess.run(["nvcc", "-gencode=arch=compute_90a,code=sm_90a", "-O3", "-shared", "-Xcompiler", "-fPIC",
                    "-o", str(so), str(src)], check=True, timeout=300)
    return so


def build_empty(work: Path) -> ctypes.CDLL:
    lib = ctypes.CDLL(str(compile_empty(work)))
    lib.launch_empty.argtypes = [ctypes.c_int] * 7 + [ctypes.c_void_p]
    lib.launch_empty.restype = ctypes.c_int
    return lib


def profile_call(call) -> tuple[list[dict], list[str]]:
    """One call under torch.profiler: the device activities (from the Chrome trace: grid, block, shared memory) and
    the names of the CUDA runtime calls the host made."""
    import torch
    from torch.profiler import ProfilerActivity, profile, record_function

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        with record_function(CALL_RANGE):   # the host calls inside it are the kernel's, the syncs after are ours
            call()
        torch.cuda.synchronize()
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        prof.export_chrome_trace(f.name)
        trace = json.loads(Path(f.name).read_text())
    device, runtime = [], []
    events = trace.get("traceEvents", [])
    span = next(((ev["ts"], ev["ts"] + ev.get("dur", 0)) for ev in events if ev.get("name") == CALL_RANGE), None)
    for ev in events:
        cat, args = ev.get("cat", ""), ev.get("args", {})
        if cat in ("kernel", "gpu_memset", "gpu_memcpy"):
            device.append(dict(kind=cat, name=ev.get("name", "")[:90], us=float(ev.get("dur", 0.0)),
                               grid=args.get("grid"), block=args.get("block"),
                               smem=args.get("shared memory", 0)))
        elif cat == "cuda_runtime" and (span is None or span[0] <= ev.get("ts", 0) <= span[1]):
            runtime.append(ev.get("name", ""))
    return device, runtime


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("kernel", help="the kernel .cu (built by the harness's builder)")
    ap.add_argument("shapes", nargs="+", help="scenario names of the full suite")
    args = ap.parse_args(argv)
    import torch

    from workbench.harness.build import build_kernel
    from workbench.harness.kernel_lib import CudaKernel
    from workbench.harness.problem import Problem
    from workbench.harness.reference import Inputs
    from workbench.harness.scenarios import load_suite
    from workbench.harness.timing import Timer
    from workbench.harness.verify import GuardedOutputs

    suite = {s.name: s for s in load_suite("full")}
    missing = [n for n in args.shapes if n not in suite]
    if missing:   # before any build
        print(f"launch_floor: not in the full suite: {', '.join(missing)} (names as in the suite's CSV)",
              file=sys.stderr)
        return 2
    if not (ROOT / args.kernel).is_file():
        print(f"launch_floor: no kernel file {args.kernel} (a path under {ROOT})", file=sys.stderr)
        return 2
    built = build_kernel(ROOT / args.kernel)
    if not built.ok:
        print(f"launch_floor: {args.kernel} does not build: {built.summary}", file=sys.stderr)
        return 2
    kernel = CudaKernel(built.so_path)
    timer = Timer("cuda", Problem.load().timing)
    stream = torch.cuda.Stream()
    results = []
    with tempfile.TemporaryDirectory() as work, torch.cuda.stream(stream):
        empty = build_empty(Path(work))
        for name in args.shapes:
            s = suite[name]
            x = Inputs.allocate(s, "cuda")
            x.fill(0)
            out = GuardedOutputs(s, "cuda", 16)
            call = lambda: kernel(x, out.o, out.lse, s)
            for _ in range(3):
                call()
            device, runtime = profile_call(call)
            first = next((d for d in device if d["kind"] == "kernel"), None)
            ours = timer.time(lambda i: call(), n_sets=1)
            row = dict(shape=name, device=device, runtime_calls=sorted(set(runtime)),
                       suspect_calls=[r for r in runtime if r.startswith(SUSPECT_API)], kernel_us=ours.median_us)
            if first and first["grid"] and first["block"]:
                g, b, smem = first["grid"], first["block"], int(first["smem"] or 0)
                # on the stream current at the call, as CudaKernel does (the timer may capture a graph on its own)
                launch = lambda i: empty.launch_empty(*g, *b, smem,
                                                      ctypes.c_void_p(torch.cuda.current_stream().cuda_stream))
                row["empty_us"] = timer.time(launch, n_sets=1).median_us
            results.append(row)
            acts = ", ".join(f"{d['kind']} {d['name'][:40]} {d['us']:.1f} us grid {d['grid']} block {d['block']} "
                             f"smem {d['smem']}" for d in device)
            print(f"{name}: kernel {row['kernel_us']:.1f} us, empty same launch {row.get('empty_us', float('nan')):.2f}"
                  f" us; device activities per call: {acts}; runtime calls {row['runtime_calls']}; "
                  f"suspect {row['suspect_calls'] or 'none'}", flush=True)
    out_dir = Path(os.environ.get("OUT") or ROOT / ".cache")
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "launch_floor.json").write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

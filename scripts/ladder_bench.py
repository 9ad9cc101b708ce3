"""Build, check and time ladder kernels (kernels/attn_fwd/ladder/*.cu) next to FA3, FA2 and cuDNN.

A flat GPU script in the manner of flash-attention's benchmarks/benchmark_flash_attention.py; the kernel
ladder's iteration tool. The project's official figures come from `workbench check`, not from here.

    python3 scripts/ladder_bench.py --suite kernels/attn_fwd/suites/dev26.csv \
        --kernels kernels/attn_fwd/ladder/02_mma.cu "kernels/attn_fwd/ladder/02_mma.cu:D128_MT=1,D128_QREG=1"

A kernel spec is `path.cu[:NAME=VALUE,...]`; the overrides become -D flags (the @knob lines are #ifndef
guarded). Each kernel is checked on fresh random inputs (seeds, plus one set scaled x16) against an fp32
reference on sampled query rows, o and lse poisoned with NaN (and guarded) before each call; then timed by
CUDA-graph replay, L2 flushed (256 MB written) before every sample, median of --reps, every kernel and
anchor of a shape sampled round-robin (bench_timing.py: a clock drift lands on all alike). Prints one line per
shape, then geomean x FA3 / x FA2 per category. JSON details go to $OUT/ladder_bench.json when OUT is set.
Timing: device time: one CUDA-graph replay of the call per sample, L2 flushed before it (host overhead excluded
for every implementation alike; calls that cannot be captured: events after a GPU-side delay).
"""
import argparse, csv, ctypes, json, math, os, re, signal, subprocess, sys, time
from concurrent.futures import ThreadPoolExecutor

import torch
import torch.nn.functional as F
from bench_timing import time_interleaved, time_ms  # noqa: F401  (time_ms: tile_timeline.py's)
from term_grace import exit_if_stuck_after_sigterm
from torch.nn.attention import SDPBackend, sdpa_kernel

NVCC_FLAGS = ["-O3", "-std=c++17", "-gencode=arch=compute_90a,code=sm_90a", "-shared", "-Xcompiler", "-fPIC",
              "-Xptxas", "-v", "-lineinfo"]
REL_L2_TOL, MAX_ABS_TOL, LSE_ABS_TOL = 1e-2, 4e-2, 2e-2   # kernels/attn_fwd/problem.toml [verify]
SAMPLE_ROWS = 96                 # query rows checked per shape when the full reference is too large
FULL_REF_MAX = 4_194_304         # B*Hq*Sq*Sk at or under this: every row is checked
GUARD = 4096                     # poisoned elements before and after o and lse
BUILD_DIR = os.environ.get("LADDER_BUILD", "/tmp/ladder_build")


# ---- scenarios --------------------------------------------------------------------------------------------
def load_suite(path):
    with open(path, newline="") as f:
        rows = [r for r in csv.DictReader(line for line in f if not line.lstrip().startswith("#"))]
    ints = ("batch", "heads_q", "heads_kv", "seqlen_q", "seqlen_k", "head_dim", "causal")
    return [dict(name=r["name"], category=r.get("category") or "user", **{k: int(r[k]) for k in ints}) for r in rows]


def flops(sc):
    """4*B*Hq*Sq*Sk*D; causal: halved when Sq == Sk, else the exact unmasked area (bottom-right)."""
    b, h, sq, sk, d = sc["batch"], sc["heads_q"], sc["seqlen_q"], sc["seqlen_k"], sc["head_dim"]
    if not sc["causal"]:
        return 4.0 * b * h * sq * sk * d
    if sq == sk:
        return 2.0 * b * h * sq * sk * d
    pairs = sum(max(0, min(sk, i + sk - sq + 1)) for i in range(sq))
    return 4.0 * b * h * pairs * d


# ---- building ---------------------------------------------------------------------------------------------
def parse_spec(spec):
    path, _, defs = spec.partition(":")
    overrides = [d for d in defs.split(",") if d]
    label = os.path.splitext(os.path.basename(path))[0] + (f"[{','.join(overrides)}]" if overrides else "")
    return dict(spec=spec, path=path, overrides=overrides, label=label)


def build(k):
    os.makedirs(BUILD_DIR, exist_ok=True)
    so = k["so"] = os.path.join(BUILD_DIR, re.sub(r"[^A-Za-z0-9_.-]", "_", k["label"]) + ".so")
    cmd = ["nvcc", *NVCC_FLAGS, *[f"-D{d}" for d in k["overrides"]], "-o", so, k["path"]]
    t0 = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True)
    k["build_s"] = round(time.time() - t0, 1)
    if r.returncode != 0:
        k["error"] = "build failed: " + r.stderr.strip()[-2000:]
        return k
    # ptxas report: one (entry, registers, spill bytes, stack) per kernel
    k["resources"], entry = [], None
    for line in r.stderr.splitlines():
        m = re.search(r"Compiling entry function '(\S+)'", line)
        if m:
            entry = dict(entry=m.group(1))
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m and entry is not None:
            entry.update(stack=int(m.group(1)), spill_st=int(m.group(2)), spill_ld=int(m.group(3)))
        m = re.search(r"Used (\d+) registers", line)
        if m and entry is not None:
            entry["regs"] = int(m.group(1))
            k["resources"].append(entry)
            entry = None
    lib = ctypes.CDLL(so)
    lib.attn_fwd.argtypes = [ctypes.c_void_p] * 5 + [ctypes.c_int] * 7 + [ctypes.c_float, ctypes.c_void_p]
    lib.attn_fwd.restype = ctypes.c_int
    k["lib"] = lib
    return k


def resource_summary(k):
    out = []
    for e in k.get("resources", []):
        if "combine" in e["entry"]:
            continue
        m = re.search(r"Cfg(ILi\d+E(?:Li\d+E)+)", e["entry"]) or re.search(r"ILi(\d+)E", e["entry"])
        tag = ",".join(re.findall(r"\d+", m.group(1))) if m else e["entry"][-30:]
        out.append(f"<{tag}> {e['regs']} regs, {e.get('spill_st', 0)}/{e.get('spill_ld', 0)} B spill st/ld")
    return out


# ---- calling ----------------------------------------------------------------------------------------------
def make_inputs(sc, seed, scale_in):
    g = torch.Generator(device="cuda").manual_seed(seed)
    b, sq, sk, hq, hk, d = sc["batch"], sc["seqlen_q"], sc["seqlen_k"], sc["heads_q"], sc["heads_kv"], sc["head_dim"]
    mk = lambda s, h: (torch.randn(b, s, h, d, device="cuda", generator=g) * scale_in).to(torch.bfloat16)
    return mk(sq, hq), mk(sk, hk), mk(sk, hk)


def call_kernel(lib, sc, q, k, v, o, lse, scale):
    rc = lib.attn_fwd(q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(), lse.data_ptr(),
                      sc["batch"], sc["heads_q"], sc["heads_kv"], sc["seqlen_q"], sc["seqlen_k"], sc["head_dim"],
                      sc["causal"], ctypes.c_float(scale), ctypes.c_void_p(torch.cuda.current_stream().cuda_stream))
    return rc


def guarded(n, dtype):
    buf = torch.full((n + 2 * GUARD,), float("nan"), device="cuda", dtype=dtype)
    return buf, buf[GUARD:GUARD + n]


def reference(q, k, v, causal, scale, rows, dtype=torch.float64):
    """Attention in `dtype` (fp64: a ground truth no kernel can dispute) on query rows `rows`:
    (o [B, n, Hq, D], lse [B, Hq, n])."""
    b, sq, hq, d = q.shape
    sk, hk = k.shape[1], k.shape[2]
    g = hq // hk
    n = rows.numel()
    qf = q[:, rows].to(dtype).permute(0, 2, 1, 3).reshape(b, hk, g * n, d)   # query head h = kv head * g + i
    kf, vf = k.to(dtype).permute(0, 2, 1, 3), v.to(dtype).permute(0, 2, 1, 3)
    s = torch.matmul(qf, kf.transpose(-1, -2)).mul_(scale)
    if causal:
        limit = rows + (sk - sq)
        mask = torch.arange(sk, device=q.device)[None, :] > limit[:, None]
        s.masked_fill_(mask.repeat(g, 1), float("-inf"))
    lse = torch.logsumexp(s, dim=-1)
    p = torch.exp(s - lse[..., None]).nan_to_num_(0.0)
    del s
    o = torch.matmul(p, vf).reshape(b, hk, g, n, d).reshape(b, hq, n, d).permute(0, 2, 1, 3)
    return o, lse.reshape(b, hq, n)


DIAG_MIN_SK = 8192   # on shapes with this many keys, also record how far an fp32 reference and FA3 land


def diagnose(sc, q, kk, v, rows, scale, o_ref, lse_ref, fa3):
    fin = torch.isfinite(lse_ref)
    o32, l32 = reference(q, kk, v, sc["causal"], scale, rows, torch.float32)
    out = dict(ref32_lse=(l32.double() - lse_ref)[fin].abs().max().item(),
               ref32_rel_l2=((o32.double() - o_ref).norm() / o_ref.norm()).item())
    del o32, l32
    if fa3 is not None:
        o3, l3 = fa3(q, kk, v, softmax_scale=scale, causal=bool(sc["causal"]), return_attn_probs=True)[:2]
        o3, l3 = o3[:, rows].double(), l3[:, :, rows].double()
        out.update(fa3_lse=(l3 - lse_ref)[fin].abs().max().item(),
                   fa3_rel_l2=((o3 - o_ref).norm() / o_ref.norm()).item())
    return out


def check(k, sc, seeds, scaled_seed, fa3=None):
    """Worst errors over the seeds; status 'ok' / 'FAIL: why' / 'unsupported (rc)'."""
    b, sq, hq, d = sc["batch"], sc["seqlen_q"], sc["heads_q"], sc["head_dim"]
    scale = 1.0 / math.sqrt(d)
    worst = dict(rel_l2=0.0, max_abs=0.0, lse_abs=0.0)
    for seed, scale_in in ([(scaled_seed, 16.0)] if scaled_seed is not None else []) + [(s, 1.0) for s in seeds]:
        q, kk, v = make_inputs(sc, seed, scale_in)
        obuf, o = guarded(q.numel(), torch.bfloat16)
        lbuf, lse = guarded(b * hq * sq, torch.float32)
        rc = call_kernel(k["lib"], sc, q, kk, v, o, lse, scale)
        torch.cuda.synchronize()
        if rc != 0:
            return f"unsupported (rc={rc})", worst
        o, lse = o.view(q.shape), lse.view(b, hq, sq)
        if not (obuf[:GUARD].isnan().all() and obuf[-GUARD:].isnan().all()
                and lbuf[:GUARD].isnan().all() and lbuf[-GUARD:].isnan().all()):
            return "FAIL: wrote outside o/lse", worst
        if o.isnan().any() or lse.isnan().any():
            return (f"FAIL: NaN/unwritten in o ({int(o.isnan().sum())}) or lse ({int(lse.isnan().sum())}) "
                    f"seed {seed}"), worst
        if b * hq * sq * sc["seqlen_k"] <= FULL_REF_MAX or sq <= SAMPLE_ROWS:
            rows = torch.arange(sq, device="cuda")
        else:
            gen = torch.Generator().manual_seed(1000 + seed)
            pick = torch.randperm(sq - 2, generator=gen)[:SAMPLE_ROWS - 2] + 1
            rows = torch.cat([torch.tensor([0, sq - 1]), pick]).sort().values.cuda()
        o_ref, lse_ref = reference(q, kk, v, sc["causal"], scale, rows)
        if sc["seqlen_k"] >= DIAG_MIN_SK and "diag" not in worst:
            try:
                worst["diag"] = diagnose(sc, q, kk, v, rows, scale, o_ref, lse_ref, fa3) | dict(x=scale_in)
            except Exception as e:  # noqa: BLE001
                worst["diag"] = dict(error=f"{type(e).__name__}: {str(e)[:100]}")
        o_k, lse_k = o[:, rows].double(), lse[:, :, rows].double()
        den = o_ref.norm().item()
        rel = (o_k - o_ref).norm().item() / den if den > 0 else (o_k.abs().max().item())
        mx = (o_k - o_ref).abs().max().item() / max(o_ref.abs().max().item(), 1e-30)
        fin = torch.isfinite(lse_ref)
        if not torch.equal(fin, torch.isfinite(lse_k)) or (lse_k[~fin] != float("-inf")).any():
            return f"FAIL: lse -inf rows differ (seed {seed})", worst
        la = (lse_k[fin] - lse_ref[fin]).abs().max().item() if fin.any() else 0.0
        worst.update(rel_l2=max(worst["rel_l2"], rel), max_abs=max(worst["max_abs"], mx),
                     lse_abs=max(worst["lse_abs"], la))
        if rel > REL_L2_TOL or mx > MAX_ABS_TOL or la > LSE_ABS_TOL:
            return f"FAIL: rel_l2 {rel:.2e} max_abs {mx:.2e} lse {la:.2e} (seed {seed}, x{scale_in:g})", worst
        del q, kk, v, obuf, lbuf, o_ref, lse_ref
    return "ok", worst


# ---- timing -----------------------------------------------------------------------------------------------
def anchors(names):
    out = {}
    if "fa3" in names:
        try:
            from fa3_fwd_interface import flash_attn_func as fa3

            def _fa3(q, k, v, causal, scale):
                r = fa3(q, k, v, softmax_scale=scale, causal=causal)
                return r[0] if isinstance(r, tuple) else r
            out["fa3"] = _fa3
        except Exception as e:  # noqa: BLE001
            print(f"# FA3 unavailable ({type(e).__name__}: {e}); install the fa3_fwd wheel", flush=True)

    def sdpa(backend):
        def f(q, k, v, causal, scale):
            qt, kt, vt = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
            gqa = q.shape[2] != k.shape[2]
            with sdpa_kernel([backend]):
                if causal and q.shape[1] != k.shape[1]:   # FA's bottom-right alignment, not SDPA's top-left
                    from torch.nn.attention.bias import causal_lower_right
                    mask = causal_lower_right(q.shape[1], k.shape[1])
                    return F.scaled_dot_product_attention(qt, kt, vt, attn_mask=mask, scale=scale, enable_gqa=gqa)
                return F.scaled_dot_product_attention(qt, kt, vt, is_causal=bool(causal), scale=scale, enable_gqa=gqa)
        return f
    if "fa2" in names:
        out["fa2"] = sdpa(SDPBackend.FLASH_ATTENTION)
    if "cudnn" in names:
        out["cudnn"] = sdpa(SDPBackend.CUDNN_ATTENTION)
    return out


def geomean(xs):
    xs = [x for x in xs if x is not None and math.isfinite(x) and x > 0]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--suite", default="kernels/attn_fwd/suites/dev26.csv")
    ap.add_argument("--kernels", nargs="+", default=["kernels/attn_fwd/ladder/02_mma.cu"])
    ap.add_argument("--only", default="", help="run scenarios whose name contains one of these (comma list)")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--cap", type=float, default=0.5, help="seconds of timed launches per (impl, shape) at most")
    ap.add_argument("--seeds", type=int, nargs="*", default=[0, 1])
    ap.add_argument("--no-scaled", action="store_true", help="skip the x16-scaled check")
    ap.add_argument("--anchors", default="fa3,fa2,cudnn")
    ap.add_argument("--no-check", action="store_true")
    ap.add_argument("--check-only", nargs="*", default=[], help="kernel labels (substring) to check but not time")
    ap.add_argument("--no-time", action="store_true", help="check only, time nothing")
    ap.add_argument("--diag", action="store_true", help=f"Sk >= {DIAG_MIN_SK}: also measure an fp32 reference and FA3 "
                    "against the fp64 one (recorded with the last kernel's check)")
    args = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False

    only = [o for o in args.only.split(",") if o]
    scs = [s for s in load_suite(args.suite) if not only or any(o in s["name"] for o in only)]
    ks = [parse_spec(s) for s in args.kernels]
    t0 = time.time()
    with ThreadPoolExecutor(max_workers=min(len(ks), os.cpu_count() or 4)) as pool:
        ks = list(pool.map(build, ks))
    print(f"# built {len(ks)} kernels in {time.time() - t0:.0f} s; GPU {torch.cuda.get_device_name()}, torch "
          f"{torch.__version__}, suite {args.suite} ({len(scs)} shapes)", flush=True)
    for k in ks:
        print(f"# {k['label']}: " + (k.get("error") or "; ".join(resource_summary(k))), flush=True)
    ks = [k for k in ks if "lib" in k]
    anc = anchors([a for a in args.anchors.split(",") if a])
    fa3_raw = None
    if args.diag:
        try:
            from fa3_fwd_interface import flash_attn_func as fa3_raw
        except Exception:  # noqa: BLE001
            pass

    results = []

    def stop(signum, frame):   # `timeout` sends SIGTERM: keep what was measured and print the summary
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, stop)
    exit_if_stuck_after_sigterm()          # a hung kernel blocks the handler: term_grace.py
    try:
        run_shapes(args, scs, ks, anc, fa3_raw, results)
    except KeyboardInterrupt:
        print(f"# interrupted after {len(results)}/{len(scs)} shapes", flush=True)
    summarize(args, ks, anc, results)


def run_shapes(args, scs, ks, anc, fa3_raw, results):
    """Per shape: check every kernel, then time the passing kernels and the anchors together (time_interleaved)."""
    for sc in scs:
        scale = 1.0 / math.sqrt(sc["head_dim"])
        row = dict(sc, flops=flops(sc), impl={})
        fns = {}
        q, kk, v = (None, None, None) if args.no_time else make_inputs(sc, 3, 1.0)
        for k in ks:
            r = {}
            if not args.no_check:
                try:
                    r["status"], r["err"] = check(k, sc, args.seeds, None if args.no_scaled else 7,
                                                  fa3_raw if args.diag and k is ks[-1] else None)
                except torch.cuda.OutOfMemoryError:
                    r["status"] = "skipped (reference OOM)"
                    torch.cuda.empty_cache()
            timed = not args.no_time and not any(c in k["label"] for c in args.check_only)
            if timed and (args.no_check or r["status"] == "ok"):
                o = torch.empty_like(q)
                lse = torch.empty(sc["batch"], sc["heads_q"], sc["seqlen_q"], device="cuda")
                fns[k["label"]] = (lambda lib=k["lib"], o=o, lse=lse:
                                   call_kernel(lib, sc, q, kk, v, o, lse, scale))
            row["impl"][k["label"]] = r
        for name, fn in ({} if args.no_time else anc).items():
            try:   # an SDPA backend may refuse GQA with a lower-right mask: time it on expanded K/V
                fn(q, kk, v, sc["causal"], scale)
                fns[name] = lambda fn=fn: fn(q, kk, v, sc["causal"], scale)
            except Exception as e:  # noqa: BLE001
                try:
                    g = sc["heads_q"] // sc["heads_kv"]
                    ke, ve = kk.repeat_interleave(g, dim=2), v.repeat_interleave(g, dim=2)
                    fn(q, ke, ve, sc["causal"], scale)
                    fns[name] = lambda fn=fn, ke=ke, ve=ve: fn(q, ke, ve, sc["causal"], scale)
                    row["impl"][name] = dict(note="K/V heads expanded")
                except Exception:  # noqa: BLE001
                    row["impl"][name] = dict(error=f"{type(e).__name__}: {str(e)[:120]}")
        if fns:
            for name, ms in time_interleaved(fns, args.reps, args.cap).items():
                if name in anc:
                    row["impl"].setdefault(name, {})["ms"] = ms
                else:
                    row["impl"][name]["ms"] = ms
        del q, kk, v, fns
        torch.cuda.empty_cache()
        results.append(row)
        parts = []
        for name, r in row["impl"].items():
            if "ms" in r:
                r["tflops"] = row["flops"] / r["ms"] / 1e9
                fa3 = row["impl"].get("fa3", {}).get("ms")
                parts.append(f"{name} {r['ms'] * 1e3:7.1f}us {r['tflops']:4.0f}TF"
                             + (f" x{fa3 / r['ms']:.2f}" if fa3 and name not in anc else ""))
            if "diag" in r.get("err", {}):
                parts.append("diag " + " ".join(f"{a}={b:.1e}" if isinstance(b, float) else f"{a}={b}"
                                                for a, b in r["err"]["diag"].items()))
            if r.get("status", "ok") != "ok" or "error" in r:
                parts.append(f"{name} {r.get('status') or r.get('error')}")
        print(f"{sc['name']:34s} " + " | ".join(parts), flush=True)



def summarize(args, ks, anc, results):
    """Geomean of anchor_ms / kernel_ms per category; JSON to $OUT."""
    cats = sorted({r["category"] for r in results}) + ["all"]
    print("\n# geomean speedup vs anchor (anchor time / kernel time); failed or unsupported shapes count as missing")
    print(f"{'kernel':44s} {'vs':5s} " + " ".join(f"{c:>7s}" for c in cats) + "   passed")
    summary = {}
    for k in [k["label"] for k in ks] + [a for a in anc if a != "fa3"]:
        passed = sum(1 for r in results
                     if r["impl"].get(k, {}).get("status", "ok") == "ok" and "error" not in r["impl"].get(k, {}))
        for ref in [a for a in ("fa3", "fa2") if a in anc and a != k]:
            vals = []
            for c in cats:
                rr = [r for r in results if c == "all" or r["category"] == c]
                vals.append(geomean([r["impl"][ref].get("ms", float("nan")) / r["impl"][k]["ms"] for r in rr
                                     if "ms" in r["impl"].get(k, {}) and "ms" in r["impl"].get(ref, {})]))
            summary[f"{k} vs {ref}"] = dict(zip(cats, vals))
            print(f"{k:44s} {ref:5s} " + " ".join(f"{v:7.3f}" for v in vals) + f"   {passed}/{len(results)}")
    out = os.environ.get("OUT")
    if out:
        os.makedirs(out, exist_ok=True)
        meta = dict(gpu=torch.cuda.get_device_name(), torch=torch.__version__, suite=args.suite, argv=sys.argv,
                    kernels=[{kk: v for kk, v in k.items() if kk != "lib"} for k in ks])
        with open(os.path.join(out, "ladder_bench.json"), "w") as f:
            json.dump(dict(meta=meta, summary=summary, results=results), f, indent=1)


if __name__ == "__main__":
    main()

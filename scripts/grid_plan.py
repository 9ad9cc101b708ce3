"""Which grid and walk rung 04's launch rules give each shape, without a GPU: the real dispatch_cfg (which Cfg a call
runs), Cfg and plan_grid (and pack_gqa, choose_splits, has_keyless_tiles, three_consumers_pay) cut out of the .cu
with its knob defaults and compiled with g++: nothing of the rung's choice is copied here by hand.

    python3 scripts/grid_plan.py --suite full --only _c1 [-D PAIR_TAIL=0 ...]
        [--json docs/data/h100_ladder_04_pingpong_full_dt4_v24_2026-12-06.json]

Prints per shape the walk (pair_tail, counter, static_walk, persistent_pairs, pairs_per_cta, persistent,
cta_per_tile), the CTAs launched and the LPT chunk, and with --json that evaluation's x FA3 beside it: which shapes a
rule change reaches, before any device time. tests/test_grid_plan.py holds the measured classes to it. 132 SMs (H100
and H200), which also picks d64's tile (128 or 192 query rows, three_consumers_pay).
"""
from __future__ import annotations

import argparse
import csv
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from workbench.harness.paths import SUITES_DIR  # noqa: E402
from workbench.harness.scenarios import resolve_suite_path  # noqa: E402

KERNEL = ROOT / "kernels" / "attn_fwd" / "ladder" / "04_pingpong.cu"

PRELUDE = """#include <algorithm>
#include <cstdio>
using std::min;
#define __device__
#define __forceinline__ inline
struct __nv_bfloat16 { unsigned short bits; };
"""
# The rung's Cfg, its aliases and dispatch_cfg are cut out of the .cu as they are; sm_count() is the 132 SMs of the
# H100 and H200 (three_consumers_pay asks).
SMS = """
inline int sm_count() { return 132; }
"""
# stdin per case: "D batch heads_q heads_kv seqlen_q seqlen_k causal"; the Params set up as launch<C> does before
# its plan (splits from choose_splits for 132 SMs); stdout per case: "pairs pair_units lpt_units lpt_walk tail ctas
# tiles".
DRIVER = """
template <class C>
void plan_case(int batch, int hq, int hkv, int sq, int sk, int causal) {
    const int sms = 132;
    Params p{};
    const Call a{nullptr, nullptr, nullptr, nullptr, nullptr, batch, hq, hkv, sq, sk, causal, 1.f};
    p.batch = batch; p.heads_q = hq; p.heads_kv = hkv; p.seqlen_q = sq; p.seqlen_k = sk; p.causal = causal;
    p.group = hq / hkv;
    p.pack = PACK_GQA && pack_gqa(sq, p.group, C::BM) ? p.group : 1;
    const int heads_grid = p.pack > 1 ? hkv : hq;
    p.n_mblocks = (int)(((long long)sq * p.pack + C::BM - 1) / C::BM);
    int kend = sk;
    if (causal) kend = min(kend, (int)((p.n_mblocks * (long long)C::BM - 1) / p.pack) + 1 + sk - sq);
    const int max_blocks = kend > 0 ? (kend + C::BN - 1) / C::BN : 0;
    const long long ctas = (long long)p.n_mblocks * batch * heads_grid;
    int splits = choose_splits(ctas, max_blocks, sms);
    p.blocks_per_split = splits > 1 ? (max_blocks + splits - 1) / splits : (max_blocks > 0 ? max_blocks : 1);
    if (splits > 1) splits = (max_blocks + p.blocks_per_split - 1) / p.blocks_per_split;
    p.n_splits = splits;
    const long long launched = plan_grid<C>(p, a, sms, splits, ctas * splits, heads_grid);
    int tail = -1;
#if PAIR_TAIL
    tail = p.tail_heads;
#endif
    printf("%d %d %d %d %d %lld %lld %d %d\\n", p.pairs, p.pair_units, p.lpt_units, p.lpt_walk, tail, launched,
           ctas * splits, C::BM, C::BN);
}
struct PlanVisit {          // grid_plan's visitor: plan the case with the configuration the rung picks
    int b, hq, hkv, sq, sk, c;
    template <class C> int run() const { plan_case<C>(b, hq, hkv, sq, sk, c); return 0; }
};
int main() {
    int d, b, hq, hkv, sq, sk, c;
    while (scanf("%d %d %d %d %d %d %d", &d, &b, &hq, &hkv, &sq, &sk, &c) == 7) {
        const Call a{nullptr, nullptr, nullptr, nullptr, nullptr, b, hq, hkv, sq, sk, c, 1.f};
        dispatch_cfg(a, d, PlanVisit{b, hq, hkv, sq, sk, c});   // the rung's own dispatch
    }
    return 0;
}
"""


def braced(src: str, start: str, tail: str = "") -> str:
    """The text from `start` through its matching closing brace (plus `tail`, e.g. a struct's ';')."""
    at = src.index(start)
    depth, i = 0, src.index("{", at)
    while True:
        depth += {"{": 1, "}": -1}.get(src[i], 0)
        if depth == 0:
            return src[at:i + 1] + tail
        i += 1


def knob_defaults(src: str) -> str:
    """The knobs section's #ifndef/#define/#endif lines (the rung's defaults, overridable with -D)."""
    section = src[src.index("// ---- knobs"):]
    section = section[:section.index("// ====")]
    return "\n".join(line for line in section.splitlines() if line.startswith(("#ifndef", "#define", "#endif")))


def fast_div_block(src: str) -> str:
    """The FAST_DIVMOD block before Params (FastDiv, GridDivs and the GRID_DIV/GRID_MOD macros tile_of uses)."""
    start = src.index("#if FAST_DIVMOD\n// n / d for")
    return src[start:src.index("#endif\n", start) + len("#endif\n")]


def aliases(src: str) -> str:
    """The rung's `using CfgNN = Cfg<...>` lines (and the #if around a knob's), the names dispatch_cfg picks from."""
    start = src.index("using Cfg64 = ")
    return src[start:src.index("\n", src.index("using Cfg128s = "))]


def rules_source() -> str:
    src = KERNEL.read_text()
    parts = [PRELUDE, knob_defaults(src), fast_div_block(src), braced(src, "struct Params {", ";"),
             braced(src, "bool pack_gqa("), braced(src, "int choose_splits("),
             braced(src, "inline bool has_keyless_tiles("), braced(src, "inline bool pads_less("),
             braced(src, "struct Call {", ";"), SMS, braced(src, "inline bool three_consumers_pay("),
             braced(src, "template <int D_, int BN_, int NWG_ = 2>\nstruct Cfg {", ";"), aliases(src),
             "template <class C>\n" + braced(src, "long long plan_grid("),
             "template <class Visit>\n" + braced(src, "int dispatch_cfg("), DRIVER]
    return "\n".join(parts)


class PlanError(RuntimeError):
    """The rules did not build or run (the message says which)."""


def plans(work: Path, cases: list[tuple], defines: tuple = ()) -> list[tuple]:
    """Each case (head_dim, batch, heads_q, heads_kv, seqlen_q, seqlen_k, causal) planned by the rules built in
    `work` with `defines` (-DNAME=VALUE): one plan row each."""
    (work / "plan.cpp").write_text(rules_source())
    build = subprocess.run(["g++", "-std=c++17", "-O1", "-Wall", *defines, "-o", "plan", "plan.cpp"], cwd=work,
                           capture_output=True, text=True, timeout=300)
    if build.returncode != 0:
        raise PlanError(f"the launch rules do not build with g++: {build.stderr[-3000:]}")
    run = subprocess.run([str(work / "plan")], input="".join(" ".join(map(str, c)) + "\n" for c in cases),
                         capture_output=True, text=True, timeout=60)
    if run.returncode != 0:
        raise PlanError(f"the plan driver failed: {run.stderr[-2000:]}")
    return [tuple(map(int, line.split())) for line in run.stdout.strip().splitlines()]


def walk(row: tuple) -> str:
    """The walk a plan row names: pairs, pair_units, lpt_units, lpt_walk, tail_heads, CTAs, tiles (then the tile's
    query rows and keys, `tile(row)`)."""
    pairs, pair_units, _, lpt_walk, tail, ctas, tiles = row[:7]
    if lpt_walk == 2:
        return "pair_tail" if tail > 0 else "counter"
    if lpt_walk == 1:
        return "static_walk"
    if pair_units > 0:
        return "persistent_pairs"
    if pairs:
        return "pairs_per_cta"
    return "persistent" if ctas < tiles else "cta_per_tile"




def tile(row: tuple) -> str:
    """The tile of the configuration dispatch_cfg picked, query rows x keys per block (e.g. 128x80)."""
    return f"{row[7]}x{row[8]}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--suite", default="full", help="a suite name of the attention problem (full, edge) or a CSV")
    ap.add_argument("--only", default="", help="comma-separated substrings of scenario names")
    ap.add_argument("-D", dest="defines", action="append", default=[], help="a knob, NAME=VALUE (repeatable)")
    ap.add_argument("--json", help="an evaluation's JSON (workbench check --json): its x FA3 per shape beside")
    args = ap.parse_args(argv)
    if shutil.which("g++") is None:
        print("grid_plan: needs g++ on PATH (the rules are compiled for the host)", file=sys.stderr)
        return 2
    suite = resolve_suite_path(args.suite)   # a name, as `workbench check --suite` takes it, or a CSV path
    if not suite.is_file():
        print(f"grid_plan: no suite {args.suite!r} (no file {suite}); name one of "
              f"{', '.join(sorted(p.stem for p in SUITES_DIR.glob('*.csv')))} or pass a CSV path", file=sys.stderr)
        return 2
    bad = [d for d in args.defines if "=" not in d or not d.split("=")[0].isidentifier()]
    if bad:
        print(f"grid_plan: -D takes NAME=VALUE, got {bad[0]!r}", file=sys.stderr)
        return 2
    ratios = {}
    if args.json:
        try:
            doc = json.loads(Path(args.json).read_text())
            ratios = {r["scenario"]["name"]: r["reference_stats"]["fa3"]["median_us"] / r["stats"]["median_us"]
                      for r in doc["rows"] if r.get("stats") and r.get("reference_stats", {}).get("fa3")}
        except (OSError, ValueError, KeyError, TypeError) as e:
            print(f"grid_plan: {args.json} is not an evaluation JSON with fa3 rows ({e})", file=sys.stderr)
            return 2
    with suite.open(newline="") as f:
        rows = [r for r in csv.DictReader(line for line in f if not line.lstrip().startswith("#"))]
    keys = [k.strip() for k in args.only.split(",") if k.strip()]
    rows = [r for r in rows if not keys or any(k in r["name"] for k in keys)]
    if not rows:
        print(f"grid_plan: no shape of {suite} matches --only {args.only!r}", file=sys.stderr)
        return 2
    cases = [tuple(int(r[k]) for k in ("head_dim", "batch", "heads_q", "heads_kv", "seqlen_q", "seqlen_k", "causal"))
             for r in rows]
    with tempfile.TemporaryDirectory() as work:
        try:
            planned = plans(Path(work), cases, tuple(f"-D{d}" for d in args.defines))
        except PlanError as e:
            print(f"grid_plan: {e}", file=sys.stderr)
            return 1
    for r, p in zip(rows, planned):
        extra = f"  x FA3 {ratios[r['name']]:.3f}" if r["name"] in ratios else ""
        print(f"{r['name']:34s} {walk(p):16s} tile {tile(p):7s} CTAs {p[5]:6d}  LPT chunk {p[2]:4d}{extra}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

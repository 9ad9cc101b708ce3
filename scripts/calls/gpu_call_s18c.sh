#!/usr/bin/env bash
# Session 18, call 3: run 55. The v22 candidate (DYN_CHUNKS=1 with DYN_MAX_GROUP=1: run 53's chunks only without GQA;
# DYN_LONG=1 up to d128: the >= 128-block causal grids through the counter) between two copies of v21 on full
# (v21, v22, v21 again: run 54's reverse pass moved identical code up to 10 % by its place in the order). Prediction:
# x1.003-1.004 over both copies (A_d64_c1_s2k-8k +5-9 %, A_d128_c1_s8k +5 %, the d128 16k-32k B shapes +2-5 %).
# Rule, written before the run: >= 1.002 over each copy with 182/182 passed -> v22 through the campaign on full
# (answer its served question before the next edit), then edge through `workbench check` in the time left.
# Run as: CALL=scripts/calls/gpu_call_s18c.sh bash scripts/gpu_run.sh call   (carry .whl/fa3)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/ab55"; T0=$(date +%s)
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
K=kernels/attn_fwd/ladder/04_pingpong.cu
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv | tee "$OUT/env.txt"
echo "#### run 55: v21, v22, v21 on full $(date -u +%T)"
OUT="$OUT/ab55" timeout 230 python3 scripts/ladder_bench.py --anchors fa3 --seeds 0 --reps 5 --cap 0.08 \
  --suite kernels/attn_fwd/suites/full.csv --kernels "$K:DYN_CHUNKS=0,DYN_LONG=0" $K \
  "$K:DYN_CHUNKS=0,DYN_LONG=0,DYN_MAX_GROUP=64" > "$OUT/ab55/log.txt" 2>&1
echo "rc $?"; grep -E "FAIL|rror|unsupported" "$OUT/ab55/log.txt" | head -5
sed -n '/^# geomean/,$p' "$OUT/ab55/log.txt"
python3 scripts/ab_ratio.py "$OUT/ab55/ladder_bench.json" --worst 5 | tee "$OUT/ab55/ratios.txt"
verdict=$(python3 - "$OUT/ab55/ladder_bench.json" <<'PY'
import json, math, sys
rows = json.load(open(sys.argv[1]))["results"]
labels = ["04_pingpong[DYN_CHUNKS=0,DYN_LONG=0]", "04_pingpong[DYN_CHUNKS=0,DYN_LONG=0,DYN_MAX_GROUP=64]"]
ok = lambda c: c and c.get("status", "ok") in ("ok", "pass", "passed") and (c.get("ms") or 0) > 0
cand = [r for r in rows if ok(r["impl"].get("04_pingpong"))]
rs = []
for lab in labels:
    xs = [math.log(r["impl"][lab]["ms"] / r["impl"]["04_pingpong"]["ms"]) for r in cand if ok(r["impl"].get(lab))]
    rs.append(math.exp(sum(xs) / len(xs)))
go = len(cand) == 182 and min(rs) >= 1.002
print(f"v22 over the copies {rs[0]:.4f} {rs[1]:.4f}, passed {len(cand)}/182: {'go' if go else 'stop'}")
PY
)
echo "$verdict"
case "$verdict" in *": go") ;; *) echo "#### rule not met: no campaign check"; exit 0;; esac
echo "#### campaign: v22 $(date -u +%T)"
timeout 330 bash scripts/gpu_campaign_check.sh $K "v22 (runs 53-55): DYN_CHUNKS (deep causal grids without GQA: LPT \
inside 32 MB chunks of heads from the atomic counter; ncu A_d128_c1_s8k DRAM 44 -> 13 % of peak, 1.55 -> 1.63 GHz) and \
DYN_LONG (the >= 128-block causal grids up to d128 walked by one CTA per SM through the counter); $verdict (H100)" \
  2>&1 | grep -vE "^\[" | tail -24
left=$(( 560 - ($(date +%s) - T0) ))
echo "#### edge: v22 through workbench check, ${left}s left $(date -u +%T)"
[ "$left" -gt 40 ] && { timeout $left python3 -m workbench.cli check $K --suite edge > "$OUT/edge_check.log" 2>&1
  echo "rc $?"; grep -E "^(geomean_vs|all_correct|scenarios|flags)|FAIL|failed" "$OUT/edge_check.log" | head -12; }
echo "#### done $(date -u +%T)"

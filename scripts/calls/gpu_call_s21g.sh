#!/usr/bin/env bash
# Session 21, call 7 (the last ~170 s of device time). Run 68: DYN_PAIRS narrowed to >= 16 query blocks after run 67
# (A_d128_c1_s2k/s4k +0.8/+1.5 %, the 4-8-block pairs -6..-11 %): v22, the knob, v22 again on A_d128_c1_s512-s4k.
# Prediction: s2k/s4k >= +0.5 % over each copy, s512/s1k unchanged (the knob does not reach them).
# Run as: CALL=scripts/calls/gpu_call_s21g.sh bash scripts/gpu_run.sh call   (carry .whl/fa3)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/ab68"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
K=kernels/attn_fwd/ladder/04_pingpong.cu
echo "#### run 68 $(date -u +%T)"
OUT="$OUT/ab68" timeout -k 5 100 python3 scripts/ladder_bench.py --anchors fa3 --seeds 0 --reps 5 --cap 0.1 \
  --suite kernels/attn_fwd/suites/full.csv --only A_d128_c1_s --kernels $K "$K:DYN_PAIRS=1" "$K:DYN_PAIRS=0" \
  > "$OUT/ab68/log.txt" 2>&1
echo "rc $?"; grep -E "FAIL|rror" "$OUT/ab68/log.txt" | head -3; sed -n '/^# geomean/,$p' "$OUT/ab68/log.txt" | tail -4
python3 - "$OUT/ab68/ladder_bench.json" <<'PY'
import json, sys
for x in json.load(open(sys.argv[1]))["results"]:
    im = x["impl"]; b = im["04_pingpong"]["ms"]
    print(x["name"], " ".join(f"{k.split('[')[-1]} x{b / v['ms']:.3f}" for k, v in im.items()
                              if "[" in k and "ms" in v))
PY
echo "#### done $(date -u +%T)"

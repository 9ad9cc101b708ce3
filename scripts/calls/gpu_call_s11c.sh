#!/usr/bin/env bash
# Session 11, third call. First q019's measurement (served by v15's evaluation: "did the change alter how many blocks
# run per SM rather than how fast each block runs? what achieved occupancy do the previous best and the new kernel
# reach on the scenario that jumped?"): ncu's launch and occupancy sections for v14 (carried as
# .experiments/v14_04_pingpong.cu) and v15 on A_d64_c0_s4k (the d64 tile that changed, +8 %) and for v15 on the
# flagged B_h16x8_d256_c1_s32k (803 TFLOP/s). Then run 36: D64_WG3_DEEP=1 (non-causal d64 grids of two or more
# waves of 192-row tiles take three consumers) interleaved on the 46 d64 shapes, and through the campaign if it gains.
# Run as: CALL=scripts/calls/gpu_call_s11c.sh bash scripts/gpu_run.sh call   (carry .whl/fa3, .gpucache, .experiments)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/q019" "$OUT/d64"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
K=kernels/attn_fwd/ladder/04_pingpong.cu
echo "#### q019 occupancy $(date -u +%T)"
for job in v14:A_d64_c0_s4k v15:A_d64_c0_s4k v15:B_h16x8_d256_c1_s32k; do
  v=${job%%:*}; sc=${job#*:}; src=$K; [ $v = v14 ] && src=.experiments/v14_04_pingpong.cu
  so=$(python3 -c "import sys; from workbench.harness.build import build_kernel as b; print(b(sys.argv[1]).so_path)" \
    "$src")
  r="$OUT/q019/${v}_$sc"
  timeout 90 ncu --clock-control none --kernel-name-base demangled --kernel-name "regex:attn_wgmma" --launch-skip 1 \
    --launch-count 1 --section LaunchStats --section Occupancy --section SpeedOfLight --csv --page details \
    python3 -m workbench.agent.launch_one --impl ours --so "$so" --suite full --scenario "$sc" > "$r.csv" 2> "$r.err"
  echo "== $v $sc rc $?"
  names='Registers Per Thread|Block Size|Grid Size|Threads|Waves Per SM|Block Limit Registers|Block Limit Shared Mem'
  names+='|Theoretical Occupancy|Achieved Occupancy|Achieved Active Warps Per SM|Duration|Compute \(SM\) Throughput'
  grep -E "\"($names)\"" "$r.csv" | awk -F'","' '{print "   " $(NF-2) " = " $NF}' | tr -d '"'
done
tar -czf "$OUT/q019.tgz" -C "$OUT" q019 && rm -rf "$OUT/q019"
echo "#### d64 D64_WG3_DEEP $(date -u +%T)"
OUT=$OUT/d64 timeout 120 python3 scripts/ladder_bench.py --anchors fa3 --seeds 0 --reps 5 --cap 0.08 \
  --suite kernels/attn_fwd/suites/full.csv --only _d64 --kernels $K $K:D64_WG3_DEEP=1 > "$OUT/d64/log.txt" 2>&1
echo "rc $?"; grep -E "FAIL|interrupted|rror" "$OUT/d64/log.txt" | head -5; sed -n '/^# geomean/,$p' "$OUT/d64/log.txt"
python3 scripts/ab_ratio.py "$OUT/d64/ladder_bench.json" --worst 4 | tee "$OUT/d64/ab.txt"
gain=$(sed -n 's/.* all \([0-9.]*\) .*/\1/p' "$OUT/d64/ab.txt" | head -1)
echo "#### campaign (gain $gain) $(date -u +%T)"
if python3 -c "import sys; sys.exit(0 if float(sys.argv[1] or 0) >= 1.003 else 1)" "$gain" \
   && ! grep -q FAIL "$OUT/d64/log.txt"; then
  E=.experiments/04_pingpong.cu; cp $K $E; sed -i 's/^#define D64_WG3_DEEP 0 /#define D64_WG3_DEEP 1 /' $E
  grep -E "^#define D64_WG3_DEEP " $E
  timeout 170 bash scripts/gpu_campaign_check.sh $E "v16 from run 36: D64_WG3_DEEP 1, non-causal d64 grids of >= 2 \
waves of 192-row tiles take three consumers (the wave rule was fitted to 96-key tiles; x$gain on the 46 d64 shapes \
interleaved). q019 answered first: ncu launch/occupancy of v14 and v15 on A_d64_c0_s4k and v15 on the flagged \
B_h16x8_d256_c1_s32k (this call's q019.tgz)" > "$OUT/campaign_check.log" 2>&1
  echo "rc $?"; grep -E "^(geomean|all correct|suspicion|stop)" "$OUT/campaign_check.log" | head
  grep -A3 "=== QUESTION" "$OUT/campaign_check.log"
fi
echo "#### done $(date -u +%T)"

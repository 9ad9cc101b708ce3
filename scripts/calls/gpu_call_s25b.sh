#!/usr/bin/env bash
# Session 25, a measurement (either card, ~3 min): q011's direct check (served on v26's campaign evaluation, run 88:
# "do query heads that share a KV head share its loads?"). Run 88 answered from timings (per head the GQA shapes run
# at or above the group-1 ones, but at causal 1k FA3 gains 6-9 % more from the group); the last DRAM reading on a GQA
# shape is v22's (run 65: DRAM throughput x duration 1.52x FA3's), before PAIR_TAIL's head-major order. ncu beside
# FA3 on v26: B_h32x8_d128_c1_s1k (0.98x FA3) and B_h32x8_d128_c1_s2k. Unique bytes (Q, K, V read, O written):
# s1k 16*(32+8+8+32)*1024*128*2 B = 335.5 MB; s2k 8*...*2048 = 335.5 MB.
# ncucmp now reads dram__bytes_read.sum and dram__bytes_write.sum (bytes: run 89's throughput percentages did not
# convert to plausible bytes against a 3.35 TB/s peak). Prediction: v26's DRAM bytes 1.0-1.3x the unique bytes,
# within 15 % of FA3's; if v26 reads >= 1.5x FA3's, the group's tiles still run too far apart in time.
# Run as: CALL=scripts/calls/gpu_call_s25b.sh bash scripts/gpu_run.sh call   (carry .whl/fa3)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm --format=csv | tee "$OUT/env.txt"
echo "#### ncu: v26 and FA3 on two GQA shapes $(date -u +%T)"
WB_CACHE_RESTORED=1 NCU_SCENARIOS="B_h32x8_d128_c1_s1k B_h32x8_d128_c1_s2k" timeout -k 10 240 \
  bash scripts/gpu_run.sh ncucmp 2>&1 \
  | grep -E "^== |Duration|SM Frequency|DRAM Through|dram__bytes|Elapsed Cycles|pipe_tensor_cycles" \
  | sed 's/  */ /g' | head -30
echo "#### done $(date -u +%T)"

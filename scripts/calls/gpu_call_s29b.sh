#!/usr/bin/env bash
# Session 29 (~6 min, either card), run 107: three single-knob A/Bs on 72 shapes of full (A's 36, B_h64x8_d64,
# B_h32x8_d128, B_h16x8_d256), v29 and a copy interleaved, 7 reps, each checked (seeds 0, no x16) before it is timed:
# - FAST_DIVMOD=0: run 103 (on v28, INF_GUARD=0) put FAST_DIVMOD at +3.4 % on d64 causal and short d64 but -3..-10 %
#   on long non-causal d64 (A_d64_c0_s16k, B_h64x8_d64_c0_s32k). On v28's source ptxas orders the 3-consumer d64
#   steady loop (A_d64_c0_s16k's kernel) differently with and without it (141 opcode positions); on v29's source it
#   is the same order either way (`sass_loop.py --all`), and run 104's INF_GUARD=1 took long d64 +4-7 % by itself.
# - D256_BN=64: q037 (served after v28's evaluation) asks how time moves with the key tile alone; d256's 80 keys are
#   where shared memory stops two K/V stages (FA3's tile too).
# - DESC_ADD64=1 (session 28, CPU): each k-step's descriptor as a 64-bit add; ptxas keeps it uniform (the 32-bit
#   form copied each low word to a vector register and back by R2UR): steady loops d256 488 -> 437 (walk 0; FA3's
#   455), d128 474 -> 464, d128 176-key 598 -> 584, d64 three-consumer 425 -> 417; the build 153760 -> 152200.
# Prediction: FAST_DIVMOD=0 on v29: long non-causal d64 within +-1 % (the same loop), short and causal d64 -3-8 %,
# d256 +-0.5 %: FAST_DIVMOD stays. D256_BN=64 -2-5 % on d256 (more blocks, the same bytes a block per key).
# DESC_ADD64=1 +0.5-2 % on d256, +0-0.5 % on d128 and d64 (runs 99/105: a few loop instructions moved d128 ~0).
# The rule's winners (ab_ratio --verdict 0.5,3: one-knob variants only) go to .gpucache/run107_winners.txt for
# scripts/calls/gpu_call_s29c.sh (v30) on the same warm machine.
# Run as: CALL=scripts/calls/gpu_call_s29b.sh bash scripts/gpu_run.sh call   (carry .whl/fa3)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/ab107"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
K=kernels/attn_fwd/ladder/04_pingpong.cu
nvidia-smi --query-gpu=name,clocks.sm --format=csv | tee "$OUT/env.txt"
OUT="$OUT/ab107" timeout -k 10 480 python3 scripts/ladder_bench.py --suite kernels/attn_fwd/suites/full.csv \
  --only A_,B_h64x8_d64,B_h32x8_d128,B_h16x8_d256 --kernels $K "$K:FAST_DIVMOD=0" "$K:D256_BN=64" \
  "$K:DESC_ADD64=1" "$K:MASK_PEEL=1" \
  --anchors fa3 --reps 7 --seeds 0 --no-scaled > "$OUT/ab107/log.txt" 2>&1
echo "rc $?"; tail -7 "$OUT/ab107/log.txt"
python3 scripts/ab_ratio.py "$OUT/ab107/ladder_bench.json" --copies "04_pingpong[MASK_PEEL=1]" --moved 2 \
  --verdict 0.5,3 --winners "$OUT/ab107/winners.txt" | tee "$OUT/ab107/ratios.txt"
mkdir -p .gpucache; cp "$OUT/ab107/winners.txt" .gpucache/run107_winners.txt 2>/dev/null   # for gpu_call_s29c.sh
echo "winners: $(tr '\n' ' ' < "$OUT/ab107/winners.txt" 2>/dev/null)"
echo "#### done $(date -u +%T)"

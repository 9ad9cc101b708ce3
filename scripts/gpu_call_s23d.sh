#!/usr/bin/env bash
# Session 23, call 4 (an H100: kind nvidia-h100-x1; the hang is an H100 one; ~5 min). Run 79: the H100 hang's suspect,
# found on the CPU: the plain mbarrier wait branches with `bra.uni` (every active lane leaves the loop together, a
# promise ptxas builds on), while try_wait's result is each thread's own; the watchdog's waits (runs 66 and 72: never a
# hang) branch in C++, and CUTLASS's with plain `bra`. `WAIT_UNI=0` builds the plain wait with `bra` (33k SASS lines
# differ, 0 spills). The reproducer of runs 66/72 (the old launch rule EMPTY_SOLO=0 and, since v24 reaches that grid,
# PAIR_TAIL=0, in two libraries, round-robin): as before (control), then with WAIT_UNI=0 in both, twice. Prediction:
# the control HANGs; with WAIT_UNI=0 both pass (a hang there refutes the suspect). Then WAIT_UNI=0's cost: v25, the
# knob, a v25 copy on full, interleaved: within +-0.3 % (the waits are off the tensor cores' path). Rule: WAIT_UNI 0
# becomes the default if the reproducer passes twice and full is within -0.3 % over both copies; EMPTY_SOLO then gets
# its own A/B for deletion.
# Run as: CALL=scripts/gpu_call_s23d.sh bash scripts/gpu_run.sh call   (carry .whl/fa3)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT/ab79"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
K=kernels/attn_fwd/ladder/04_pingpong.cu; E=kernels/attn_fwd/suites/edge.csv
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw --format=csv | tee "$OUT/env.txt"
probe() {   # name, then kernel specs
  local name=$1; shift
  echo "#### hang_probe --together: $name $(date -u +%T)"
  OUT="$OUT" timeout -k 10 120 python3 scripts/hang_probe.py --suite $E --only E_d256,q4097 --together \
    --timeout 10 --kernels "$@" > "$OUT/together_$name.log" 2>&1
  echo "rc $?"; cp "$OUT/hang_probe.json" "$OUT/together_$name.json" 2>/dev/null
  grep -E "HANG|ok " "$OUT/together_$name.log" | cut -c1-170 | head -6
}
OLD="EMPTY_SOLO=0,PAIR_TAIL=0"
probe control "$K:$OLD" "$K:$OLD,DYN_CHUNKS=0,DYN_LONG=0"
probe bra_1 "$K:$OLD,WAIT_UNI=0" "$K:$OLD,DYN_CHUNKS=0,DYN_LONG=0,WAIT_UNI=0"
probe bra_2 "$K:$OLD,WAIT_UNI=0" "$K:$OLD,DYN_CHUNKS=0,DYN_LONG=0,WAIT_UNI=0"
rm -f "$OUT/hang_probe.json"
echo "#### WAIT_UNI=0 on full $(date -u +%T)"
OUT="$OUT/ab79" timeout -k 10 330 python3 scripts/ladder_bench.py --anchors fa3 --seeds 0 --reps 5 --cap 0.08 \
  --suite kernels/attn_fwd/suites/full.csv --kernels $K "$K:WAIT_UNI=0" "$K:WAIT_UNI=1" > "$OUT/ab79/log.txt" 2>&1
echo "rc $?"; grep -E "FAIL|rror" "$OUT/ab79/log.txt" | head -3; sed -n '/^# geomean/,$p' "$OUT/ab79/log.txt" | tail -4
python3 scripts/ab_ratio.py "$OUT/ab79/ladder_bench.json" --worst 4 --moved 2 | tee "$OUT/ab79/ratios.txt"
echo "#### done $(date -u +%T)"

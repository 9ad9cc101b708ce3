#!/usr/bin/env bash
# Session 21, call 5 (either card; the last ~500 s of device time). Run 65's timeline: on A_d128_c1_s2k/s4k (the
# counter's walk, DYN_CHUNKS) about 32 of 132 SMs end 34-58 us before the rest, their busy time one long tile
# short, while the static walks (B_h32x8, C_s3000) end within 8-32 us. A list-scheduling model of the counter's walk
# (chunks of 16/32 heads, next tile fetched one ahead) gives a tail of <= 10 us. The raw records say which tiles
# the early SMs ran and which the late ones ran last: default against DYN_CHUNKS=0 (the static LPT walk).
# Then the hang's pair with the watchdog in the second library only (run 66 had it in the first: that one finished,
# the other hung), to say whether either library hangs or only the static-walk build.
# Run as: CALL=scripts/calls/gpu_call_s21e.sh bash scripts/gpu_run.sh call   (carry .whl/fa3)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source scripts/gpu_wheels.sh || exit 2; export PYTHONUNBUFFERED=1
K=kernels/attn_fwd/ladder/04_pingpong.cu; E=kernels/attn_fwd/suites/edge.csv
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw --format=csv | tee "$OUT/env.txt"
echo "#### timeline with records: default and DYN_CHUNKS=0 $(date -u +%T)"
OUT="$OUT" timeout -k 10 200 python3 scripts/tile_timeline.py --kernels $K "$K:DYN_CHUNKS=0" \
  --only A_d128_c1_s2k A_d128_c1_s4k --anchors fa3 --save-records > "$OUT/tile_timeline.log" 2>&1
echo "rc $?"; grep -E "^== |SM time|tile us|steady block " "$OUT/tile_timeline.log" | cut -c1-150 | head -24
( cd "$OUT" && ls timeline_*.bin >/dev/null 2>&1 && tar -czf timeline_records.tgz timeline_*.bin \
  && rm -f timeline_*.bin )
echo "#### hang_probe --together: watchdog in the second library only $(date -u +%T)"
OUT="$OUT" timeout -k 10 150 python3 scripts/hang_probe.py --suite $E --only E_d256,q4097 --together \
  --timeout 10 --kernels "$K:EMPTY_SOLO=0" "$K:EMPTY_SOLO=0,DYN_CHUNKS=0,DYN_LONG=0,WATCHDOG=1" \
  > "$OUT/together_old_watchdog_second.log" 2>&1
echo "rc $?"; grep -E "HANG|ok |watchdog|mark|stuck" "$OUT/together_old_watchdog_second.log" | cut -c1-160 | head -20
echo "#### done $(date -u +%T)"

#!/usr/bin/env bash
# One device call on the H200: install the carried wheels, then run the named stages; logs and JSON under $OUT.
#   bash scripts/gpu_run.sh probe wrong full ladder bench
# Stages
#   call    CALL=scripts/gpu_call_NAME.sh: one session's call script, its timing cache saved like every stage's
#   probe   environment report, the original kernel on smoke and dev26 with the anchors
#   wrong   pytest -m gpu -n 8: every kernels/attn_fwd/wrong/ kernel rejected with its reason (WRONG_TIMEOUT 420 s)
#   full    pytest -m gpu: the original passes `full` (fills the timing cache), anchors correct, twice within 2 %
#   ladder  every ladder rung on `full` with FA3, cuDNN and FA2 (original cached)
#   bench   harness wall time: dev26 and full for the best ladder rung with FA3 as anchor, original cached
#   foreign        pytest -m gpu: the two kernels that borrow cuBLAS / torch rejected with foreign_kernel, the
#                  profiler window
#   foreignladder  pytest -m gpu: every ladder rung passes `full` with the foreign-kernel check on every scenario
#   foreigncost    harness wall time of `full` (02_mma, FA3, original cached) with WORKBENCH_FOREIGN_CHECK=off vs all
#   devtime pytest -m gpu tests/test_gpu_device_time.py: harness median vs torch.profiler (device time proof)
#   diag    scripts/devtime_diag.py: the original in every timing role and path, the in-graph event pair's tare
#   quick   pytest -m gpu -n 8: every gpu test but the `full`-suite ones, the twice spread and the proof (xdist)
#   self02  02_mma on full with FA3, cuDNN and FA2, its own baseline (the original's slow timings not needed for x FA3)
#   self    the same for SELF_KERNEL
#   costs   COST_KERNEL (02_mma) on full, caches warm, three ways: as is, WORKBENCH_FOREIGN_CHECK=off,
#           WORKBENCH_SANDBOX=off
#   coldrun issue 24: COLDRUN_KERNEL (04_pingpong) on full with fa3,cudnn,fa2 on empty caches of its own: cold, warm,
#           SIGKILLed at half and resumed (scripts/coldrun.py; table in $OUT/coldrun_table.txt, JSON per run)
#   coldfast issue 24 after the cuDNN lanes: the coldrun legs in COLDRUN_BUDGET (540 s, the cold leg cut at 230 s),
#           then scripts/coldrun_profile.py on their logs (where the time went); everything in $OUT/coldrun/
#   cudnnprobe scripts/cudnn_plan_probe.py: cuDNN's first call per shape, serial vs PROBE_LANES (8) lanes, and one
#           shape's device time timed in the main thread and in a lane; $OUT/cudnn_plan_probe.json
#   coldproof after issue 24's cold-run cuts: cudnnprobe, then the device-time proof with
#           tests/test_gpu_timing_upload.py and tests/test_gpu_first_replay.py (the long baseline call timed as its
#           own first call); $OUT/coldproof.log
#   proofab the device-time proof (devtime) with the fix, then with WORKBENCH_TIMING_RULES=fixed (the rep rules before
#           issue 24; PROOFAB_WAYS="fix fixed" by default), tests/test_gpu_timing_upload.py with the first, then the
#           coldrun acceptance in what is left of PROOFAB_TOTAL (570 s from the script's start); tables under
#           $OUT/proof_<way>/, the legs' logs and JSON in $OUT/coldrun.tgz
#   notebook  NOTEBOOK (default notebooks/03_kernel_ladder.ipynb) executed live with nbclient (carry .whl with .whl/nb
#             from scripts/prep_notebook_wheels.sh); the executed copy lands in $OUT
# SMI_LOG=1 logs clocks/power/clock-event reasons every 250 ms to $OUT/smi.csv while the stages run.
#   walls   issue 25's walls on the GPU (root): socket filter and PID namespace around a CUDA worker, the original
#           behind every wall, ncu_profile of a hostile constructor; then the CPU wall tests on this kernel (< 3 min)
#   timeline  scripts/tile_timeline.py: TL_KERNELS (04_pingpong) plain and -DTIMELINE=1 on TL_SHAPES with FA3: the
#           instrumentation's overhead, SM busy/gaps/head/tail and per-tile phases; $OUT/tile_timeline.{log,json}
#           (TL_ARGS adds options, e.g. --save-records); first tests/test_gpu_tile_timeline.py (the tool on a stub)
#   ncu     Nsight Compute (clocks not locked) on NCU_KERNEL (default 04_pingpong) for NCU_SCENARIOS
#   ncusrc  per-instruction warp-stall sampling (ncu SourceCounters) as SASS CSV, summarised by scripts/ncu_stalls.py
#           and scripts/ncu_regions.py (executed instructions per loop and iteration)
#   ncucmp  the same ncu counters (pipes, stall reasons per issue, issue slots) for NCU_KERNEL and FA3 per scenario
#   gemmharness  scripts/gemm_stage.py, all through the harness: kernels/gemm_bf16 original and rungs `workbench
#           check`ed on full with cuBLAS and Triton, every wrong/ kernel against expected.csv, an offline-agent
#           campaign on the GEMM (GEMM_ARGS passes options, e.g. --suite dev; GEMM_TIMEOUT 480 s)
#   ray1    issue 28 on one H200: RAY_KERNEL (02_mma) on RAY_SUITE (dev26) with FA3 through the local pool and a Ray
#           pool of one GPU, RAY_ROUNDS (2) each: both geomeans, each path's wall, Ray's start and overhead, what held
#           on the node (scripts/ray_pool_check.py one; carry .whl/ray and .whl/fa3: prep_ray_wheels.sh,
#           prep_fa3_xz.sh).
#           Every ray stage puts its pools on a `ray start --head` of its own, reached by address (scripts/ray_head.py);
#           $OUT/<stage>.txt is the table, .json the figures, .log everything, _head.log the head's output
#   ray2    2 GPUs: a fresh cache; CANDIDATES (10) variants on a Ray pool of 1 GPU and of 2: throughput, geomeans per
#           kernel, the cache merged once per node, no privileged candidate code, borrowed_gemm rejected on each GPU
#   ray2kill  2 GPUs (or 1): one Ray worker SIGKILLed mid-evaluation: judged again once, no result lost
#   cachestates  tests/test_gpu_cache_states.py (scripts/cache_states.py): 04_pingpong on the C_s100 shapes after the
#           two 32k B_h16x8_d256 shapes with a whole timing cache, timings only, the long shapes' rows missing, whole
#           again: each state's medians, clocks and call_us, and the C_s100 median shift (<= 1 us); $OUT/cache_states/
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 WORKBENCH_CACHE=${WORKBENCH_CACHE:-/tmp/wbcache} WORKBENCH_GPU_OUT="$OUT"
source scripts/gpu_wheels.sh || exit 2
# timing cache (original kernel + anchors) carried between calls: .gpucache/wbcache.tgz <-> $OUT/wbcache.tgz
mkdir -p "$WORKBENCH_CACHE"
# $OUT takes files of at most 16 MiB: a larger cache travels as 15 MiB parts (wbcache.tgz.partNN). A call carries
# 64 MiB: the working tree (~16 MiB), the FA3 wheel (27 MiB) and this cache, so it travels whole up to
# WB_CACHE_MAX_MIB (20); past that with the timings and those of the original's output rows (tensors/) that cost
# most to recompute per byte, up to the same budget (scripts/cache_trim.py); the rest are recomputed by one call per
# scenario (a cache without its rows made the campaign's C_s100 shapes read ~3 us slower, 2026-12-02, until the
# worker made that call after the candidate's timing)
if [ -z "${WB_CACHE_RESTORED:-}" ]; then
  if ls .gpucache/wbcache.tgz.part* >/dev/null 2>&1; then
    cat .gpucache/wbcache.tgz.part* | tar -xz -C "$WORKBENCH_CACHE"
  elif [ -f .gpucache/wbcache.tgz ]; then tar -xzf .gpucache/wbcache.tgz -C "$WORKBENCH_CACHE"; fi
fi
save_cache() {
  local whole=/tmp/wbcache_whole.tgz skip=/tmp/wbcache_skip.txt size budget=$(( ${WB_CACHE_MAX_MIB:-20} << 20 ))
  rm -f "$OUT"/wbcache.tgz "$OUT"/wbcache.tgz.part*
  tar -czf "$whole" -C "$WORKBENCH_CACHE" --exclude=build . 2>/dev/null || return 0
  size=$(stat -c %s "$whole")
  if [ "$size" -gt "$budget" ]; then
    python3 scripts/cache_trim.py "$WORKBENCH_CACHE" $(( budget - (1 << 20) )) > "$skip" || echo ./tensors > "$skip"
    tar -czf "$whole" -C "$WORKBENCH_CACHE" --exclude=build --exclude-from="$skip" . 2>/dev/null || return 0
    echo "# timing cache $((size >> 20)) MiB: saved with $(( $(stat -c %s "$whole") >> 20 )) MiB," \
      "$(grep -c . "$skip") tensors left out" >&2
    size=$(stat -c %s "$whole")
    if [ "$size" -gt "$budget" ]; then     # still too large: the timings alone
      tar -czf "$whole" -C "$WORKBENCH_CACHE" --exclude=build --exclude=tensors . 2>/dev/null || return 0
      size=$(stat -c %s "$whole"); echo "# timing cache: saved without its tensors" >&2
    fi
  fi
  if [ "$size" -le $((15 << 20)) ]; then mv "$whole" "$OUT/wbcache.tgz"
  else split -b 15m -d "$whole" "$OUT/wbcache.tgz.part"; rm -f "$whole"; fi
}
# SMI_LOG=1: the SM clock, power, temperature and clock-event reasons every 250 ms into $OUT/smi.csv (clocks are
# not locked on these machines: this says what state the GPU was in while a figure was taken)
smi_pid=""
if [ -n "${SMI_LOG:-}" ]; then
  q=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,utilization.gpu,clocks_event_reasons.active
  nvidia-smi --query-gpu=$q --format=csv -i 0 >/dev/null 2>&1 || q=${q/clocks_event_reasons/clocks_throttle_reasons}
  nvidia-smi --query-gpu=$q --format=csv -lms 250 -i 0 > "$OUT/smi.csv" 2>&1 & smi_pid=$!
fi
finish() { [ -n "$smi_pid" ] && kill "$smi_pid" 2>/dev/null; save_cache; }
trap finish EXIT
wb() { python3 -m workbench.cli "$@"; }
summary() { echo "== $1"; grep -E "^(geomean_vs|all_correct|scenarios|suite|flags|stop)" "$2" | sed 's/^/   /'; }
for stage in "$@"; do
  echo "#### stage $stage $(date -u +%FT%TZ)"
  case $stage in
    call)    # CALL (a scripts/gpu_call_*.sh) inside this file's cache and wheel handling
      bash "${CALL:?CALL=scripts/gpu_call_NAME.sh}" ;;
    probe)
      nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv \
        | tee "$OUT/env.txt"
      python3 -c "import torch,sys; print('python', sys.version.split()[0], 'torch', torch.__version__, \
        'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version())" | tee -a "$OUT/env.txt"
      nvcc --version | tail -1 | tee -a "$OUT/env.txt"
      wb check kernels/attn_fwd/original.cu --suite smoke --anchors fa3,cudnn,fa2 --traces '' 2>&1 \
        | tee "$OUT/probe_smoke.log"
      /usr/bin/time -f "wall %e s" python3 -m workbench.cli check kernels/attn_fwd/original.cu --suite dev26 \
        --anchors fa3,cudnn,fa2 --json "$OUT/original_dev26.json" --traces '' 2>&1 | tee "$OUT/original_dev26.log"
      summary "original dev26" "$OUT/original_dev26.log" ;;
    wrong)   # -rA: one PASSED/FAILED line per kernel in the summary (xdist hides -s output)
      timeout "${WRONG_TIMEOUT:-420}" python3 -m pytest -m gpu tests/test_gpu.py -k wrong -n "${WRONG_WORKERS:-8}" \
        -rA -q -p no:cacheprovider -W ignore 2>&1 | tee "$OUT/pytest_wrong.log" \
        | grep -E "^(PASSED|FAILED|ERROR) |passed|failed" \
        | sed 's/tests\/test_gpu.py::test_wrong_kernel_is_rejected_with_its_reason//'
      # one JSON per kernel: 21 files, more than a call brings back one by one
      ( cd "$OUT" && ls wrong_*.json >/dev/null 2>&1 && tar -czf wrong_json.tgz wrong_*.json && rm -f wrong_*.json ) ;;
    full)
      python3 -m pytest -m gpu tests/test_gpu.py -k "original_passes_full" -q -s -p no:cacheprovider 2>&1 \
        | tee "$OUT/pytest_full.log" | grep -vE "^\[" | tail -30 ;;
    devtime)
      python3 -m pytest -m gpu tests/test_gpu_device_time.py -q -s -p no:cacheprovider 2>&1 \
        | tee "$OUT/pytest_devtime.log" | grep -vE "^\[" | tail -40 ;;
    cachestates)   # the builds and caches stay on the device; the tables and JSON come back in one tgz
      python3 -m pytest -m gpu tests/test_gpu_cache_states.py -q -s -p no:cacheprovider 2>&1 \
        | tee "$OUT/pytest_cache_states.log" | grep -vE "^\[" | tail -45
      ( cd "$OUT" && rm -rf cache_states/caches && tar -czf cache_states.tgz cache_states && rm -rf cache_states ) ;;
    twice)
      python3 -m pytest -m gpu tests/test_gpu.py -k "twice" -q -s -p no:cacheprovider 2>&1 \
        | tee "$OUT/pytest_twice.log" | grep -vE "^\[" | tail -30 ;;
    ladder)
      for k in kernels/attn_fwd/ladder/*.cu; do
        n=$(basename "$k" .cu)
        /usr/bin/time -f "wall %e s" python3 -m workbench.cli check "$k" --suite full --anchors fa3,cudnn,fa2 \
          --json "$OUT/ladder_${n}_full.json" --traces '' > "$OUT/ladder_${n}_full.log" 2>&1
        summary "$n full" "$OUT/ladder_${n}_full.log"; grep -E "^wall|FAIL" "$OUT/ladder_${n}_full.log" | head -5
      done ;;
    bench)
      best=${BENCH_KERNEL:-kernels/attn_fwd/ladder/02_mma.cu}
      for suite in ${BENCH_SUITES:-full dev26}; do
        /usr/bin/time -f "wall %e s" python3 -m workbench.cli check "$best" --suite $suite --anchors fa3 \
          --traces '' > "$OUT/bench_${suite}.log" 2>&1
        echo "== bench $suite ($best, anchors fa3, original cached): $(grep -E '^wall' "$OUT/bench_${suite}.log")"
        grep -E "^(geomean_vs|all_correct)" "$OUT/bench_${suite}.log"
      done ;;
    rung02)   # 02_mma on full with every anchor; a cold cache also times the original as baseline here
      /usr/bin/time -f "wall %e s" python3 -m workbench.cli check kernels/attn_fwd/ladder/02_mma.cu --suite full \
        --anchors fa3,cudnn,fa2 --json "$OUT/ladder_02_mma_full.json" --traces '' > "$OUT/ladder_02_mma_full.log" 2>&1
      summary "02_mma full" "$OUT/ladder_02_mma_full.log"
      grep -E "^wall|FAIL" "$OUT/ladder_02_mma_full.log" | head -8 ;;
    rung01)
      /usr/bin/time -f "wall %e s" python3 -m workbench.cli check kernels/attn_fwd/ladder/01_tiled.cu --suite full \
        --anchors fa3,cudnn,fa2 --json "$OUT/ladder_01_tiled_full.json" --traces '' \
        > "$OUT/ladder_01_tiled_full.log" 2>&1
      summary "01_tiled full" "$OUT/ladder_01_tiled_full.log"
      grep -E "^wall|FAIL" "$OUT/ladder_01_tiled_full.log" | head -8 ;;
    foreign)
      python3 -m pytest -m gpu tests/test_gpu.py -k "borrowed or profiler_window" -q -s -p no:cacheprovider 2>&1 \
        | tee "$OUT/pytest_foreign.log" | grep -E "^WRONG|^BORROWED|^seen:|passed|failed" ;;
    foreignladder)
      python3 -m pytest -m gpu tests/test_gpu.py -k "ladder_kernel_passes_full" -q -s -p no:cacheprovider 2>&1 \
        | tee "$OUT/pytest_foreign_ladder.log" | grep -vE "^\[" | tail -30 ;;
    foreigncost)
      python3 scripts/foreign_check_cost.py --kernel "${BENCH_KERNEL:-kernels/attn_fwd/ladder/02_mma.cu}" --suite full \
        --anchors fa3 --rounds "${COST_ROUNDS:-2}" 2>&1 | tee "$OUT/foreign_cost.log" ;;
    self02|self)   # self: SELF_KERNEL (default 02_mma) on full with every anchor, its own baseline
      k=kernels/attn_fwd/ladder/02_mma.cu; [ "$stage" = self ] && k=${SELF_KERNEL:-$k}; n=$(basename "$k" .cu)
      WORKBENCH_FOREIGN_CHECK=all /usr/bin/time -f "wall %e s" python3 -m workbench.cli check $k --suite full \
        --anchors fa3,cudnn,fa2 --baseline $k --json "$OUT/ladder_${n}_full.json" --traces '' \
        > "$OUT/ladder_${n}_full.log" 2>&1
      summary "$n full" "$OUT/ladder_${n}_full.log"
      grep -E "^wall|FAIL|^timing|foreign-kernel check" "$OUT/ladder_${n}_full.log" | head -8 ;;
    costs)
      k=${COST_KERNEL:-kernels/attn_fwd/ladder/02_mma.cu}
      for way in "as-is WORKBENCH_FOREIGN_CHECK=all" "foreign-off WORKBENCH_FOREIGN_CHECK=off" \
                 "sandbox-off WORKBENCH_SANDBOX=off WORKBENCH_FOREIGN_CHECK=all"; do
        set -- $way; name=$1; shift
        env "$@" python3 -m workbench.cli check $k --suite full --anchors fa3,cudnn,fa2 --baseline $k \
          --json "$OUT/cost_$name.json" --traces '' > "$OUT/cost_$name.log" 2>&1
        python3 -c "import json,sys; r=json.load(open(sys.argv[1])); \
          print(f'{sys.argv[2]:<12} wall {r[\"wall_s\"]:7.1f} s  x FA3 {r[\"geomeans\"][\"overall\"].get(\"fa3\")}' \
                f'  sandbox {r.get(\"versions\",{}).get(\"sandbox\")}')" "$OUT/cost_$name.json" "$name"
        grep -E "foreign-kernel check" "$OUT/cost_$name.log" | head -2
      done ;;
    coldrun)   # its own empty caches (not $WORKBENCH_CACHE); each run has a time limit inside COLDRUN_BUDGET (560 s)
      python3 scripts/coldrun.py --kernel "${COLDRUN_KERNEL:-kernels/attn_fwd/ladder/04_pingpong.cu}" --out "$OUT" \
        --budget-s "${COLDRUN_BUDGET:-560}" 2>&1 | tee "$OUT/coldrun.log" | grep -vE "^\[" ;;
    coldfast)  # the cold leg's limit stays <= 240 s: a run that needs more fails the target
      mkdir -p "$OUT/coldrun"
      python3 scripts/coldrun.py --kernel "${COLDRUN_KERNEL:-kernels/attn_fwd/ladder/04_pingpong.cu}" \
        --out "$OUT/coldrun" --budget-s "${COLDRUN_BUDGET:-540}" --warm-limit-s 60 \
        --keep-cache "$WORKBENCH_CACHE" 2>&1 \
        | tee "$OUT/coldrun/coldrun.log" | grep -vE "^\[" | tail -40
      python3 scripts/coldrun_profile.py "$OUT/coldrun" 2>&1 | tee "$OUT/coldrun/profile.txt"
      tar -czf "$OUT/coldrun.tgz" -C "$OUT" coldrun && rm -rf "$OUT/coldrun" ;;
    cudnnprobe)
      timeout "${PROBE_TIMEOUT:-180}" python3 scripts/cudnn_plan_probe.py --lanes "${PROBE_LANES:-8}" \
        --json "$OUT/cudnn_plan_probe.json" 2>&1 | tee "$OUT/cudnn_plan_probe.log" | tail -25 ;;
    coldproof)
      timeout "${PROBE_TIMEOUT:-180}" python3 scripts/cudnn_plan_probe.py --lanes "${PROBE_LANES:-8}" \
        --json "$OUT/cudnn_plan_probe.json" 2>&1 | tee "$OUT/cudnn_plan_probe.log" | tail -25
      timeout "${PROOF_TIMEOUT:-300}" python3 -m pytest -m gpu tests/test_gpu_device_time.py \
        tests/test_gpu_timing_upload.py tests/test_gpu_first_replay.py -q -s -p no:cacheprovider \
        > "$OUT/coldproof.log" 2>&1
      grep -E "passed|failed|^FAILED|^E  |^spin of|^\| (C_s100|D_cross|A_d128)" "$OUT/coldproof.log" \
        | cut -c1-200 | tail -40 ;;
    proofab)   # each proof in its own $OUT folder (the test names its table by the date only)
      t0=$SECONDS
      for way in ${PROOFAB_WAYS:-fix fixed}; do
        mkdir -p "$OUT/proof_$way"; extra=""; rules=""
        [ "$way" = fix ] && extra=tests/test_gpu_timing_upload.py
        [ "$way" = fixed ] && rules=fixed
        WORKBENCH_TIMING_RULES=$rules OUT="$OUT/proof_$way" timeout "${PROOF_TIMEOUT:-170}" python3 -m pytest -m gpu \
          tests/test_gpu_device_time.py $extra -q -s -p no:cacheprovider > "$OUT/proof_$way/pytest.log" 2>&1
        echo "== proof $way (WORKBENCH_TIMING_RULES=${rules:-cost-sized}), $((SECONDS - t0)) s in:" \
          "$(tail -1 "$OUT/proof_$way/pytest.log")"
        grep -hE "^\| C_s100|^\| D_cross|^- C_s100.*02_mma|^spin of|^E  " "$OUT/proof_$way/pytest.log" \
          | grep -E "02_mma|spin|^E" | cut -c1-170
      done
      left=$(( ${PROOFAB_TOTAL:-570} - SECONDS - 15 ))   # SECONDS: since this script began (wheels included)
      echo "== coldrun in the ${left} s left"
      timeout "$(( left + 10 ))" python3 scripts/coldrun.py \
        --kernel "${COLDRUN_KERNEL:-kernels/attn_fwd/ladder/04_pingpong.cu}" --out "$OUT/coldrun" --budget-s "$left" \
        --warm-limit-s 60 --keep-cache "$WORKBENCH_CACHE" 2>&1 | grep -vE "^\[" | tail -40
      tar -czf "$OUT/coldrun.tgz" -C "$OUT" coldrun && rm -rf "$OUT/coldrun" ;;
    notebook)
      nb=${NOTEBOOK:-notebooks/03_kernel_ladder.ipynb}
      timeout "${NB_TIMEOUT:-540}" python3 scripts/run_notebook.py "$nb" \
        "$OUT/$(basename "$nb" .ipynb)_executed.ipynb" 2>&1 \
        | tee "$OUT/notebook.log" | tail -40 ;;
    diag)
      timeout "${DIAG_TIMEOUT:-200}" python3 scripts/devtime_diag.py 2>&1 | tee "$OUT/devtime_diag.log" | tail -30 ;;
    quick)
      timeout "${QUICK_TIMEOUT:-300}" python3 -m pytest -m gpu -n "${QUICK_WORKERS:-8}" -p no:cacheprovider -rfE -q \
        tests/test_gpu.py tests/test_gpu_tools.py tests/test_security.py tests/test_gpu_result_line.py \
        tests/test_wgmma_gemm_bench.py -k "${QUICK_K:-not passes_full and not twice}" > "$OUT/pytest_quick.log" 2>&1
      grep -E "passed|failed|^FAILED|^ERROR" "$OUT/pytest_quick.log" | tail -25 ;;
    walls)   # -rA: one PASSED/FAILED/SKIPPED line per test; "held:" is what the sandbox says held
      timeout "${WALLS_TIMEOUT:-240}" python3 -m pytest -m gpu tests/test_security_gpu.py \
        -q -s -rA -p no:cacheprovider -W ignore > "$OUT/pytest_walls_gpu.log" 2>&1
      grep -E "^(PASSED|FAILED|ERROR|SKIPPED)|^held:|probe uid|passed|failed" "$OUT/pytest_walls_gpu.log" | cut -c1-300
      timeout "${WALLS_CPU_TIMEOUT:-150}" python3 -m pytest -n "${WALLS_WORKERS:-8}" tests/test_security_walls.py \
        tests/test_security_outside_worker.py -q -rfE -p no:cacheprovider > "$OUT/pytest_walls_cpu.log" 2>&1
      grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/pytest_walls_cpu.log" | tail -12 ;;
    timeline)
      timeout 150 python3 -m pytest -m gpu tests/test_gpu_tile_timeline.py -q -p no:cacheprovider 2>&1 \
        | tee "$OUT/pytest_tile_timeline.log" | tail -3   # the tool itself on a stub kernel of known spins
      TL_DEFAULT_SHAPES="A_d128_c1_s1k A_d128_c0_s1k A_d128_c1_s4k A_d128_c0_s4k B_h28x4_d128_c1_s8k C_s3000_d128_c1"
      OUT="$OUT" timeout "${TL_TIMEOUT:-420}" python3 scripts/tile_timeline.py \
        --kernels ${TL_KERNELS:-kernels/attn_fwd/ladder/04_pingpong.cu} --only ${TL_SHAPES:-$TL_DEFAULT_SHAPES} \
        --anchors fa3 ${TL_ARGS:-} 2>&1 | tee "$OUT/tile_timeline.log" | tail -200
      ( cd "$OUT" && ls timeline_*.bin >/dev/null 2>&1 && tar -czf timeline_records.tgz timeline_*.bin \
        && rm -f timeline_*.bin ) ;;
    ncu)
      k=${NCU_KERNEL:-kernels/attn_fwd/ladder/04_pingpong.cu}
      so=$(python3 -c "import sys; from workbench.harness.build import build_kernel as b; \
        r=b(sys.argv[1]); print(r.so_path)" "$k")
      cuobjdump --dump-sass "$so" > "$OUT/sass_$(basename "$k" .cu).txt" 2>&1
      printf 'SASS %s: ' "$(basename "$k")"   # the harness's own build (sm_90a), every compiled configuration
      for op in HGMMA HMMA UTMALDG USETMAXREG LDL STL; do
        printf '%s %s  ' $op "$(grep -c "\b$op\b" "$OUT/sass_$(basename "$k" .cu).txt")"; done; echo
      for sc in ${NCU_SCENARIOS:-C_s1000_d64_c1}; do
        timeout 120 ncu --clock-control none --section SpeedOfLight --section ComputeWorkloadAnalysis \
          --section WarpStateStats --section Occupancy --section LaunchStats --kernel-name regex:attn \
          --launch-skip 1 --launch-count 1 python3 -m workbench.agent.launch_one --so "$so" --suite full \
          --scenario "$sc" > "$OUT/ncu_$(basename "$k" .cu)_$sc.txt" 2>&1
        echo "== ncu $(basename "$k") $sc"
        grep -E "Duration|Throughput|Pipe|Stall|Issue|Occupancy|Registers|Grid Size|Block Size|Shared Memory" \
          "$OUT/ncu_$(basename "$k" .cu)_$sc.txt" | head -40
      done ;;
    ncucmp)  # the same counters for NCU_KERNEL and FA3 on each of NCU_SCENARIOS, side by side
      k=${NCU_KERNEL:-kernels/attn_fwd/ladder/04_pingpong.cu}
      so=$(python3 -c "import sys; from workbench.harness.build import build_kernel as b; \
        r=b(sys.argv[1]); print(r.so_path)" "$k")
      mets='regex:^sm__pipe_.*_cycles_active\.avg\.pct_of_peak_sustained_active$'
      mets+=',regex:^smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio$,sm__cycles_elapsed.avg.per_second'
      mets+=',launch__registers_per_thread,smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum'
      mets+=',dram__bytes_read.sum,dram__bytes_write.sum'   # bytes, not a percentage of a peak (q011, run 94)
      # the counters' lines worth reading in ncu's report
      shown='Duration|SM Frequency|DRAM Throughput|Elapsed Cycles|Compute \(SM\) Throughput|pipe_tensor|pipe_fma_'
      shown+='|pipe_alu_|pipe_xu|issue_active'
      shown+='|stalled_(barrier|long_scoreboard|short_scoreboard|wait|math_pipe_throttle|mio_throttle|dispatch_stall'
      shown+='|no_instruction|selected|not_selected|sleeping|membar|branch_resolving|lg_throttle|tex_throttle|misc'
      shown+='|drain|imc_miss)_per|registers_per|inst_executed.sum|Warp Cycles Per Issued|dram__bytes'
      for sc in ${NCU_SCENARIOS:-A_d128_c0_s4k}; do
        for impl in ours fa3; do
          f="$OUT/ncucmp_${sc}_$impl.txt"
          timeout 150 ncu --clock-control none --kernel-name-base demangled \
            --kernel-name "regex:attn_wgmma|FlashAttnFwd" --launch-skip 1 --launch-count 1 \
            --section SpeedOfLight --section WarpStateStats --section SchedulerStats \
            --metrics "$mets,sass__inst_executed_per_opcode" --print-metric-instances ${NCU_INSTANCES:-details} \
            python3 -m workbench.agent.launch_one --impl $impl --so "$so" --suite full --scenario "$sc" > "$f" 2>&1
          echo "== ncucmp $sc $impl (rc $?)"
          grep -E "$shown" "$f" | grep -v per_opcode | sed 's/  */ /g' | head -45
          grep "sass__inst_executed_per_opcode" "$f" | sed 's/  */ /g' | cut -c1-1500
        done
      done
      tar -czf "$OUT/ncucmp.tgz" -C "$OUT" $(cd "$OUT" && ls ncucmp_*.txt) && rm -f "$OUT"/ncucmp_*.txt ;;
    ncusrc)  # per-instruction stall sampling (SourceCounters) for NCU_KERNEL / FA3 on NCU_SCENARIOS: SASS-level CSV
      k=${NCU_KERNEL:-kernels/attn_fwd/ladder/04_pingpong.cu}
      so=$(python3 -c "import sys; from workbench.harness.build import build_kernel as b; \
        r=b(sys.argv[1]); print(r.so_path)" "$k")
      for job in ${NCU_JOBS:-ours:A_d128_c1_s4k fa3:A_d128_c1_s4k}; do
        impl=${job%%:*}; sc=${job#*:}; r="$OUT/src_${sc}_$impl"
        timeout ${NCU_TIMEOUT:-150} ncu --clock-control none --kernel-name-base demangled \
          --kernel-name "regex:attn_wgmma|FlashAttnFwd" --launch-skip 1 --launch-count 1 --import-source no \
          --section SourceCounters --section WarpStateStats --section SpeedOfLight -f -o "$r" \
          python3 -m workbench.agent.launch_one --impl $impl --so "$so" --suite full --scenario "$sc" > "$r.log" 2>&1
        echo "== ncusrc $sc $impl (rc $?)"; tail -2 "$r.log"
        ncu -i "$r.ncu-rep" --page source --csv --print-source sass > "$r.sass.csv" 2> "$r.err" || true
        ncu -i "$r.ncu-rep" --page details --csv > "$r.details.csv" 2>> "$r.err" || true
        wc -l "$r.sass.csv" "$r.details.csv"; head -c 600 "$r.err"
        python3 scripts/ncu_stalls.py "$r.sass.csv" 2>&1 | head -40
        python3 scripts/ncu_regions.py "$r.sass.csv" --top 10 2>&1 | cut -c1-220 | head -20   # executed per loop
      done
      # one archive (a call brings back 8 files): the CSVs and logs, and the reports while it stays under 15 MB
      ( cd "$OUT" && tar -czf ncusrc.tgz src_* && [ "$(stat -c %s ncusrc.tgz)" -lt 15000000 ] \
        || tar -czf ncusrc.tgz $(ls src_* | grep -v ncu-rep) ) && rm -f "$OUT"/src_*
      ls -la "$OUT" ;;
    gemmharness|gemm)   # kernels/gemm_bf16 through the harness (the standalone gemm_gpu_check.py is retired)
      timeout "${GEMM_TIMEOUT:-480}" python3 scripts/gemm_stage.py --out "$OUT" ${GEMM_ARGS:-} 2>&1 \
        | tee "$OUT/gemm_stage.log" | grep -vE "^(\[ *[0-9]+/|[a-z0-9_]+\.cu: built|timing cache|anchor )" | tail -90
      ( cd "$OUT" && ls gemm_*_*.json >/dev/null 2>&1 && tar -czf gemm_results.tgz gemm_*_*.json gemm_campaigns \
        && rm -rf gemm_*_*.json gemm_campaigns ) ;;
    ray1|ray2|ray2kill)   # `verdict: ok|FAIL` lines; the figures in $OUT/<stage>.json
      python3 -c "import ray" 2>/dev/null || { echo "$stage: Ray missing: scripts/prep_ray_wheels.sh, carry .whl/ray"
                                              continue; }
      a=$(python3 -c "import fa3_fwd_interface" 2>/dev/null && echo fa3)
      echo "anchors: ${a:-none (FA3 not carried: .whl/fa3)}; $(python3 -c 'import ray; print("ray", ray.__version__)')"
      mode=one; limit=${RAY1_TIMEOUT:-420}; extra=(--rounds "${RAY_ROUNDS:-2}")
      ray_cache=/tmp/ray2cache                  # ray2's new cache (its builds too), reused by ray2kill
      [ "$stage" = ray2 ] && { rm -rf "$ray_cache"; mode=two; limit=${RAY2_TIMEOUT:-400}
                               extra=(--candidates "${CANDIDATES:-10}" --cache "$ray_cache"); }
      [ "$stage" = ray2kill ] && { mode=kill; limit=${RAY2KILL_TIMEOUT:-170}
                                   extra=(--candidates "${KILL_CANDIDATES:-6}")
                                   [ -d "$ray_cache" ] && extra+=(--cache "$ray_cache"); }
      RAY_USAGE_STATS_ENABLED=0 timeout "$limit" python3 scripts/ray_pool_check.py $mode \
        --kernel "${RAY_KERNEL:-kernels/attn_fwd/ladder/02_mma.cu}" --suite "${RAY_SUITE:-dev26}" --anchors "$a" \
        "${extra[@]}" --head --head-log "$OUT/${stage}_head.log" --json "$OUT/$stage.json" --table "$OUT/$stage.txt" \
        > "$OUT/$stage.log" 2>&1
      echo "$stage: rc $?"
      grep -vE "^\[|WARNING|INFO|^\s*$|raylet\)|^verdict" "$OUT/$stage.log" | cut -c1-400 | tail -30
      cat "$OUT/$stage.txt" 2>/dev/null | cut -c1-400 ;;
    *) echo "unknown stage $stage" ;;
  esac
done

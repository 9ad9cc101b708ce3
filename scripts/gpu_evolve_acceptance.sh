#!/usr/bin/env bash
# Issue 6's GPU acceptance on the 2-GPU H200 machine (device kind nvidia-h200-x2), one stage per device call
# (each well under the 10-minute limit of a call):
#
#   env         GPUs, torch, Ray (from .whl/ray), FA3; a RayPool batch of CPU stand-ins across both GPUs  (~1 min)
#   throughput  RayPool on 1 GPU vs 2: a batch of single-knob variants of ladder/02_mma.cu on dev26      (~4 min)
#   local       the same batch on LocalPool, 1 GPU vs 2 (for comparison)                                  (~4 min)
#   evolve      offline-agent evolution of 02_mma.cu on dev26 over RayPool; trace tables -> data/traces  (<= 8 min)
#
# Before the first call, here: scripts/prep_ray_wheels.sh (writes .whl/ray, ~32 MiB). Each call:
#   run(kind="nvidia-h200-x2", carry=[".whl/ray", ".whl/fa3_fwd-0.0.3-cp39-abi3-manylinux_2_24_x86_64.whl"],
#       command="bash scripts/gpu_evolve_acceptance.sh STAGE")
# (without the FA3 wheel the runs time no anchor and the evolution's stop predicate is left empty). Results come
# back in $OUT (./gpu_out when $OUT is unset): logs, pool_throughput_*.json, evolve_<run>.tgz (untar it in the
# repository root: data/traces/<table>/<run>/ and evolutions/<run>/).
set -uo pipefail
STAGE=${1:-env}
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu_out}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1   # never NVLink multicast
export RAY_USAGE_STATS_ENABLED=0 PYTHONUNBUFFERED=1
export WORKBENCH_CACHE=${WORKBENCH_CACHE:-/tmp/wbcache}
KERNEL=${KERNEL:-kernels/attn_fwd/ladder/02_mma.cu}
CANDIDATES=${CANDIDATES:-10}

# ---- install what the image lacks (Ray, jsonschema; FA3 when carried) ----------------------------------------
source scripts/gpu_wheels.sh || exit 2
python3 -c "import ray" 2>/dev/null \
  || { echo "Ray is missing: run scripts/prep_ray_wheels.sh here and carry .whl/ray"; exit 2; }
if python3 -c "import fa3_fwd_interface" 2>/dev/null; then ANCHORS=fa3; else ANCHORS=""; fi
versions=$(python3 -c 'import ray, torch
print("ray", ray.__version__, "torch", torch.__version__, "GPUs", torch.cuda.device_count())')
echo "stage $STAGE; anchors: ${ANCHORS:-none}; $versions"

case "$STAGE" in
  env)
    nvidia-smi -L
    nvcc --version | tail -1
    python3 -c "from workbench.evaluators.evaluator import local_gpus; print('local_gpus', local_gpus())"
    # stand-ins through RayPool with one GPU per task: checks the Ray install, GPU accounting and stamps
    python3 scripts/pool_bench.py --standin correct --candidates 4 --suite smoke --pools ray --gpus 2 \
      --json "$OUT/pool_env_standin.json" 2>&1 | tee "$OUT/env.log"
    ;;
  throughput|local)
    pools=ray; [ "$STAGE" = local ] && pools=local
    python3 scripts/pool_bench.py --kernel "$KERNEL" --candidates "$CANDIDATES" --suite dev26 --anchors "$ANCHORS" \
      --pools "$pools" --gpus 1,2 --json "$OUT/pool_throughput_${pools}_h200x2.json" 2>&1 | tee "$OUT/$STAGE.log"
    ;;
  evolve)
    RUN=${RUN:-h200x2-evolve-$(date -u +%Y%m%d-%H%M)}
    STOP=""; [ -n "$ANCHORS" ] && STOP="all_correct and geomean_vs_fa3 >= 1.0"
    python3 -m workbench.cli evolve --kernel "$KERNEL" --suite dev26 --population 4 --generations 4 \
      --agent offline --anchors "$ANCHORS" --stop "$STOP" --pool "${POOL:-ray}" --root /tmp/evolutions --id "$RUN" \
      --traces data/traces --budget wall=7m --seed 0 2>&1 | tee "$OUT/evolve.log"
    tar -czf "$OUT/evolve_$RUN.tgz" data/traces/*/"$RUN" -C /tmp "evolutions/$RUN/config.json" \
      "evolutions/$RUN/state" "evolutions/$RUN/artifacts"
    python3 - "$RUN" <<'EOF' | tee -a "$OUT/evolve.log"
import sys
from workbench import evolve
rows = evolve.lineage_frame("data/traces", sys.argv[1])
runs = evolve.progress_frame(rows)
seed = runs.iloc[0]["geomean"]
print(f"seed x{seed:.3f} vs original; best x{runs['best'].max():.3f} ({runs['best'].max() / seed:.3f}x the seed); "
      f"{len(runs)} evaluated, {(rows['status'] == 'rejected').sum()} rejected; "
      f"GPUs {sorted(set(rows['gpu'].dropna()))}")
print(evolve.question_gains(rows).to_string())
EOF
    ;;
  *)
    echo "usage: $0 env|throughput|local|evolve"; exit 2 ;;
esac

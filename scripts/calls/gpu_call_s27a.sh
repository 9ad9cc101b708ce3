#!/usr/bin/env bash
# Session 27, the first call when failed starts leave room for one: on an H200 (the bar's card, none since session
# 19) v27 through the campaign and the acceptance command (scripts/calls/gpu_call_s26a.sh); on an H100, where v26
# already met the bar (run 88), run 99's knob A/B (scripts/calls/gpu_call_s27b.sh), so the next acceptance times v28.
# Run as: CALL=scripts/calls/gpu_call_s27a.sh bash scripts/gpu_run.sh call   (carry .whl/fa3)
set -uo pipefail
case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in
  *H200*) bash scripts/calls/gpu_call_s26a.sh ;;
  *)      bash scripts/calls/gpu_call_s27b.sh ;;
esac

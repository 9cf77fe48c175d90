#!/usr/bin/env bash
# sentlab's check on a GPU node: bash benchmarks/gpu/check.sh PART [--tiny] [--bundle .gpu]
# PART: install, suite-1, suite-2, speed, presets, claim-a, distill or all (check.py's PARTS, which a test holds this to);
# every result is one JSON file under $OUT
# (benchmarks/gpu/check.py says what each part measures). --tiny: tiny sizes on any device (CI, a CPU).
set -uo pipefail
cd "$(dirname "$0")/../.."
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
exec python3 benchmarks/gpu/check.py "$@"

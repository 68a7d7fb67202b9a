#!/usr/bin/env bash
# `npm run bench`: every benchmark; each writes its JSON under bench/results/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/ensure-deps.sh
node --import tsx bench/control.bench.ts

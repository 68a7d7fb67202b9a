#!/usr/bin/env bash
# npm run bench: the runtime's own overhead and memory bound; writes ../bench/results/runtime.json.
# The runtime runs compiled (dist/), as in the image.
set -euo pipefail
cd "$(dirname "$0")/.."
source ../scripts/ensure-node.sh
if [ ! -d node_modules ]; then npm ci --no-audit --no-fund; fi
npx tsc -p tsconfig.build.json
exec node --import tsx bench/runtime-bench.ts "$@"

#!/usr/bin/env bash
# `npm run bench`: every benchmark; each writes its JSON under bench/results/.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/ensure-node.sh
bash scripts/ensure-deps.sh --containers --test-tools --bench-tools
node --import tsx bench/control.bench.ts
node --import tsx bench/orchestration.bench.ts
npm run bench --prefix runtime-image
node --import tsx bench/sessions.bench.ts
node --import tsx bench/authz.bench.ts
node --import tsx bench/edge-overload.bench.ts
# The default runtime's image, under the tag RUNTIME_IMAGE defaults to (control/config/runtime-image.ts).
bash runtime-image/scripts/build-image.sh >/dev/null
node --import tsx bench/wake.bench.ts

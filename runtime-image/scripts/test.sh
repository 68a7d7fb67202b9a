#!/usr/bin/env bash
# npm test: works from a fresh clone. Installs dependencies when missing, typechecks, then runs
# every suite with mocha (the image suite builds the image with podman, installing it if needed).
set -euo pipefail
cd "$(dirname "$0")/.."
# The project's Node LTS (../.node-version), as the platform's own npm test uses.
source ../scripts/ensure-node.sh

if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "runtime-image: installing dependencies (npm ci)"
  npm ci --no-audit --no-fund
fi
echo "runtime-image: typecheck"
npx tsc --noEmit -p tsconfig.json
npx mocha "$@"

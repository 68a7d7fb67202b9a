#!/usr/bin/env bash
# Runs a TypeScript entry point on the project's Node (scripts/ensure-node.sh), as the npm
# scripts do: `bash scripts/node.sh control/admin.ts keys status`.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/ensure-node.sh
exec node --import tsx "$@"

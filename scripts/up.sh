#!/usr/bin/env bash
# `npm run up`: installs what is missing, then runs the whole platform on this host.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/ensure-deps.sh
exec node --import tsx scripts/up.ts

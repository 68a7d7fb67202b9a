#!/usr/bin/env bash
# `npm run up`: installs what is missing, then runs the whole platform on this host.
set -euo pipefail
cd "$(dirname "$0")/.."
# The project's Node LTS (.node-version) first on PATH: the platform, its builds and its images run on it.
source scripts/ensure-node.sh
bash scripts/ensure-deps.sh --containers
# The image agents run when they name none; rebuilt only when its sources changed.
bash runtime-image/scripts/build-image.sh >/dev/null
# The web console the control API serves at / (console/dist).
node --import tsx scripts/build-console.ts >/dev/null
exec node --import tsx scripts/up.ts "$@"

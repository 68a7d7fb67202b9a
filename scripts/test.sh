#!/usr/bin/env bash
# `npm test`: installs what is missing, type-checks, then runs every suite against
# throwaway Postgres and Redis (started by test/support/global.ts).
set -euo pipefail
cd "$(dirname "$0")/.."
# The project's Node LTS (.node-version) first on PATH, for this script and every process it starts.
source scripts/ensure-node.sh

bash scripts/ensure-deps.sh --containers --test-tools
echo "Type-checking"
npx tsc --noEmit -p tsconfig.json
# The web console: browser code, type-checked with the DOM library, and built for the browser tests.
npx tsc --noEmit -p console/tsconfig.json
node --import tsx scripts/build-console.ts

main_log=$(mktemp)
runtime_log=$(mktemp)
trap 'rm -f "$main_log" "$runtime_log"' EXIT
status=0
npx mocha --color "${@:-test/**/*.test.ts}" 2>&1 | tee "$main_log" || status=$?

# The default runtime is its own package with its own suites (and its image build).
if [ $# -eq 0 ]; then
  echo "Runtime image suites (runtime-image/)"
  npm test --prefix runtime-image 2>&1 | tee "$runtime_log" || status=$?
fi

# Counted over both runs; `|| true` because grep finds no "failing" line in a green run.
passed=$( (grep -Eo '[0-9]+ passing' "$main_log" "$runtime_log" || true) | awk -F: '{split($NF, n, " "); s+=n[1]} END {print s+0}')
failed=$( (grep -Eo '[0-9]+ failing' "$main_log" "$runtime_log" || true) | awk -F: '{split($NF, n, " "); s+=n[1]} END {print s+0}')
# CI shows only the tail of what ran, and the runtime suites print after the main one's
# failures: name them again here, last, so a red run says what failed. Mocha ends a run with
# its account of the failures, from "N failing" on.
if [ "$failed" -gt 0 ]; then
  echo "What failed (mocha's account, repeated):"
  for log in "$main_log" "$runtime_log"; do
    sed -E 's/\x1b\[[0-9;]*m//g' "$log" | awk '/^ *[0-9]+ failing/ {show=1} show' | head -n 200
  done
fi
echo "tests: ${passed} passed, ${failed} failed"
exit $status

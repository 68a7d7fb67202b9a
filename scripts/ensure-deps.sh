#!/usr/bin/env bash
# Installs what the platform needs and is missing: Debian packages (PostgreSQL,
# Redis; with --containers podman, runc and iptables; with --test-tools the static
# busybox the orchestration tests build their tiny image from) and npm dependencies.
# Used by `npm run up` and `npm test`, so a fresh machine needs nothing by hand.
set -euo pipefail
cd "$(dirname "$0")/.."

want_containers=false
want_test_tools=false
for arg in "$@"; do
  [ "$arg" = "--containers" ] && want_containers=true
  [ "$arg" = "--test-tools" ] && want_test_tools=true
done

missing=()
ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1 || command -v pg_ctl >/dev/null 2>&1 || missing+=(postgresql)
command -v redis-server >/dev/null 2>&1 || [ -x /usr/bin/redis-server ] || missing+=(redis-server)
if $want_containers; then
  command -v podman >/dev/null 2>&1 || missing+=(podman)
  command -v runc >/dev/null 2>&1 || missing+=(runc)
  command -v iptables >/dev/null 2>&1 || [ -x /usr/sbin/iptables ] || missing+=(iptables)
fi
if $want_test_tools; then
  [ -x /bin/busybox ] || missing+=(busybox-static)
fi

if [ ${#missing[@]} -gt 0 ]; then
  echo "Installing from Debian: ${missing[*]}"
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 || { echo "Need root or sudo to install: ${missing[*]}" >&2; exit 1; }
    sudo="sudo"
  fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  # Debian starts packaged services on install; the platform runs its own copies.
  for service in postgresql redis-server; do
    $sudo systemctl disable --now "$service" >/dev/null 2>&1 || $sudo service "$service" stop >/dev/null 2>&1 || true
  done
fi

# npm ci when node_modules is missing or older than the lockfile.
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "Installing npm dependencies (npm ci)"
  npm ci --no-audit --no-fund --loglevel=error
fi

#!/usr/bin/env bash
# Installs what the platform needs and is missing: Debian packages (PostgreSQL,
# Redis; with --containers podman, runc, netavark + aardvark-dns, nftables, iptables, criu and
# a static busybox; with --test-tools the same busybox, from which the orchestration
# tests build their tiny image, Chromium for the console's browser tests, and
# docker-registry with openssl for the registry tests, pebble for the ACME tests,
# prometheus for promtool, which checks the alerting rules; with
# --bench-tools h2load, the C load generator of `npm run bench`) and npm dependencies. With --containers it also selects
# podman's netavark network backend (select_netavark below).
# Used by `npm run up` and `npm test`, so a fresh machine needs nothing by hand.
set -euo pipefail
cd "$(dirname "$0")/.."

want_containers=false
want_test_tools=false
want_bench_tools=false
for arg in "$@"; do
  [ "$arg" = "--containers" ] && want_containers=true
  [ "$arg" = "--test-tools" ] && want_test_tools=true
  [ "$arg" = "--bench-tools" ] && want_bench_tools=true
done

missing=()
# The podman driver's isolation probe copies /bin/busybox into an otherwise empty root:
# it must be the static build (busybox-static), not Debian's dynamically linked `busybox`.
static_busybox() { [ -x /bin/busybox ] && ! ldd /bin/busybox >/dev/null 2>&1; }
ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1 || command -v pg_ctl >/dev/null 2>&1 || missing+=(postgresql)
command -v redis-server >/dev/null 2>&1 || [ -x /usr/bin/redis-server ] || missing+=(redis-server)
if $want_containers; then
  command -v podman >/dev/null 2>&1 || missing+=(podman)
  command -v runc >/dev/null 2>&1 || missing+=(runc)
  # Debian's podman depends on "container-network-stack", which apt satisfies with CNI when
  # recommends are off: name netavark (and its DNS server) explicitly, the backend the
  # platform is built and tested for.
  [ -x /usr/lib/podman/netavark ] || missing+=(netavark)
  [ -x /usr/lib/podman/aardvark-dns ] || missing+=(aardvark-dns)
  # The agents' firewall is an nftables table of the driver's own (control/orchestrator/podman/firewall-rules.ts);
  # netavark itself still writes its rules with iptables.
  command -v nft >/dev/null 2>&1 || [ -x /usr/sbin/nft ] || missing+=(nftables)
  command -v iptables >/dev/null 2>&1 || [ -x /usr/sbin/iptables ] || missing+=(iptables)
  # The agent subnet pool's unreachable route (control/orchestrator/podman/pool-route.ts).
  command -v ip >/dev/null 2>&1 || [ -x /usr/sbin/ip ] || [ -x /sbin/ip ] || missing+=(iproute2)
  # Checkpoint/restore for cold-parked replicas (issue 40): the driver tries it at start and
  # says whether it works on this host (control/orchestrator/podman/checkpoint-probe.ts).
  command -v criu >/dev/null 2>&1 || [ -x /usr/sbin/criu ] || missing+=(criu)
fi
if $want_containers || $want_test_tools; then
  static_busybox || missing+=(busybox-static)
fi
if $want_test_tools; then
  # The isolation test proves the same effects on podman's other backend, CNI, which a
  # fresh machine lacks once netavark satisfies podman's container-network-stack.
  [ -x /usr/lib/cni/bridge ] || missing+=(containernetworking-plugins)
  # The web console's browser tests drive Debian's Chromium through playwright-core (test/support/browser.ts).
  [ -x /usr/bin/chromium ] || missing+=(chromium)
  # The registry tests push, pull by digest and deploy from a real distribution registry
  # on loopback (test/support/registry.ts); the tests generate its TLS CA with openssl.
  [ -x /usr/bin/docker-registry ] || missing+=(docker-registry)
  command -v openssl >/dev/null 2>&1 || missing+=(openssl)
  # Custom domains' certificates are ordered from Debian's real ACME CA, Pebble, which resolves
  # through pebble-challtestsrv (same package) like the control API's TXT checks (test/support/pebble.ts).
  [ -x /usr/bin/pebble ] && [ -x /usr/bin/pebble-challtestsrv ] || missing+=(pebble)
  # The alerting rules are checked and unit-tested with promtool, from Debian's Prometheus (test/alerts.test.ts).
  [ -x /usr/bin/promtool ] || missing+=(prometheus)
fi
if $want_bench_tools; then
  # authz's CPU per Check is also measured with h2load as the caller (bench/h2load.ts).
  [ -x /usr/bin/h2load ] || missing+=(nghttp2-client)
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
  # Debian starts packaged services on install; the platform (and its tests) run their own copies.
  for service in postgresql redis-server docker-registry prometheus; do
    $sudo systemctl disable --now "$service" >/dev/null 2>&1 || $sudo service "$service" stop >/dev/null 2>&1 || true
  done
fi

sudo_cmd=
if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1; then sudo_cmd=sudo; fi

# Pins podman to netavark in a containers.conf drop-in (podman 4.3 reads
# /etc/containers/containers.conf.d/*.conf after containers.conf). Without it podman keeps
# the backend it chose on first use, which is CNI on a machine that ran podman before
# netavark was installed. Switching a machine that has CNI containers or networks would
# hide them from podman (those containers could no longer start), so then nothing is
# changed and the way to switch is printed instead. The driver still works on CNI: its
# firewall reads the bridge names from `podman network inspect`, and agents run only once
# their isolation is proven by effect.
select_netavark() {
  local dir=/etc/containers/containers.conf.d
  local conf=$dir/50-agent-platform-network.conf
  [ -f "$conf" ] && return 0
  local backend containers networks
  backend=$($sudo_cmd podman info --format '{{.Host.NetworkBackend}}' 2>/dev/null || echo unknown)
  if [ "$backend" != netavark ]; then
    containers=$($sudo_cmd podman ps --all --quiet 2>/dev/null | wc -l)
    networks=$( ($sudo_cmd podman network ls --format '{{.Name}}' 2>/dev/null || true) | grep -cvx podman || true)
    if [ "$containers" -gt 0 ] || [ "$networks" -gt 0 ]; then
      cat >&2 <<EOF
NOTE: podman uses the $backend network backend and holds $containers container(s) and
      $networks network(s); it is left as it is, since switching to netavark would hide
      them from podman. The platform works on $backend too: its firewall follows podman's
      bridge names, and agents run only once their isolation is proven at start.
      To switch: 'podman system reset' (it DELETES every podman container, image, volume
      and network on this machine), then run this again.
EOF
      return 0
    fi
  fi
  echo "Selecting podman's netavark network backend ($conf)"
  $sudo_cmd mkdir -p "$dir"
  printf '%s\n' \
    '# Written by agent-platform (scripts/ensure-deps.sh): the network backend its agent firewall is built for.' \
    '[network]' \
    'network_backend = "netavark"' | $sudo_cmd tee "$conf" >/dev/null
}
if $want_containers; then select_netavark; fi

# npm ci when node_modules is missing or older than the lockfile.
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "Installing npm dependencies (npm ci)"
  npm ci --no-audit --no-fund --loglevel=error
fi
# The default runtime's own packages too: the platform's end-to-end tests and benches run it
# in-process (its fake provider, its sessions), so type-checking them needs its imports.
if [ ! -f runtime-image/node_modules/.package-lock.json ] || [ runtime-image/package-lock.json -nt runtime-image/node_modules/.package-lock.json ]; then
  echo "Installing the default runtime's npm dependencies (npm ci in runtime-image/)"
  (cd runtime-image && npm ci --no-audit --no-fund --loglevel=error)
fi

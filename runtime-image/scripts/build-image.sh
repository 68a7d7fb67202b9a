#!/usr/bin/env bash
# Builds the runtime image with podman and tags it $RUNTIME_IMAGE (default localhost/agent-runtime:latest).
#
# 1. Installs podman and runc from Debian when missing.
# 2. Picks the base image: $BASE_IMAGE if set; else the official Node 20 image if present or pullable;
#    else a local base made from this host's node binary and the libraries ldd lists
#    ($LOCAL_BASE_IMAGE, default localhost/platform-node-base:20), made once and reused.
# 3. Compiles the TypeScript and gathers production node_modules on the host, so that the
#    podman build itself never needs a network.
# 4. Skips the build when an image with the same source hash label exists.
#
# Prints the image name on stdout; progress goes to stderr.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/podman-lib.sh

RUNTIME_IMAGE="${RUNTIME_IMAGE:-localhost/agent-runtime:latest}"
OFFICIAL_BASE_IMAGE="docker.io/library/node:20-bookworm-slim"
LOCAL_BASE_IMAGE="${LOCAL_BASE_IMAGE:-localhost/platform-node-base:20}"
PULL_TIMEOUT_SECONDS="${PULL_TIMEOUT_SECONDS:-60}"
WORK_DIR=".image-build"
HASH_LABEL="org.agent-platform.runtime.source-hash"

command -v node >/dev/null 2>&1 || fail "node is not installed: the runtime is compiled on the host (Node 20 or later)"
command -v npm >/dev/null 2>&1 || fail "npm is not installed"
ensure_podman

# --- the base image -------------------------------------------------------------------------

make_local_base() {
  local node_bin rootfs lib
  node_bin="$(readlink -f "$(command -v node)")"
  note "no registry reachable: making $LOCAL_BASE_IMAGE from $node_bin ($(node --version))"
  rootfs="$(mktemp -d "$WORK_DIR/base-rootfs.XXXXXX")"
  chmod 755 "$rootfs" # it becomes the image's /, which uid 1000 must be able to enter
  mkdir -p "$rootfs/usr/local/bin" "$rootfs/etc/ssl/certs" "$rootfs/tmp" "$rootfs/app"
  cp "$node_bin" "$rootfs/usr/local/bin/node"
  # Every shared library node links against, the dynamic loader included, at the path ldd gives
  # (symlinks resolved): where the binary's interpreter entry and the loader look for them.
  for lib in $(ldd "$node_bin" | grep -o '/[^ ]*'); do
    mkdir -p "$rootfs$(dirname "$lib")"
    cp -L "$lib" "$rootfs$lib"
  done
  [ -f /etc/ssl/certs/ca-certificates.crt ] && cp /etc/ssl/certs/ca-certificates.crt "$rootfs/etc/ssl/certs/"
  chmod 1777 "$rootfs/tmp"
  printf 'root:x:0:0:root:/root:/sbin/nologin\nnode:x:1000:1000:node:/home/node:/sbin/nologin\n' >"$rootfs/etc/passwd"
  printf 'root:x:0:\nnode:x:1000:\n' >"$rootfs/etc/group"
  # Without this file glibc asks DNS before /etc/hosts, and host.containers.internal lives in /etc/hosts.
  printf 'hosts: files dns\n' >"$rootfs/etc/nsswitch.conf"
  tar -C "$rootfs" -cf "$rootfs.tar" .
  podman import \
    --change 'ENV PATH=/usr/local/bin:/usr/bin:/bin' \
    --change 'ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt' \
    --change 'CMD ["node"]' \
    "$rootfs.tar" "$LOCAL_BASE_IMAGE" >/dev/null || fail "podman import of the local base image failed"
  rm -rf "$rootfs" "$rootfs.tar"
}

choose_base_image() {
  if [ -n "${BASE_IMAGE:-}" ]; then
    podman image exists "$BASE_IMAGE" || podman pull -q "$BASE_IMAGE" >&2 || fail "BASE_IMAGE=$BASE_IMAGE is neither present nor pullable"
    echo "$BASE_IMAGE"
    return
  fi
  if podman image exists "$OFFICIAL_BASE_IMAGE"; then echo "$OFFICIAL_BASE_IMAGE"; return; fi
  if podman image exists "$LOCAL_BASE_IMAGE"; then echo "$LOCAL_BASE_IMAGE"; return; fi
  note "pulling $OFFICIAL_BASE_IMAGE (at most ${PULL_TIMEOUT_SECONDS}s)"
  if timeout "$PULL_TIMEOUT_SECONDS" podman pull -q "$OFFICIAL_BASE_IMAGE" >/dev/null 2>&1; then
    echo "$OFFICIAL_BASE_IMAGE"
    return
  fi
  make_local_base
  echo "$LOCAL_BASE_IMAGE"
}

# --- the runtime image ------------------------------------------------------------------------

# Everything that ends up in the image, plus the base it sits on.
source_hash() {
  local base_id="$1"
  {
    echo "$base_id"
    find Containerfile package.json package-lock.json tsconfig.json tsconfig.build.json src templates -type f -print0 \
      | sort -z | xargs -0 sha256sum
  } | sha256sum | cut -d' ' -f1
}

prepare_context() {
  # A directory of its own, so that two builds at once (npm test and npm run up) do not collide.
  local context
  context="$(mktemp -d "$WORK_DIR/context.XXXXXX")"
  if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
    note "installing dependencies (npm ci)"
    npm ci --no-audit --no-fund >&2 || fail "npm ci failed"
  fi
  note "compiling TypeScript"
  npx tsc -p tsconfig.build.json --outDir "$context/dist" >&2 || fail "TypeScript compilation failed"
  cp -r templates package.json package-lock.json Containerfile "$context/"
  note "gathering production dependencies"
  (cd "$context" && npm ci --omit=dev --ignore-scripts --prefer-offline --no-audit --no-fund >&2) || fail "npm ci --omit=dev failed"
  echo "$context"
}

mkdir -p "$WORK_DIR"
base_image="$(choose_base_image)"
base_id="$(podman image inspect --format '{{.Id}}' "$base_image")"
hash="$(source_hash "$base_id")"

if podman image exists "$RUNTIME_IMAGE" &&
  [ "$(podman image inspect --format "{{index .Labels \"$HASH_LABEL\"}}" "$RUNTIME_IMAGE")" = "$hash" ]; then
  note "$RUNTIME_IMAGE is up to date (source hash ${hash:0:12})"
  echo "$RUNTIME_IMAGE"
  exit 0
fi

context="$(prepare_context)"
note "building $RUNTIME_IMAGE on $base_image"
podman build -q \
  --build-arg "BASE_IMAGE=$base_image" \
  --label "$HASH_LABEL=$hash" \
  -f "$context/Containerfile" \
  -t "$RUNTIME_IMAGE" \
  "$context" >&2 || fail "podman build failed"
rm -rf "$context"
note "built $RUNTIME_IMAGE (source hash ${hash:0:12}); run options for this host: $(detect_run_options "$RUNTIME_IMAGE")"
echo "$RUNTIME_IMAGE"

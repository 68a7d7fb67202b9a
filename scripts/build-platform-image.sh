#!/usr/bin/env bash
# Builds the platform image (the control API and authz as compiled JavaScript, and the web console
# as built by scripts/build-console.ts, see Containerfile)
# with podman and tags it $PLATFORM_IMAGE (default localhost/agent-platform:latest).
#
# The same steps as runtime-image/scripts/build-image.sh, with its base-image logic
# (runtime-image/scripts/image-lib.sh): podman and runc from Debian when missing; the base is
# $BASE_IMAGE, else the official Node 24 image if present or pullable, else a local base made once
# from this host's node; TypeScript compiled and production node_modules gathered on the host, so
# the podman build needs no network; no build when the image's source hash label matches.
#
# Prints the image name on stdout; progress goes to stderr.
set -euo pipefail
cd "$(dirname "$0")/.."
LOG_PREFIX="platform-image"
source runtime-image/scripts/podman-lib.sh
source runtime-image/scripts/image-lib.sh

PLATFORM_IMAGE="${PLATFORM_IMAGE:-localhost/agent-platform:latest}"
WORK_DIR=".image-build"
HASH_LABEL="org.agent-platform.platform.source-hash"
# What tsconfig.build.json compiles: the entry points dist/control/main.js and dist/authz/main.js
# and everything they import.
SOURCE_DIRS=(control authz proto envoy)
# Copied as they are (Containerfile): authz's xDS server reads them by default.
ENVOY_FILES=(envoy/envoy.yaml envoy/tls-listener.yaml)

# The project's Node LTS: the local base image copies this very binary.
source scripts/ensure-node.sh || fail "the project's Node (.node-version) is not available"
command -v npm >/dev/null 2>&1 || fail "npm is not installed"
ensure_podman

# Everything that ends up in the image, plus the base it sits on.
source_hash() {
  local base_id="$1"
  {
    echo "$base_id"
    { find Containerfile package.json package-lock.json tsconfig.json tsconfig.build.json "${ENVOY_FILES[@]}" -type f -print0
      find "${SOURCE_DIRS[@]}" -type f \( -name '*.ts' -o -name '*.proto' \) -print0
      find console -path console/dist -prune -o -type f -print0; find scripts/build-console.ts -print0; } | sort -z | xargs -0 sha256sum
  } | sha256sum | cut -d' ' -f1
}

prepare_context() {
  # A directory of its own, so that two builds at once do not collide.
  local context
  context="$(mktemp -d "$WORK_DIR/context.XXXXXX")"
  chmod 755 "$context"
  if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
    note "installing dependencies (npm ci)"
    npm ci --no-audit --no-fund >&2 || fail "npm ci failed"
  fi
  note "compiling TypeScript"
  npx tsc -p tsconfig.build.json --outDir "$context/dist" >&2 || fail "TypeScript compilation failed"
  # Beside dist/proto/otlp-traces.js, which loads them from its own folder.
  cp -r proto/opentelemetry-proto "$context/dist/proto/"
  note "building the web console"
  # Two folders above dist/control/http/console-static.js, as console/dist is above control/http/ in the repository.
  node --import tsx scripts/build-console.ts "$context/dist/console/dist" >&2 || fail "the console build failed"
  cp package.json package-lock.json Containerfile "$context/"
  mkdir "$context/envoy" && cp "${ENVOY_FILES[@]}" "$context/envoy/"
  note "gathering production dependencies"
  # With install scripts, as any install on this host: argon2 (a native addon) takes its prebuilt
  # binary when this host's node loads it, else compiles itself for this node. A Debian node
  # crashes on the prebuilt one; the local base image runs this very node binary.
  (cd "$context" && npm ci --omit=dev --prefer-offline --no-audit --no-fund >&2) || fail "npm ci --omit=dev failed"
  echo "$context"
}

mkdir -p "$WORK_DIR"
base_image="$(choose_base_image "$WORK_DIR")"
base_id="$(podman image inspect --format '{{.Id}}' "$base_image")"
hash="$(source_hash "$base_id")"

if image_is_current "$PLATFORM_IMAGE" "$HASH_LABEL" "$hash"; then
  note "$PLATFORM_IMAGE is up to date (source hash ${hash:0:12})"
  echo "$PLATFORM_IMAGE"
  exit 0
fi

context="$(prepare_context)"
build_prepared_image "$PLATFORM_IMAGE" "$HASH_LABEL" "$base_image" "$context" "$hash"
rm -rf "$context"
note "built $PLATFORM_IMAGE (source hash ${hash:0:12}); run options for this host: $(detect_run_options "$PLATFORM_IMAGE")"
echo "$PLATFORM_IMAGE"

#!/usr/bin/env bash
# Builds the runtime image with podman and tags it $RUNTIME_IMAGE (default localhost/agent-runtime:<package
# version>, the control API's default: control/config/runtime-image.ts).
#
# 1. Installs podman and runc from Debian when missing.
# 2. Picks the base image: $BASE_IMAGE if set; else the official Node 24 image if present or pullable;
#    else a local base made from this host's node binary and the libraries ldd lists
#    ($LOCAL_BASE_IMAGE, default localhost/platform-node-base:24), made once and reused
#    (scripts/image-lib.sh, shared with the platform image's build).
# 3. Compiles the TypeScript and gathers production node_modules on the host, so that the
#    podman build itself never needs a network.
# 4. Skips the build when an image with the same source hash label exists.
#
# Prints the image name on stdout; progress goes to stderr.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/podman-lib.sh
source scripts/image-lib.sh

RUNTIME_IMAGE="${RUNTIME_IMAGE:-$(local_runtime_image)}"
WORK_DIR=".image-build"
HASH_LABEL="org.agent-platform.runtime.source-hash"

# The project's Node LTS (../.node-version): the local base image copies this very binary.
source ../scripts/ensure-node.sh || fail "the project's Node (.node-version) is not available"
command -v npm >/dev/null 2>&1 || fail "npm is not installed"
ensure_podman

# --- the runtime image ------------------------------------------------------------------------

# Everything that ends up in the image, plus the base it sits on.
source_hash() {
  local base_id="$1"
  {
    echo "$base_id"
    find Containerfile package.json package-lock.json tsconfig.json tsconfig.build.json src templates scripts/build-image.sh -type f -print0 \
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
  # One file of the compiled code and the production packages it imports, which the image runs:
  # Node starts about 80 ms sooner than from the hundreds of modules it would otherwise read,
  # and a replica's start is what a cold wake waits on (issue 40). Bundled from the context's own
  # node_modules, so it holds exactly the packages the image ships and its bill of materials lists.
  note "bundling dist/main.bundle.mjs (esbuild)"
  npx esbuild "$context/dist/main.js" --bundle --platform=node --format=esm --target=node24 --log-level=error \
    --banner:js="import { createRequire as __platformCreateRequire } from 'node:module'; const require = __platformCreateRequire(import.meta.url);" \
    --outfile="$context/dist/main.bundle.mjs" >&2 || fail "bundling failed"
  echo "$context"
}

mkdir -p "$WORK_DIR"
base_image="$(choose_base_image "$WORK_DIR")"
base_id="$(podman image inspect --format '{{.Id}}' "$base_image")"
hash="$(source_hash "$base_id")"

if image_is_current "$RUNTIME_IMAGE" "$HASH_LABEL" "$hash"; then
  note "$RUNTIME_IMAGE is up to date (source hash ${hash:0:12})"
  echo "$RUNTIME_IMAGE"
  exit 0
fi

context="$(prepare_context)"
build_prepared_image "$RUNTIME_IMAGE" "$HASH_LABEL" "$base_image" "$context" "$hash"
rm -rf "$context"
note "built $RUNTIME_IMAGE (source hash ${hash:0:12}); run options for this host: $(detect_run_options "$RUNTIME_IMAGE")"
echo "$RUNTIME_IMAGE"

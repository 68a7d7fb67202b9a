#!/usr/bin/env bash
# Prints the podman run options this host needs (OCI runtime, ulimits), detected by starting a
# trivial container from the runtime image. Used by the image test; see podman-lib.sh for overrides.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/podman-lib.sh
image="${1:-${RUNTIME_IMAGE:-$(local_runtime_image)}}"
podman image exists "$image" || fail "image $image not found: run scripts/build-image.sh first"
detect_run_options "$image"

# Shared by the two image builds, runtime-image/scripts/build-image.sh (agents' runtime) and
# scripts/build-platform-image.sh (control API and authz), so both pick their base and skip
# unchanged builds the same way. Source podman-lib.sh first (fail, note).
#
# Settings: BASE_IMAGE (use this one), LOCAL_BASE_IMAGE (default localhost/platform-node-base:24),
# PULL_TIMEOUT_SECONDS (default 60), IMAGE_SOURCE_URL (the org.opencontainers.image.source label; none by default).

OFFICIAL_BASE_IMAGE="docker.io/library/node:24-bookworm-slim"
LOCAL_BASE_IMAGE="${LOCAL_BASE_IMAGE:-localhost/platform-node-base:24}"
PULL_TIMEOUT_SECONDS="${PULL_TIMEOUT_SECONDS:-60}"

# A base image from this host's node binary and the libraries ldd lists, for hosts that reach
# no registry. $1: a scratch directory of the caller's.
make_local_base() {
  local work_dir="$1" node_bin rootfs lib
  node_bin="$(readlink -f "$(command -v node)")"
  note "no registry reachable: making $LOCAL_BASE_IMAGE from $node_bin ($(node --version))"
  rootfs="$(mktemp -d "$work_dir/base-rootfs.XXXXXX")"
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

# Prints the base image to build on: $BASE_IMAGE if set; else the official Node 24 image if present
# or pullable; else the local base (made once, then reused). $1: a scratch directory.
choose_base_image() {
  local work_dir="$1"
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
  make_local_base "$work_dir"
  echo "$LOCAL_BASE_IMAGE"
}

# True when $1 exists and its label $2 holds the source hash $3: nothing to rebuild.
image_is_current() {
  local image="$1" label="$2" hash="$3"
  podman image exists "$image" &&
    [ "$(podman image inspect --format "{{index .Labels \"$label\"}}" "$image")" = "$hash" ]
}

# Builds $4/Containerfile in the prepared context $4 on base $3, tagged $1 with label $2 = $5.
# The context already holds everything (compiled code, production node_modules), so the build
# itself needs no network.
build_prepared_image() {
  local image="$1" label="$2" base_image="$3" context="$4" hash="$5" version revision base_digest sbom_dir
  # The image's bill of materials (CycloneDX, from the production node_modules it ships), inside
  # it at /app/sbom.cdx.json and beside it on the host, under .image-build/sbom/.
  # Not `npm sbom --omit dev`: npm 11 leaves out a production package that a dev dependency
  # also needs (koa, through oidc-provider), and every package under it. The whole lock's
  # bill is taken instead and cut to the components npm marks `required` (production), with
  # the dependency graph cut alike.
  (cd "$context" && npm sbom --sbom-format cyclonedx --package-lock-only 2>/dev/null | node -e '
    const bom = JSON.parse(require("node:fs").readFileSync(0, "utf8"));
    bom.components = bom.components.filter((component) => component.scope === "required");
    const kept = new Set([bom.metadata?.component?.["bom-ref"], ...bom.components.map((component) => component["bom-ref"])]);
    bom.dependencies = (bom.dependencies ?? []).filter((entry) => kept.has(entry.ref))
      .map((entry) => ({ ...entry, dependsOn: (entry.dependsOn ?? []).filter((ref) => kept.has(ref)) }));
    process.stdout.write(JSON.stringify(bom, null, 2));
  ' >sbom.cdx.json) || fail "npm sbom failed"
  sbom_dir="$(dirname "$context")/sbom"
  mkdir -p "$sbom_dir" && cp "$context/sbom.cdx.json" "$sbom_dir/$(echo "$image" | tr '/:' '__').cdx.json"
  # OCI annotations (image-spec annotations.md): what was built, from which commit, on which base.
  version="$(node -p 'JSON.parse(require("node:fs").readFileSync(process.argv[1], "utf8")).version' "$context/package.json")"
  revision="$(git rev-parse HEAD 2>/dev/null || echo unknown)"
  base_digest="$(podman image inspect --format '{{.Digest}}' "$base_image" 2>/dev/null || echo unknown)"
  note "building $image on $base_image"
  podman build -q \
    --build-arg "BASE_IMAGE=$base_image" \
    --label "$label=$hash" \
    --label "org.opencontainers.image.version=$version" \
    --label "org.opencontainers.image.revision=$revision" \
    ${IMAGE_SOURCE_URL:+--label "org.opencontainers.image.source=$IMAGE_SOURCE_URL"} \
    --label "org.opencontainers.image.licenses=UNLICENSED" \
    --label "org.opencontainers.image.base.name=$base_image" \
    --label "org.opencontainers.image.base.digest=$base_digest" \
    -f "$context/Containerfile" \
    -t "$image" \
    "$context" >&2 || fail "podman build failed"
}

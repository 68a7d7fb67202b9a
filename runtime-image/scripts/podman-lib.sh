# Shared by build-image.sh, podman-run-flags.sh and ../../scripts/build-platform-image.sh: finding
# podman and what this host needs to run containers. Every detection can be overridden:
# PODMAN_OCI_RUNTIME (e.g. runc), PODMAN_ULIMITS ("" for none, or
# e.g. "--ulimit nofile=1024:1024 --ulimit nproc=512:512"). Messages start with $LOG_PREFIX.
LOG_PREFIX="${LOG_PREFIX:-runtime-image}"

fail() {
  echo "$LOG_PREFIX: error: $*" >&2
  exit 1
}

note() {
  echo "$LOG_PREFIX: $*" >&2
}

# podman and runc come from Debian; install them when missing (apt-get update once).
ensure_podman() {
  local missing=()
  command -v podman >/dev/null 2>&1 || missing+=(podman)
  command -v runc >/dev/null 2>&1 || missing+=(runc)
  [ ${#missing[@]} -eq 0 ] && return 0
  command -v apt-get >/dev/null 2>&1 || fail "${missing[*]} not installed and apt-get is not available: install ${missing[*]} by hand"
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 || fail "${missing[*]} not installed: run as root or install them (apt-get install -y ${missing[*]})"
    sudo="sudo"
  fi
  note "installing ${missing[*]} from Debian"
  $sudo apt-get update -q >&2 || fail "apt-get update failed"
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q "${missing[@]}" >&2 || fail "apt-get install ${missing[*]} failed"
}

# Tries a trivial container with each candidate OCI runtime and each ulimit setting, and prints the
# podman options of the first that starts. crun fails on cgroup v1 hybrid hosts; podman's default
# nofile/nproc limits exceed some hosts' hard limits ("setrlimit ... Operation not permitted").
detect_run_options() {
  local image="$1"
  local runtimes=() ulimit_sets=()
  if [ -n "${PODMAN_OCI_RUNTIME:-}" ]; then runtimes=("$PODMAN_OCI_RUNTIME"); else runtimes=(default runc crun); fi
  if [ -n "${PODMAN_ULIMITS+set}" ]; then
    ulimit_sets=("$PODMAN_ULIMITS")
  else
    ulimit_sets=("" "--ulimit nofile=1024:1024 --ulimit nproc=512:512")
  fi
  local runtime ulimits options out errors=""
  for runtime in "${runtimes[@]}"; do
    if [ "$runtime" != default ] && ! command -v "$runtime" >/dev/null 2>&1; then continue; fi
    for ulimits in "${ulimit_sets[@]}"; do
      options=""
      [ "$runtime" != default ] && options="--runtime $runtime"
      options="$options $ulimits"
      # shellcheck disable=SC2086
      if out=$(podman run --rm $options --entrypoint node "$image" -e 'process.exit(0)' 2>&1); then
        echo "$options" | xargs
        return 0
      fi
      errors="$errors\n  [$runtime${ulimits:+ $ulimits}] $(echo "$out" | tail -n 1)"
    done
  done
  fail "no OCI runtime could start a container from $image; tried:$(printf "$errors")"
}

# The default runtime's local tag, as RUNTIME_IMAGE defaults to in the control API
# (control/config/runtime-image.ts, the one place it is computed): the package version, never "latest".
local_runtime_image() {
  local root
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
  (cd "$root" && node --import tsx --input-type=module \
    -e 'import { LOCAL_RUNTIME_IMAGE } from "./control/config/runtime-image.ts"; console.log(LOCAL_RUNTIME_IMAGE);') \
    || fail "could not read the runtime image's tag from control/config/runtime-image.ts (run npm ci at the repository root)"
}

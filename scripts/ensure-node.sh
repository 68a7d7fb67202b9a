# Sourced (not run) by every script that runs the platform, its tests or its builds: puts the
# project's Node, the LTS named in .node-version, first on PATH. A Node of that major version
# already on PATH is used as it is; otherwise the official binary is fetched once from the npm
# registry (the package node-linux-<arch>, published by the Node.js project) into
# .tools/node-v<version>-linux-<arch>/. Debian ships Node 20, which reached end of life in
# April 2026; nothing here may run on it.
#
# Needs npm (any Node's) for the first fetch. Exports PATH; prints progress on stderr only.

ensure_project_node() {
  local root version major arch dir tmp
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  version="$(tr -d ' \n' <"$root/.node-version")"
  major="${version%%.*}"
  if [ "$(node --version 2>/dev/null | sed -E 's/^v([0-9]+).*/\1/')" = "$major" ]; then return 0; fi
  case "$(uname -m)" in
    x86_64) arch=x64 ;;
    aarch64 | arm64) arch=arm64 ;;
    *) echo "ensure-node: no official Node $version binary for $(uname -m)" >&2; return 1 ;;
  esac
  dir="$root/.tools/node-v$version-linux-$arch"
  if [ ! -x "$dir/bin/node" ]; then
    command -v npm >/dev/null 2>&1 || { echo "ensure-node: npm is needed once to fetch Node $version (apt-get install npm)" >&2; return 1; }
    echo "Fetching Node $version (node-linux-$arch from the npm registry) into ${dir#"$root/"}" >&2
    tmp="$(mktemp -d)"
    (cd "$tmp" && npm pack --silent "node-linux-$arch@$version" >/dev/null) || { rm -rf "$tmp"; echo "ensure-node: npm pack node-linux-$arch@$version failed" >&2; return 1; }
    mkdir -p "$dir.partial"
    tar -xzf "$tmp"/node-linux-"$arch"-"$version".tgz -C "$dir.partial" --strip-components=1 package/bin/node package/LICENSE
    rm -rf "$tmp"
    # Moved into place whole, so an interrupted fetch is never taken for a finished one.
    rm -rf "$dir" && mv "$dir.partial" "$dir"
  fi
  export PATH="$dir/bin:$PATH"
  [ "$(node --version)" = "v$version" ] || { echo "ensure-node: $dir/bin/node is not v$version" >&2; return 1; }
}

ensure_project_node

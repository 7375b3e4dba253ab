#!/usr/bin/env bash
# Builds the addon that one platform package ships, on this Linux x64 machine:
#   bash scripts/build-platform.sh <platform>     (or: npm run build:platform -- <platform>)
# <platform> is one of the packages in npm/: linux-x64-gnu linux-arm64-gnu linux-x64-musl linux-arm64-musl darwin-x64
# darwin-arm64 win32-x64. The binary lands in npm/<platform>/, as that package's package.json names it, built with
# the `dist` profile (release, stripped). What the build needs is installed on first use, from registries only:
# Rust targets by rustup, zig from PyPI (`ziglang`) and cargo-zigbuild from crates.io into .tools/, and Debian's
# cross compilers by apt-get. Builds share the one target/ directory, one subfolder per target.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
platform=${1:?usage: bash scripts/build-platform.sh <platform> (one of: $(ls npm | tr '\n' ' '))}
[ -f "npm/$platform/package.json" ] || { echo "no package npm/$platform (one of: $(ls npm | tr '\n' ' '))" >&2; exit 2; }

# Pinned so that a build is the same on every machine; newer releases may change zig's defaults (DECISIONS.md N2).
ZIG_VERSION=0.15.2
ZIGBUILD_VERSION=0.24.1
tools=$root/.tools
export PATH="$tools/bin:$tools/ziglang/ziglang:$PATH"

apt_install() {
  local missing=()
  for pkg in "$@"; do dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg"); done
  [ ${#missing[@]} -eq 0 ] && return
  echo "installing Debian packages: ${missing[*]}"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
}

# zig links every target but linux-arm64-gnu and win32-x64 (below): it carries the C libraries and SDK stubs of
# each, including glibc 2.17's symbol versions, which the system's linker cannot give.
need_zigbuild() {
  if [ "$(zig version 2>/dev/null)" != "$ZIG_VERSION" ]; then
    echo "installing zig $ZIG_VERSION (PyPI ziglang) into .tools/"
    python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore --upgrade --target "$tools/ziglang" "ziglang==$ZIG_VERSION"
  fi
  if ! cargo zigbuild --version 2>/dev/null | grep -q " $ZIGBUILD_VERSION"; then
    echo "installing cargo-zigbuild $ZIGBUILD_VERSION (crates.io) into .tools/"
    cargo install -q --locked --root "$tools" --version "$ZIGBUILD_VERSION" cargo-zigbuild
  fi
}

# Node-API itself is never linked: Linux resolves it from the process at load time, macOS too (napi-build asks for
# `-undefined dynamic_lookup`), and Windows looks it up at run time (napi's `dyn-symbols`, Cargo.toml). Only
# napi-build's check for a `libnode.dll` on Windows GNU needs satisfying: an empty import library it links to no
# effect (DECISIONS.md N4).
empty_libnode() {
  local dir=$root/target/libnode-win32-x64
  mkdir -p "$dir"
  printf 'LIBRARY node.exe\nEXPORTS\n' >"$dir/node.def"
  x86_64-w64-mingw32-dlltool -d "$dir/node.def" -D node.exe -l "$dir/libnode.dll.a"
  : >"$dir/libnode.dll" # napi-build only checks that it exists; the linker takes libnode.dll.a first
  export LIBNODE_PATH=$dir
}

cargo_cmd=(cargo build)
case $platform in
  linux-x64-gnu) triple=x86_64-unknown-linux-gnu ;;
  linux-arm64-gnu) triple=aarch64-unknown-linux-gnu ;;
  linux-x64-musl) triple=x86_64-unknown-linux-musl ;;
  linux-arm64-musl) triple=aarch64-unknown-linux-musl ;;
  darwin-x64) triple=x86_64-apple-darwin ;;
  darwin-arm64) triple=aarch64-apple-darwin ;;
  win32-x64) triple=x86_64-pc-windows-gnu ;;
  *) echo "don't know how to build $platform" >&2; exit 2 ;;
esac
env_triple=$(echo "$triple" | tr 'a-z-' 'A-Z_')

rustup target list --installed | grep -qx "$triple" || rustup target add "$triple"
case $platform in
  linux-*-gnu)
    need_zigbuild
    # The `.2.17` suffix tells cargo-zigbuild which glibc to link against: the binary then loads on glibc 2.17 and
    # later (CentOS 7, Ubuntu 14.04 and newer), not only on this machine's.
    cargo_cmd=(cargo zigbuild --target "$triple.2.17")
    ;;
  linux-*-musl)
    need_zigbuild
    # Linked to musl dynamically, as Node on Alpine is: an addon with musl inside it cannot be loaded by dlopen.
    export "CARGO_TARGET_${env_triple}_RUSTFLAGS=-C target-feature=-crt-static"
    cargo_cmd=(cargo zigbuild --target "$triple")
    ;;
  darwin-*)
    need_zigbuild
    # zig's own default minimum is a recent macOS; these are rustc's minimums for the two targets.
    if [ "$platform" = darwin-x64 ]; then export MACOSX_DEPLOYMENT_TARGET=10.13; else export MACOSX_DEPLOYMENT_TARGET=11.0; fi
    # For macOS 10.15 and later mimalloc takes its random numbers from CCRandomGenerateBytes, which libSystem has
    # (zig links against it) but whose CommonCrypto headers zig does not carry: its two declarations, here.
    include=$root/target/macos-include/CommonCrypto
    mkdir -p "$include"
    printf '#pragma once\n#include <stddef.h>\n#include <stdint.h>\ntypedef int32_t CCCryptorStatus;\nenum { kCCSuccess = 0 };\n' >"$include/CommonCryptoError.h"
    printf '#pragma once\n#include <CommonCrypto/CommonCryptoError.h>\ntypedef CCCryptorStatus CCRNGStatus;\nCCRNGStatus CCRandomGenerateBytes(void *bytes, size_t count);\n' >"$include/CommonRandom.h"
    export "CFLAGS_${triple//-/_}=-I$root/target/macos-include"
    # A dylib's own install name defaults to the path it was linked at, which would carry this machine's build
    # directory into the package: the file's own name under @rpath says nothing about where it was built.
    export "CARGO_TARGET_${env_triple}_RUSTFLAGS=-C link-arg=-Wl,-install_name,@rpath/$(node -p "require('./npm/$platform/package.json').main")"
    cargo_cmd=(cargo zigbuild --target "$triple")
    ;;
  win32-x64)
    # The GNU target with Debian's MinGW: MSVC's libraries cannot be fetched here (DECISIONS.md N4).
    apt_install gcc-mingw-w64-x86-64 binutils-mingw-w64-x86-64
    empty_libnode
    cargo_cmd=(cargo build --target "$triple")
    ;;
esac

echo "building $platform ($triple): ${cargo_cmd[*]} --profile dist"
"${cargo_cmd[@]}" --profile dist -p noetic-core-binding

case $platform in
  darwin-*) built=target/$triple/dist/libnoetic_core_binding.dylib ;;
  win32-*) built=target/$triple/dist/noetic_core_binding.dll ;;
  *) built=target/$triple/dist/libnoetic_core_binding.so ;;
esac
main=$(node -p "require('./npm/$platform/package.json').main")
cp "$built" "npm/$platform/$main"
echo "npm/$platform/$main: $(du -h "npm/$platform/$main" | cut -f1)"

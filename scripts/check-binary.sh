#!/usr/bin/env bash
# Static checks of one platform package's binary (the one scripts/build-platform.sh made), for what cannot be run here
# and what running would not show: the file format and architecture, the oldest OS it loads on (glibc 2.17; macOS
# 10.13 or 11.0), the libraries it needs (no macOS framework; Windows system DLLs only, and not node.exe), the
# Node-API entry point (on Linux, the only symbol it exports), and that the symbol table is stripped.
#   bash scripts/check-binary.sh <platform> [FILE]
# The LLVM tools that read every format come from rustup (`llvm-tools`), installed on first use.
set -euo pipefail
cd "$(dirname "$0")/.."
platform=${1:?usage: bash scripts/check-binary.sh <platform> [FILE]}
file=${2:-npm/$platform/$(node -p "require('./npm/$platform/package.json').main")}
[ -f "$file" ] || { echo "$file is missing: build it with \`npm run build:platform -- $platform\`" >&2; exit 1; }

bin=$(rustc --print sysroot)/lib/rustlib/$(rustc -vV | sed -n 's/^host: //p')/bin
[ -x "$bin/llvm-readobj" ] || rustup component add llvm-tools >/dev/null
readobj() { "$bin/llvm-readobj" "$@" "$file"; }
fail() { echo "$platform: $*" >&2; exit 1; }

format=$(readobj --file-headers | sed -n 's/^Format: //p' | head -1)
case $platform in
  linux-x64-*) want=elf64-x86-64 ;;
  linux-arm64-*) want=elf64-littleaarch64 ;;
  darwin-x64) want='Mach-O 64-bit x86-64' ;;
  darwin-arm64) want='Mach-O arm64' ;;
  win32-x64) want=COFF-x86-64 ;;
esac
[ "$format" = "$want" ] || fail "format is '$format', not '$want'"

case $platform in
  linux-*)
    needed=$(readobj --dynamic-table | sed -n 's/.*NEEDED.*\[\(.*\)\]/\1/p' | sort -u | tr '\n' ' ')
    # The highest glibc symbol version it asks for is the oldest glibc it loads on.
    glibc=$(readobj --version-info | { grep -o 'GLIBC_[0-9.]*' || true; } | sed 's/GLIBC_//' | sort -V | tail -1)
    if [[ $platform == *-gnu ]]; then
      [ "$(printf '%s\n2.17\n' "$glibc" | sort -V | tail -1)" = 2.17 ] || fail "needs GLIBC_$glibc, more than 2.17"
      floor="glibc $glibc"
    else
      [ -z "$glibc" ] || fail "a musl binary asks for GLIBC_$glibc"
      [[ $needed == *musl* || $needed == *libc.so* ]] || fail "needs no C library: $needed"
      floor=musl
    fi
    readobj --sections | grep 'Name: .symtab ' >/dev/null && fail "is not stripped (.symtab)"
    # Node-API's entry point and nothing else: in particular no malloc or free of the addon's allocator (jemalloc
    # or mimalloc, DECISIONS S21), which would serve the whole process in place of its own.
    exported=$("$bin/llvm-nm" -D --defined-only "$file" | awk '{ print $NF }' | sort -u | tr '\n' ' ')
    [ "$exported" = "napi_register_module_v1 " ] || fail "exports more than napi_register_module_v1: $exported"
    echo "$platform: $format, $floor, needs $needed, stripped, exports napi_register_module_v1 only"
    ;;
  darwin-*)
    minos=$("$bin/llvm-objdump" --macho --private-headers "$file" | awk '/LC_BUILD_VERSION/ {b=1} b && $1 == "minos" {print $2; exit} /LC_VERSION_MIN_MACOSX/ {v=1} v && $1 == "version" {print $2; exit}')
    want_os=$([ "$platform" = darwin-x64 ] && echo 10.13 || echo 11.0)
    [ "$minos" = "$want_os" ] || fail "minimum macOS is '$minos', not $want_os"
    # The second line is the binary's own install name, the lines after it what it links.
    id=$("$bin/llvm-objdump" --macho --dylibs-used "$file" | sed -n 2p | awk '{print $1}')
    [[ $id == @rpath/* ]] || fail "names itself '$id', not @rpath/<file>: a build path leaks"
    dylibs=$("$bin/llvm-objdump" --macho --dylibs-used "$file" | tail -n +3 | awk '{print $1}' | tr '\n' ' ')
    [[ $dylibs != *.framework* ]] || fail "links a framework: $dylibs"
    "$bin/llvm-nm" --extern-only --defined-only "$file" | grep ' _napi_register_module_v1$' >/dev/null || fail "does not export napi_register_module_v1"
    echo "$platform: $format, macOS $minos or later, named $id, links $dylibs, exports napi_register_module_v1"
    ;;
  win32-*)
    dlls=$(readobj --coff-imports | sed -n 's/^ *Name: //p' | sort -u | tr '\n' ' ')
    for dll in $dlls; do
      case ${dll,,} in
        kernel32.dll | ntdll.dll | advapi32.dll | bcrypt.dll | bcryptprimitives.dll | ws2_32.dll | userenv.dll | msvcrt.dll | api-ms-win-*) ;;
        *) fail "imports $dll, which Windows does not have in every install" ;;
      esac
    done
    readobj --coff-exports | grep 'Name: napi_register_module_v1' >/dev/null || fail "does not export napi_register_module_v1"
    echo "$platform: $format, imports $dlls, exports napi_register_module_v1"
    ;;
esac

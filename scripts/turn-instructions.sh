#!/usr/bin/env bash
# Instructions a loaded session turn costs, counted by callgrind (DECISIONS N10): the sessions benchmark's workload
# (bench/sessions.mjs) under `node --predictable`, which runs V8 on one thread in a fixed order, so that two runs of
# one build agree to 0.05%. It runs at two sizes and divides the difference by the turns between them, which cancels
# start-up; what V8 compiles once still falls unevenly between the sizes, so effects under about 5 K instructions a
# turn are not told apart.
#   bash scripts/turn-instructions.sh LAYERS [SMALL LARGE]        our build (run `npm run build` first)
#   NOETIC_UPSTREAM_PKG=<upstream's packages/core> bash scripts/turn-instructions.sh --upstream LAYERS [SMALL LARGE]
# SMALL and LARGE are session counts (default 300 and 600); each session runs 5 turns. Prints the marginal
# instructions a turn, in all and by object file (the addon, node, JIT code as "???"). Needs valgrind.
set -euo pipefail
cd "$(dirname "$0")/.."
impl=ours
if [ "${1:-}" = --upstream ]; then
  impl=upstream
  shift
  [ -n "${NOETIC_UPSTREAM_PKG:-}" ] || { echo "set NOETIC_UPSTREAM_PKG to upstream's packages/core" >&2; exit 2; }
fi
layers=${1:?usage: bash scripts/turn-instructions.sh [--upstream] LAYERS [SMALL LARGE]}
small=${2:-300}
large=${3:-600}
command -v valgrind >/dev/null || { echo "valgrind is required (apt-get install valgrind)" >&2; exit 2; }
turns_per_session=$(sed -n 's/^const TURNS = \([0-9]*\);.*/\1/p' bench/sessions.mjs)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Instructions by object file of one run, as "count object" lines.
by_object() {
  valgrind --tool=callgrind --callgrind-out-file="$work/$1.out" \
    node --predictable bench/sessions.mjs --one "$impl" "$1" "$layers" >/dev/null 2>"$work/$1.err"
  callgrind_annotate --inclusive=no --threshold=100 "$work/$1.out" |
    sed -n 's/^ *\([0-9,]*\) ([^)]*) *[^ ]*:.*\[\(.*\)\] *$/\1 \2/p' | tr -d , |
    awk '{ n = split($2, path, "/"); sum[path[n]] += $1 } END { for (o in sum) print sum[o], o }'
}
by_object "$small" >"$work/small"
by_object "$large" >"$work/large"
turns=$(((large - small) * turns_per_session))
echo "$impl, $layers layers: instructions a turn between $small and $large sessions ($turns turns), node --predictable"
awk -v turns="$turns" '
  NR == FNR { small[$2] = $1; next }
  { delta[$2] = $1 - small[$2]; total += delta[$2] }
  END {
    printf "%12.1f K  in all\n", total / turns / 1000
    for (o in delta) if (delta[o] / turns >= 500) printf "%12.1f K  %s\n", delta[o] / turns / 1000, o
  }' "$work/small" "$work/large" | sort -rn

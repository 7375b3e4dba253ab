#!/usr/bin/env bash
# The part of `npm test` for the runtimes other than the machine's Node and Bun (README, "Supported runtimes"): the JS
# suite under Node 22 and Node 24, then the Deno program, which checks its own output. The runtimes are installed on
# first use (scripts/runtimes.sh). Each runs with its own bin directory first on PATH, so that a test which starts
# `node` by name gets the same Node.
set -euo pipefail
cd "$(dirname "$0")/.."

node22=$(bash scripts/runtimes.sh path node22)
node24=$(bash scripts/runtimes.sh path node24)
deno=$(bash scripts/runtimes.sh path deno)

for node in "$node22" "$node24"; do
  echo "== the JS suite under Node $("$node" --version)"
  PATH="$(dirname "$node"):$PATH" "$node" --expose-gc --test __test__/*.test.mjs
done

echo "== $("$deno" --version | head -1): __test__/deno/agent.mjs"
PATH="$(dirname "$deno"):$PATH" "$deno" run -A __test__/deno/agent.mjs

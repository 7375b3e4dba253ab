'use strict';
// Upstream's cwd helpers: plain reads and writes of a context's `cwdState`, so they stay in JS (A3c).

function getToolCwd(ctx, fallback) {
  return ctx?.cwdState?.cwd ?? fallback ?? process.cwd();
}

// A `cd` to where it already is changes nothing, so `previousCwd` (what `cd -` returns to) survives it.
function setToolCwd(ctx, nextCwd) {
  const state = ctx.cwdState;
  const currentCwd = state.cwd;
  if (nextCwd === currentCwd) return { previousCwd: state.previousCwd ?? currentCwd, newCwd: currentCwd };
  state.previousCwd = currentCwd;
  state.cwd = nextCwd;
  return { previousCwd: currentCwd, newCwd: nextCwd };
}

// A child's `cd` stays in the child.
function snapshotCwdState(parent) {
  return { cwd: parent.cwdState.cwd, previousCwd: parent.cwdState.previousCwd };
}

// For a spawn about to snapshot it, without touching its `cd` history; the returned function puts both back.
function retargetCwdForSpawn(ctx, nextCwd) {
  const { cwd, previousCwd } = ctx.cwdState;
  ctx.cwdState.cwd = nextCwd;
  return () => {
    ctx.cwdState.cwd = cwd;
    ctx.cwdState.previousCwd = previousCwd;
  };
}

module.exports = { getToolCwd, setToolCwd, snapshotCwdState, retargetCwdForSpawn };

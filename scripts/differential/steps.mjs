// steps: a random tree of step.run, branch, fork (all, settle), loop and spawn, run with harness.run: what each
// function receives (input, the ctx's depth and thread), each predicate's snapshot, each merge's results, and the
// output or error.
import { plain, runOutcome } from './shared.mjs';

export async function steps({ AgentHarness, step, branch, fork, loop, spawn, until }, { next, pick }) {
  const seen = [];
  let made = 0;
  // Paths of a fork run side by side, so which of them reaches a step first is timing, and so is how far a sibling
  // gets before a failing path's abort reaches it: inside a fork nothing fails, and the records are compared sorted.
  const tree = (depth, inFork = false) => {
    const id = `s${made++}`;
    const kind = depth >= 3 ? 'run' : pick(['run', 'run', 'branch', 'fork', 'loop', 'spawn']);
    switch (kind) {
      case 'branch': {
        const [a, b] = [tree(depth + 1, inFork), tree(depth + 1, inFork)];
        return branch({ id, route: (input, ctx) => (seen.push([id, 'route', plain(input), ctx.depth]), String(input).length % 3 === 0 ? null : String(input).length % 3 === 1 ? a : b) });
      }
      case 'fork': {
        const mode = pick(['all', 'settle']);
        const paths = [tree(depth + 1, true), tree(depth + 1, true)];
        return fork({ id, mode, paths: (input) => (seen.push([id, 'paths', plain(input)]), paths), merge: (results) => (seen.push([id, 'merge', plain(results)]), results.map((r) => (typeof r === 'object' && r !== null && 'status' in r ? `${r.status}:${r.value ?? r.error?.message ?? ''}` : String(r))).join('+')) });
      }
      case 'loop': {
        const limit = 1 + Math.floor(next() * 3);
        const stop = pick(['maxSteps', 'predicate']);
        const predicate = stop === 'maxSteps' ? until.maxSteps(limit) : (snapshot) => (seen.push([id, 'until', snapshot.stepCount, plain(snapshot.lastOutput), snapshot.lastText, snapshot.history.length]), { stop: snapshot.stepCount >= limit });
        return loop({ id, steps: [tree(depth + 1, inFork)], until: predicate, maxIterations: 5 });
      }
      case 'spawn':
        return spawn({ id, child: tree(depth + 1, inFork) });
      default: {
        const fail = next() < 0.15 && !inFork;
        const suffix = pick(['a', 'bb', 'ccc']);
        return step.run({ id, execute: async (input, ctx) => {
          seen.push([id, 'run', plain(input), ctx.depth, ctx.threadId]);
          if (fail) throw new Error(`${id} failed`);
          return `${typeof input === 'string' ? input : JSON.stringify(input)}${suffix}`;
        } });
      }
    }
  };
  const root = tree(0);
  const harness = new AgentHarness({ name: 'differential', params: {} });
  const outcome = await runOutcome(harness, root, pick(['x', 'yy', '']));
  return [...seen.map((x) => JSON.stringify(x)).sort(), JSON.stringify(outcome)];
}

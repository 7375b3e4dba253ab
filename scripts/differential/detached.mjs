// detached: runs started with harness.detachedSpawn under the default in-memory subprocess adapter: children that
// return text, an object, or undefined, that throw, or that take longer than an `await` timeout, some reading the
// parent's thread and state, and spawns (plain, and detached) inside them: each handle's status, result and error
// before and after its `await`, what `await` gives or throws, and what each child saw.
import { plain, sleep } from './shared.mjs';

export async function detached(api, { next, pick }) {
  const { AgentHarness, step, spawn } = api;
  const seen = [];
  const harness = new AgentHarness({ name: 'differential', params: {} });
  const child = (i) => {
    const kind = pick(['text', 'object', 'undefined', 'throws', 'slow', 'nested']);
    return step.run({
      id: `child-${i}-${kind}`,
      execute: async (input, ctx) => {
        seen.push([i, 'ran', kind, plain(input), ctx.threadId, plain(ctx.state), ctx.depth]);
        if (kind === 'throws') throw new Error(`child ${i} broke`);
        if (kind === 'slow') await sleep(60);
        if (kind === 'object') return { child: i, input };
        if (kind === 'undefined') return undefined;
        if (kind === 'nested') return ctx.harness.run(spawn({ id: `inner-${i}`, child: step.run({ id: `leaf-${i}`, execute: async (x) => `leaf saw ${x}` }) }), `from ${i}`, ctx);
        return `child ${i} did ${input}`;
      },
    });
  };
  const ctx = harness.createContext({ threadId: 'parent-thread', state: pick([undefined, { mood: 'calm' }]) });
  const out = [];
  const view = (handle) => [handle.status, plain(handle.result), handle.error ?? null];
  const handles = Array.from({ length: 1 + Math.floor(next() * 3) }, (_, i) => {
    const handle = harness.detachedSpawn(child(i), pick(['go', 'now']), ctx);
    out.push([i, 'started', typeof handle.id, view(handle)]);
    return handle;
  });
  for (const [i, handle] of handles.entries()) {
    const timeout = pick([undefined, undefined, 20, 2000]);
    try {
      out.push([i, 'awaited', plain(await handle.await(timeout))]);
    } catch (e) {
      out.push([i, 'await threw', e?.noeticError?.kind ?? e?.code ?? e?.name, String(e?.message ?? e).replace(/[0-9a-f]{8}-[0-9a-f-]{27}/g, '<id>').slice(0, 160)]);
    }
    out.push([i, 'after', view(handle)]);
  }
  await sleep(80);
  for (const [i, handle] of handles.entries()) out.push([i, 'settled', view(handle)]);
  return [...seen.map((x) => JSON.stringify(x)).sort(), ...out.map((x) => JSON.stringify(x))];
}

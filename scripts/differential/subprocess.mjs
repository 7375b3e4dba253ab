// subprocess: the default in-memory SubprocessAdapter called directly, and detached runs through an adapter of the
// user's own that the handle must poll. The adapter: step requests run by their executor or a stepRunner (a value,
// undefined, a thrown Error or string, never settling), process requests with or without a `run` option and a
// metadataInjector, then stop, pause, resume, isAlive, listLive, and with a storage the manifests it leaves and what
// a second adapter on that storage lists and reattaches; serializeError of assorted values. What user code sees of
// each: the keys and values of handles, their metadata and answers, in order. The polled adapter: a handle already
// ended at spawn, one that ends after some looks (completed, failed or stale, with assorted error payloads), one
// that `get` answers null for a few looks, one that never ends within a timed await, a spawn that rejects; each
// detached handle's status, result and error before and after its await, and what the await gives. Left out, as
// decided (DECISIONS M21): errors with a `code` or `hint` (ours keep them), a stopped handle without an error payload
// (ours says it was stopped), handles a poll never finds again (evicted: ours then reads failed), a handle's `done`
// and `metadata` (upstream's has neither).
import { plain, sleep } from './shared.mjs';

// Ids and times as placeholders, each distinct id numbered in order of first sight; a stack as whether it is one.
function normalizer() {
  const ids = new Map();
  const id = (text) => (ids.has(text) ? ids.get(text) : (ids.set(text, `<id${ids.size + 1}>`), ids.get(text)));
  return (value) =>
    JSON.parse(
      JSON.stringify(value === undefined ? 'undefined' : value, (key, v) => (key === 'stack' ? typeof v : v))
        .replace(/subprocess-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, id)
        .replace(/\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z/g, '<time>'),
    );
}

const shape = (norm, handle) => (handle == null ? handle : [Object.keys(handle), norm(handle)]);

async function direct(api, { next, pick }, out) {
  const { createInMemorySubprocessAdapter, createInMemoryStorage, serializeError } = api;
  const norm = normalizer();
  const storage = pick([undefined, createInMemoryStorage()]);
  const never = () => new Promise(() => {});
  const options = {
    ...(storage ? { storage } : {}),
    ...(next() < 0.5 ? { run: async (request) => void out.push(['run', request.command]) } : {}),
    ...(next() < 0.5 ? { stepRunner: pick([async (request) => `ran ${request.stepId}`, never]) } : {}),
    ...(next() < 0.3 ? { metadataInjector: (request) => ({ injected: request.kind ?? 'process' }) } : {}),
  };
  const adapter = createInMemorySubprocessAdapter(options);
  const executor = (i) =>
    pick([
      async () => ({ step: i }),
      async () => undefined,
      async () => {
        throw new TypeError(`step ${i} broke`);
      },
      async () => {
        throw `step ${i} threw text`;
      },
      never,
      undefined,
    ]);
  const request = (i) =>
    pick([
      () => ({ kind: 'step', stepId: `s${i}`, serializedInput: { n: i }, executionId: `e${i}`, overrides: { threadId: 't' }, _localExecutor: executor(i) }),
      () => ({ kind: 'step', stepId: `s${i}`, serializedInput: i, executionId: `e${i}`, overrides: {}, metadata: { tag: i, runtime: 'mine' } }),
      () => ({ command: `cmd${i}`, ...(next() < 0.5 ? { args: ['-v'], cwd: '/w' } : {}), ...(next() < 0.5 ? { metadata: { role: 'r' } } : {}) }),
      () => ({ kind: 'process', command: `cmd${i}` }),
    ])();
  const handles = [];
  for (let i = 0; i < 2 + Math.floor(next() * 3); i++) {
    const handle = await adapter.spawn(request(i));
    handles.push(handle);
    out.push(['spawned', i, shape(norm, handle)]);
  }
  await sleep(5);
  for (const [i, handle] of handles.entries()) out.push(['get', i, shape(norm, await adapter.get(handle.id)), await adapter.isAlive(handle)]);
  const some = pick(handles);
  const call = pick(['stop', 'stop', 'pause', 'resume']);
  out.push([call, norm(await adapter[call](some.id, ...(call === 'stop' ? [pick(['done', undefined])] : [])))]);
  out.push(['unknown', norm(await adapter[pick(['stop', 'pause', 'resume'])]('subprocess-missing'))]);
  out.push(['live', norm(await adapter.listLive())]);
  if (storage) {
    const keys = await storage.list('inMemorySubprocess:manifest:');
    out.push(['manifests', norm(await Promise.all(keys.map(async (key) => [key, await storage.get(key)])))]);
    const second = createInMemorySubprocessAdapter({ storage });
    out.push(['second live', norm(await second.listLive())]);
    const reattached = await second.reattach(pick(handles).id);
    out.push(['reattached', shape(norm, reattached), await second.isAlive(reattached ?? {})]);
  }
  const thrown = pick([new RangeError('out of range'), new Error('plain'), 'text', 7, null, { message: 'not an Error' }]);
  out.push(['serialized', norm(serializeError(thrown))]);
}

// An adapter of the user's own, which the handle must poll: each handle answers `looks` gets as running (or null
// first, when `hides`), then its end.
function pollable(end, { looks, hides = 0, startsEnded = false, rejects = false }) {
  const handles = new Map();
  return {
    async spawn(request) {
      if (rejects) throw new Error('no capacity');
      const id = `custom-${request.stepId}`;
      handles.set(id, { request, gets: 0 });
      const handle = { id, status: 'running', startedAt: 'then', metadata: { mine: true } };
      return startsEnded ? { ...handle, ...end } : handle;
    },
    async get(id) {
      const entry = handles.get(id);
      entry.gets += 1;
      if (entry.gets <= hides) return null;
      if (entry.gets <= hides + looks) return { id, status: 'running', startedAt: 'then', metadata: { mine: true, gets: entry.gets } };
      return { id, startedAt: 'then', ...end };
    },
    async stop(id) {
      return { kind: 'not_found', handleId: id };
    },
  };
}

async function polled(api, { next, pick }, out) {
  const { AgentHarness, step } = api;
  const harness = new AgentHarness({ name: 'differential', params: {} });
  const ctx = harness.createContext({ threadId: 'parent' });
  const ends = [
    { status: 'completed', metadata: { result: { done: true } } },
    { status: 'completed', metadata: {} },
    { status: 'failed', metadata: { error: { message: 'payload broke', name: 'RangeError', stack: 'at somewhere' } } },
    { status: 'failed', metadata: { error: { message: 5 } } },
    { status: 'failed', metadata: { error: 'just text' } },
    { status: 'failed', metadata: { error: { message: 'wrapped', noeticError: { kind: 'cancelled', reason: 'by test' } } } },
    { status: 'failed', metadata: {} },
    { status: 'stale', metadata: { error: { message: 'went stale' } } },
    { status: 'stopped', metadata: { error: { message: 'stopped with a payload' } } },
  ];
  const view = (handle) => [handle.status, plain(handle.result), handle.error ?? null];
  const runs = [];
  for (let i = 0; i < 1 + Math.floor(next() * 3); i++) {
    const kind = pick(['ends', 'ends', 'at spawn', 'hides', 'slow', 'rejects']);
    const looks = kind === 'slow' ? 80 : pick([0, 1, 3, 70]);
    const adapter = pollable(pick(ends), { looks, hides: kind === 'hides' ? 3 : 0, startsEnded: kind === 'at spawn', rejects: kind === 'rejects' });
    const s = step.run({ id: `polled-${i}`, execute: async (x) => x });
    const handle = harness.detachedSpawn(s, i, ctx, { subprocess: adapter });
    out.push(['started', i, kind, view(handle)]);
    runs.push([i, kind, handle]);
  }
  await sleep(0);
  for (const [i, kind, handle] of runs) {
    out.push(['before', i, view(handle)]);
    try {
      out.push(['awaited', i, plain(await handle.await(kind === 'slow' ? 15 : pick([undefined, 5000])))]);
    } catch (e) {
      out.push(['await threw', i, e?.noeticError?.kind ?? e?.name, String(e?.message ?? e), plain(e?.noeticError ?? null)]);
    }
    out.push(['after', i, view(handle)]);
  }
}

export async function subprocess(api, random) {
  const out = [];
  await direct(api, random, out);
  await polled(api, random, out);
  return out.map((line) => JSON.stringify(line));
}

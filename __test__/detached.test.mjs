// Detached runs (issue 12): harness.detachedSpawn and its handle, which adapter a step goes through, stopping and
// cancelling, and a manifest reattached by another process (replayed, or refused when its step is not built).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  AgentHarness,
  DetachedStatus,
  createInMemoryStorage,
  createInMemorySubprocessAdapter,
  isNoeticConfigError,
  isNoeticError,
  loop,
  step,
  until,
} from '../js/index.mjs';
import { runFixture, scratchDb, slow } from './helpers.mjs';

const harnessOf = (opts = {}) => new AgentHarness({ name: 'detached', params: {}, ...opts });
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// An in-memory adapter that records the requests it is given.
function recording() {
  const base = createInMemorySubprocessAdapter();
  const requests = [];
  return {
    requests,
    spawn: (request) => (requests.push(request), base.spawn(request)),
    get: (id) => base.get(id),
    stop: (id, reason) => base.stop(id, reason),
    pause: (id) => base.pause(id),
    resume: (id) => base.resume(id),
    isAlive: (handle) => base.isAlive(handle),
    reattach: (id) => base.reattach(id),
    listLive: () => base.listLive(),
  };
}

test('detached spawns run side by side in children of the caller, and their handles follow them to the end', async () => {
  const h = harnessOf();
  const parent = h.createContext({ threadId: 'T', resourceId: 'R' });
  const seen = [];
  const events = [];
  const double = step.run({
    id: 'double',
    execute: async (n, ctx) => {
      seen.push({ parent: ctx.parent, depth: ctx.depth, threadId: ctx.threadId, resourceId: ctx.resourceId, id: ctx.id });
      events.push(`start ${n}`);
      await sleep(20);
      events.push(`end ${n}`);
      return n * 2;
    },
  });
  const [a, b] = [h.detachedSpawn(double, 5, parent), h.detachedSpawn(double, 10, parent)];
  assert.deepEqual([a.status, b.status, a.done], [DetachedStatus.Running, 'running', false]);
  assert.deepEqual(await Promise.all([a.await(), b.await()]), [10, 20]);
  assert.deepEqual(events.slice(0, 2).sort(), ['start 10', 'start 5'], 'both started before either ended');
  assert.deepEqual([a.status, a.result, a.error, a.done], ['completed', 10, undefined, true]);
  assert.equal(a.metadata.result, 10);
  assert.equal(a.metadata.stepId, 'double');
  assert.equal(await a.await(), 10, 'a second await answers again');
  for (const [i, handle] of [a, b].entries()) {
    assert.equal(seen[i].parent, parent);
    assert.deepEqual([seen[i].depth, seen[i].threadId, seen[i].resourceId, seen[i].id], [1, 'T', 'R', handle.id]);
  }
  assert.notEqual(a.id, b.id);
});

test('a step that throws, even synchronously, fails its handle with the step_failed error the run gave', async () => {
  const h = harnessOf();
  const handle = h.detachedSpawn({ kind: 'run', id: 'boom', execute: () => { throw new Error('sync boom'); } }, 'x', h.createContext());
  await assert.rejects(handle.await(), (e) => {
    assert.ok(isNoeticError(e));
    assert.equal(e.noeticError.kind, 'step_failed');
    assert.equal(e.noeticError.stepId, 'boom');
    assert.equal(e.noeticError.cause.message, 'sync boom');
    return true;
  });
  assert.equal(handle.status, 'failed');
  assert.match(handle.error, /sync boom/);
});

test('the adapter a detached step goes through: the call\'s, else the step\'s, else the harness\'s', async () => {
  const [harnessAdapter, stepAdapter, callAdapter] = [recording(), recording(), recording()];
  const h = harnessOf({ subprocess: harnessAdapter });
  const parent = h.createContext({ threadId: 'T' });
  const plain = step.run({ id: 'plain', execute: async (x) => `plain:${x}` });
  const own = step.run({ id: 'own', execute: async (x) => `own:${x}`, subprocess: stepAdapter });

  assert.equal(await h.detachedSpawn(plain, 1, parent).await(), 'plain:1');
  assert.equal(await h.detachedSpawn(own, 2, parent).await(), 'own:2');
  const handle = h.detachedSpawn(own, 3, parent, { subprocess: callAdapter, threadId: 'other', cwdInit: '/work' });
  assert.equal(await handle.await(), 'own:3');

  assert.deepEqual(harnessAdapter.requests.map((r) => r.stepId), ['plain']);
  assert.deepEqual(stepAdapter.requests.map((r) => r.stepId), ['own']);
  const [request] = callAdapter.requests;
  assert.deepEqual(
    { kind: request.kind, stepId: request.stepId, input: request.serializedInput, executionId: request.executionId, overrides: request.overrides },
    { kind: 'step', stepId: 'own', input: 3, executionId: handle.id, overrides: { threadId: 'other', resourceId: undefined, cwdInit: '/work' } },
  );
  assert.equal(typeof request._localExecutor, 'function');
});

test('inside a run, a step.run goes through its own adapter or a harness adapter of the user\'s; the default one is skipped', async () => {
  const custom = recording();
  const h = harnessOf({ subprocess: custom });
  const counted = step.run({ id: 'inc', execute: async (n) => n + 1 });
  const body = loop({ id: 'three', steps: [counted], until: until.maxSteps(3) });
  assert.equal(await h.run(body, 0), 3);
  assert.deepEqual(custom.requests.map((r) => [r.stepId, r.serializedInput]), [['inc', 0], ['inc', 1], ['inc', 2]]);

  const own = recording();
  const plainHarness = harnessOf();
  assert.equal(await plainHarness.run(step.run({ id: 'own', execute: async (x) => x * 3, subprocess: own }), 7), 21);
  assert.deepEqual(own.requests.map((r) => r.stepId), ['own']);
  // The default adapter (no storage: nobody else can see its handles) is not called at all.
  const spawned = [];
  const original = plainHarness.subprocess.spawn;
  plainHarness.subprocess.spawn = (request) => (spawned.push(request), original(request));
  assert.equal(await plainHarness.run(counted, 1), 2);
  assert.deepEqual(spawned, []);

  // A failure comes back through the adapter as the run's own error.
  const failing = step.run({ id: 'bad', execute: async () => { throw new Error('nope'); }, subprocess: own });
  await assert.rejects(plainHarness.run(failing, 0), (e) => e.noeticError?.kind === 'step_failed' && /nope/.test(e.message));
});

test('await(timeout) rejects with a step_failed timeout and leaves the run going; a later await sees it end', async () => {
  const h = harnessOf();
  const slow = step.run({ id: 'slow', execute: async () => (await sleep(80), 'late') });
  const handle = h.detachedSpawn(slow, null, h.createContext());
  await assert.rejects(handle.await(20), (e) => e.noeticError?.kind === 'step_failed' && /timed out after 20ms/.test(e.noeticError.cause.message));
  assert.equal(handle.status, 'running');
  assert.equal(handle.result, undefined);
  assert.equal(await handle.await(), 'late');
  assert.equal(handle.status, 'completed');
});

test('await(timeout): a timeout past what a JS timer holds, or Infinity, waits for the run; NaN or a negative one is a config error', async () => {
  const overflowed = [];
  const onWarning = (warning) => overflowed.push(warning.name);
  process.on('warning', onWarning);
  try {
    const h = harnessOf();
    const slow = step.run({ id: 'slow-enough', execute: async () => (await sleep(30), 'done') });
    // setTimeout fires a wait of 2^31 ms or more at once: these rejected as timed out before the run ended.
    for (const timeout of [2 ** 31, 2 ** 40, Infinity, 0, null]) {
      assert.equal(await h.detachedSpawn(slow, null, h.createContext()).await(timeout), 'done', `await(${timeout})`);
    }
    const handle = h.detachedSpawn(slow, null, h.createContext());
    for (const timeout of [NaN, -1, '100']) {
      await assert.rejects(handle.await(timeout), (e) => isNoeticConfigError(e) && e.code === 'INVALID_TIMEOUT' && e.message.startsWith('DetachedHandle.await: the timeout is'));
    }
    assert.equal(await handle.await(), 'done', 'a refused await leaves the run going');
    await sleep(1);
    assert.deepEqual(overflowed, [], 'no TimeoutOverflowWarning');
  } finally {
    process.off('warning', onWarning);
  }
});

test('an adapter that never ends a handle: a timed await rejects, and the handle never reads completed', async () => {
  const neverEnds = {
    spawn: async () => ({ id: 'sp-1', status: 'running', startedAt: new Date().toISOString(), metadata: { runtime: 'never' } }),
    get: async (id) => ({ id, status: 'running', startedAt: new Date().toISOString(), metadata: { runtime: 'never' } }),
    stop: async (id) => ({ kind: 'not_found', handleId: id }),
  };
  const h = harnessOf({ subprocess: neverEnds });
  const handle = h.detachedSpawn(step.run({ id: 'x', execute: async (v) => v }), 1, h.createContext());
  await assert.rejects(handle.await(50), /timed out after 50ms/);
  await sleep(60);
  assert.equal(handle.status, 'running');
  assert.equal(handle.result, undefined);
});

test('an adapter that forgets a handle: the wait ends as handle_evicted after the grace period', { timeout: slow(60_000) }, async () => {
  const forgets = {
    spawn: async () => ({ id: 'sp-gone', status: 'running', startedAt: new Date().toISOString() }),
    get: async () => null,
  };
  const h = harnessOf({ subprocess: forgets });
  const handle = h.detachedSpawn(step.run({ id: 'gone', execute: async (v) => v }), 1, h.createContext());
  const started = Date.now();
  await assert.rejects(handle.await(), (e) => {
    assert.deepEqual(e.noeticError, { kind: 'handle_evicted', handleId: 'sp-gone', stepId: 'gone', gracePeriodMs: 500 });
    return true;
  });
  assert.ok(Date.now() - started >= 450);
  assert.equal(handle.status, 'failed');
});

test('a spawn the adapter refuses fails the handle at once, even before anyone awaits it', async () => {
  const refuses = { spawn: () => { throw new Error('no capacity'); }, get: async () => null };
  const h = harnessOf({ subprocess: refuses });
  const handle = h.detachedSpawn(step.run({ id: 'r', execute: async (v) => v }), 1, h.createContext());
  await sleep(0);
  assert.deepEqual([handle.status, handle.error], ['failed', 'no capacity']);
  await assert.rejects(handle.await(), /no capacity/);
});

test('stop() tells the adapter and aborts the child context; the handle fails saying it was stopped', async () => {
  const h = harnessOf();
  let childAborted;
  const worker = step.run({
    id: 'worker',
    execute: async (_, ctx) => {
      while (!ctx.aborted) await sleep(5);
      childAborted = ctx.abortReason;
      return 'saw the abort';
    },
  });
  const handle = h.detachedSpawn(worker, null, h.createContext());
  await sleep(15);
  const answer = await handle.stop('no longer needed');
  assert.equal(answer.kind, 'stopped');
  assert.equal(answer.handle.status, 'stopped');
  await assert.rejects(handle.await(), (e) => e.noeticError?.kind === 'step_failed' && /stopped: no longer needed/.test(e.noeticError.cause.message));
  await sleep(20);
  assert.equal(childAborted, 'no longer needed');
  assert.equal(handle.status, 'failed');
  await assert.rejects(handle.stop(42), (e) => isNoeticConfigError(e) && e.code === 'INVALID_STOP_REASON');
});

test('harness.cancel(ctx) aborts the context: its run in flight ends as cancelled', async () => {
  const h = harnessOf();
  const ctx = h.createContext();
  const wait = step.run({ id: 'wait', execute: async (_, c) => { while (!c.aborted) await sleep(5); return 'ended'; } });
  const next = step.run({ id: 'next', execute: async () => 'should not run' });
  const running = h.run(loop({ id: 'l', steps: [wait, next], until: until.maxSteps(1) }), null, ctx);
  await sleep(15);
  await h.cancel(ctx, 'user pressed stop');
  await assert.rejects(running, (e) => e.noeticError?.kind === 'cancelled' && e.noeticError.reason === 'user pressed stop');
  assert.equal(ctx.aborted, true);
  const other = h.createContext();
  await h.cancel(other);
  assert.equal(other.abortReason, 'cancelled');
  await assert.rejects(h.cancel({}), (e) => isNoeticConfigError(e) && e.code === 'INVALID_CONTEXT');
});

test('createContext({ parent }) makes a child: one deeper, its parent, a copy of the parent\'s cwd, its own state', async () => {
  const h = harnessOf();
  const parent = h.createContext({ state: { mood: 'calm' } });
  parent.cwdState.cwd = '/repo';
  const child = h.createContext({ parent });
  // As upstream: the state given or `{}`, not the parent's (so a detached run starts with `{}` too).
  assert.deepEqual(child.state, {});
  assert.deepEqual(h.createContext({ parent, state: { mood: 'busy' } }).state, { mood: 'busy' });
  assert.equal(child.parent, parent);
  assert.equal(child.depth, 1);
  assert.equal(child.cwdState.cwd, '/repo');
  child.cwdState.cwd = '/repo/sub';
  assert.equal(parent.cwdState.cwd, '/repo');
  assert.throws(() => h.createContext({ parent: harnessOf().createContext() }), (e) => e.code === 'INVALID_CONTEXT_OPTIONS');
});

test('bad calls of detachedSpawn are config errors', () => {
  const h = harnessOf();
  const s = step.run({ id: 's', execute: async (v) => v });
  assert.throws(() => h.detachedSpawn(s, 1, {}), (e) => isNoeticConfigError(e) && e.code === 'INVALID_CONTEXT');
  assert.throws(() => h.detachedSpawn(s, 1, harnessOf().createContext()), (e) => e.code === 'INVALID_CONTEXT');
  assert.throws(() => h.detachedSpawn(s, 1, h.createContext(), 'fast'), (e) => e.code === 'INVALID_DETACHED_OPTIONS');
  // Not a step: a config error that says so (it was a TypeError reading a property of null).
  for (const [bad, shown] of [[null, 'null'], [undefined, 'undefined'], ['s', '"s"'], [{ id: 'no kind' }, 'an object']]) {
    assert.throws(() => h.detachedSpawn(bad, 1, h.createContext()), (e) => isNoeticConfigError(e) && e.code === 'INVALID_STEP' && e.message === `detachedSpawn(step, input, parentCtx): step is ${shown}, not a step.`);
  }
});

test('reattach in the same process replays a step from its manifest through the harness the adapter was given to', async () => {
  const storage = createInMemoryStorage();
  const first = createInMemorySubprocessAdapter({ storage, stepRunner: () => new Promise(() => {}) });
  const spawned = await first.spawn({ kind: 'step', stepId: 'replayed-greet', serializedInput: 'Ada', executionId: 'e-1', overrides: { threadId: 'T9' } });
  step.run({ id: 'replayed-greet', execute: async (name, ctx) => `hello ${name} on ${ctx.threadId}` });
  const second = createInMemorySubprocessAdapter({ storage });
  harnessOf({ subprocess: second });
  const handle = await second.reattach(spawned.id);
  assert.deepEqual([handle.status, handle.metadata.reattachMode], ['running', 'replay']);
  let ended = handle;
  while (ended.status === 'running') ended = (await sleep(2), await second.get(spawned.id));
  assert.deepEqual([ended.status, ended.metadata.result], ['completed', 'hello Ada on T9']);
  assert.deepEqual(await second.listLive(), [], 'the manifest is gone once the replay ends');
});

test('a detached step SIGKILLed mid-run is reattached by another process: refused while its step is not built there, then replayed (SQLite)', { timeout: slow(60_000) }, async () => {
  const path = scratchDb('detached.db');
  const spawned = await runFixture('detached-run.mjs', ['spawn', path], { killWhen: (line) => line.handleId !== undefined });
  assert.equal(spawned.signal, 'SIGKILL', spawned.err);
  const [{ handleId }] = spawned.lines;

  // A process that has not built the step: a clear error, and the manifest stays for a later reattach.
  const refused = await runFixture('detached-run.mjs', ['reattach', path, handleId, 'unregistered']);
  assert.equal(refused.code, 0, refused.err);
  const [missing] = refused.lines;
  assert.deepEqual(missing.live, [handleId]);
  assert.equal(missing.status, 'failed');
  assert.deepEqual([missing.error.name, missing.error.code], ['NoeticConfigError', 'STEP_NOT_REGISTERED']);
  assert.match(missing.error.message, /step 'count-words'.*no step with that id is registered/);
  assert.deepEqual(missing.liveAfter, [handleId]);

  const replayed = await runFixture('detached-run.mjs', ['reattach', path, handleId, 'register']);
  assert.equal(replayed.code, 0, replayed.err);
  const [done] = replayed.lines;
  assert.deepEqual([done.reattached, done.mode, done.status], ['running', 'replay', 'completed']);
  assert.deepEqual(done.result, { words: 3, pid: done.pid, threadId: 'thread-7' });
  assert.deepEqual(done.liveAfter, []);
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { AgentHarness, NoeticConfigError, isNoeticConfigError, step, react } from '../js/index.mjs';
import { recordingModel, slow } from './helpers.mjs';

const base = (extra) => ({ id: 'x', slot: 1, scope: 'thread', hooks: {}, ...extra });
const harnessWith = (layers, opts = {}) => new AgentHarness({ name: 't', params: {}, memory: layers, ...opts });
const code = (fn) => {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof NoeticConfigError, `expected NoeticConfigError, got ${e}`);
    assert.ok(isNoeticConfigError(e));
    assert.ok(e.hint.length > 0, 'a config error carries a hint');
    return e.code;
  }
  assert.fail('expected a NoeticConfigError');
};

test('invalid layers are rejected where they are registered, each with its own code', () => {
  assert.equal(code(() => harnessWith([base({ hooks: { recall: 'not a function' } })])), 'INVALID_LAYER_HOOK');
  assert.equal(code(() => harnessWith([base({ budget: Number.NaN })])), 'INVALID_LAYER_BUDGET');
  assert.equal(code(() => harnessWith([base({ budget: { min: 900, max: 100 } })])), 'INVALID_LAYER_BUDGET');
  assert.equal(code(() => harnessWith([base({ budget: -5 })])), 'INVALID_LAYER_BUDGET');
  assert.equal(code(() => harnessWith([base({ id: undefined })])), 'INVALID_LAYER_ID');
  assert.equal(code(() => harnessWith([base({ slot: Number.NaN })])), 'INVALID_LAYER_SLOT');
  assert.equal(code(() => harnessWith([base({ scope: 'session' })])), 'INVALID_LAYER_SCOPE');
  assert.equal(code(() => harnessWith([base(), base()])), 'DUPLICATE_LAYER_ID');
  // react/spawn register their memory too.
  assert.equal(code(() => react({ model: 'm', memory: [base({ hooks: { init: 42 } })] })), 'INVALID_LAYER_HOOK');
  // Infinity is a legal budget.
  harnessWith([base({ budget: { min: 0, max: Number.POSITIVE_INFINITY } })]);
});

test('a throwing or malformed recall is a diagnostic; the run goes on and other layers still contribute', async () => {
  const diagnostics = [];
  const { model, requests } = recordingModel();
  const layers = [
    base({ id: 'thrower', hooks: { recall: async () => { throw new Error('recall broke'); } } }),
    base({ id: 'malformed', slot: 2, hooks: { recall: async () => ({ items: 'nope' }) } }),
    base({ id: 'good', slot: 3, hooks: { recall: async () => 'still here' } }),
  ];
  const harness = harnessWith(layers, { _testCallModel: model, onDiagnostic: (d) => diagnostics.push(d) });
  assert.equal(await harness.run(step.llm({ id: 's', model: 'm' }), 'hi'), 'ok');
  assert.deepEqual(diagnostics.map((d) => `${d.layerId}:${d.hook}`), ['thrower:recall', 'malformed:recall']);
  assert.match(diagnostics[0].message, /recall broke/);
  assert.match(diagnostics[1].message, /items/);
  assert.deepEqual(requests[0].items.map((i) => i.content[0].text), ['still here', 'hi']);
});

test('a hook that never resolves times out with a diagnostic, and the agent keeps its state', async () => {
  const diagnostics = [];
  const { model } = recordingModel();
  const layers = [
    base({ id: 'stuck', timeouts: { recall: 30 }, hooks: { init: async () => ({ state: { kept: true } }), recall: () => new Promise(() => {}) } }),
    base({ id: 'reader', slot: 2, hooks: { store: async ({ ctx }) => { diagnostics.push({ read: ctx.readLayerState('stuck') }); } } }),
  ];
  const harness = harnessWith(layers, { _testCallModel: model, onDiagnostic: (d) => diagnostics.push(d) });
  await harness.run(step.llm({ id: 's', model: 'm' }), 'hi');
  assert.deepEqual(diagnostics[0], { layerId: 'stuck', hook: 'recall', message: 'Timeout after 30ms' });
  assert.deepEqual(diagnostics[1], { read: { kept: true } });
});

test("a hook's signal aborts when its timeout fires; a hook that settles in time sees it unaborted", async () => {
  const seen = [];
  const { model } = recordingModel();
  const layers = [
    base({ id: 'slow', timeouts: { recall: 20 }, hooks: { recall: ({ signal }) => new Promise((resolve) => signal.addEventListener('abort', () => { seen.push(['slow', signal.reason.message]); resolve(null); })) } }),
    base({ id: 'quick', slot: 2, hooks: { recall: async ({ signal }) => { seen.push(['quick', signal.aborted]); return null; } } }),
  ];
  const harness = harnessWith(layers, { _testCallModel: model, onDiagnostic: () => {} });
  await harness.run(step.llm({ id: 's', model: 'm' }), 'hi');
  assert.deepEqual(seen, [['slow', 'Timeout after 20ms'], ['quick', false]]);
});

test('a short hook timeout fires on time while a hook with a far deadline is pending elsewhere', { timeout: 60_000 }, async () => {
  // The far hook arms the one deadline timer first (ten minutes); the short one must re-arm it, or it would wait too.
  let releaseFar;
  let farStarted;
  const started = new Promise((resolve) => (farStarted = resolve));
  const far = harnessWith([base({ id: 'far', timeouts: { recall: 600_000 }, hooks: { recall: () => (farStarted(), new Promise((resolve) => (releaseFar = resolve))) } })], { _testCallModel: recordingModel().model });
  const farRun = far.run(step.llm({ id: 's', model: 'm' }), 'first');
  await started;
  const diagnostics = [];
  const near = harnessWith([base({ id: 'near', timeouts: { recall: 25 }, hooks: { recall: () => new Promise(() => {}) } })], { _testCallModel: recordingModel().model, onDiagnostic: (d) => diagnostics.push(d) });
  assert.equal(await near.run(step.llm({ id: 's', model: 'm' }), 'second'), 'ok');
  assert.deepEqual(diagnostics, [{ layerId: 'near', hook: 'recall', message: 'Timeout after 25ms' }]);
  // The far hook was still waited for, and its answer, when it comes, is taken.
  releaseFar('remembered');
  assert.equal(await farRun, 'ok');
});

test('a hook that settles after its timeout changes nothing, and its late rejection is handled', async () => {
  const unhandled = [];
  const onUnhandled = (reason) => unhandled.push(reason);
  process.on('unhandledRejection', onUnhandled);
  try {
    let rejectLate;
    let resolveLate;
    const diagnostics = [];
    const { model, requests } = recordingModel();
    const layers = [
      base({ id: 'rejects', timeouts: { recall: 20 }, hooks: { recall: () => new Promise((_, reject) => (rejectLate = reject)) } }),
      base({ id: 'resolves', slot: 2, timeouts: { recall: 20 }, hooks: { recall: () => new Promise((resolve) => (resolveLate = resolve)) } }),
    ];
    const harness = harnessWith(layers, { _testCallModel: model, onDiagnostic: (d) => diagnostics.push(d) });
    await harness.run(step.llm({ id: 's', model: 'm' }), 'hi');
    rejectLate(new Error('too late'));
    resolveLate('too late as well');
    await new Promise((resolve) => setTimeout(resolve, 20));
    assert.deepEqual(diagnostics.map((d) => [d.layerId, d.message]), [['rejects', 'Timeout after 20ms'], ['resolves', 'Timeout after 20ms']]);
    assert.deepEqual(requests[0].items.map((i) => i.content[0].text), ['hi'], 'neither late answer reached the model');
    assert.deepEqual(unhandled, []);
  } finally {
    process.off('unhandledRejection', onUnhandled);
  }
});

test('an init that throws rejects the run with the very error it threw; onInitError disable skips the layer', async () => {
  const boom = new Error('cannot load');
  const { model } = recordingModel();
  const failing = base({ id: 'f', hooks: { init: async () => { throw boom; } } });
  await assert.rejects(harnessWith([failing], { _testCallModel: model, onDiagnostic() {} }).run(step.llm({ id: 's', model: 'm' }), 'hi'), (e) => e === boom);
  const optional = { ...failing, onInitError: 'disable', hooks: { ...failing.hooks, recall: async () => 'never' } };
  const { model: model2, requests } = recordingModel();
  await harnessWith([optional], { _testCallModel: model2, onDiagnostic() {} }).run(step.llm({ id: 's', model: 'm' }), 'hi');
  assert.deepEqual(requests[0].items.map((i) => i.content[0].text), ['hi']);
});

test('a step function that throws fails its step: step_failed, with the very error as its cause (as upstream)', async () => {
  const oops = new TypeError('bad input');
  const harness = harnessWith([]);
  await assert.rejects(harness.run(step.run({ id: 'r', execute: () => { throw oops; } }), 'x'), (e) => {
    assert.equal(e.message, "Step 'r' failed: bad input");
    assert.deepEqual({ ...e.noeticError, cause: undefined }, { kind: 'step_failed', stepId: 'r', cause: undefined, retriesExhausted: false });
    return e.noeticError.cause === oops;
  });
});

test('an LLM step without a provider is a NoeticConfigError NO_LLM_PROVIDER', async () => {
  await assert.rejects(harnessWith([]).run(step.llm({ id: 's', model: 'm' }), 'hi'), (e) => e.code === 'NO_LLM_PROVIDER');
});

test('the process exits promptly even when a hook never settles', () => {
  const script = fileURLToPath(new URL('./fixtures/hanging-hook.mjs', import.meta.url));
  const started = Date.now();
  const result = spawnSync(process.execPath, [script], { encoding: 'utf8', timeout: slow(20_000) });
  assert.equal(result.status, 0, result.stderr);
  assert.match(result.stdout, /run finished/);
  assert.ok(Date.now() - started < 15_000);
});

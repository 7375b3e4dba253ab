// Traces (issue 10, DECISIONS D14 / D22): one `memory.<hook>` span per hook call under the context's span, exported
// through the harness's trace exporter; exporters, createSpan and the attribute names as upstream.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AgentHarness, GenAI, InMemoryExporter, NoopExporter, ToolAttr, step, spawn, workingMemory, NoeticConfigError } from '../js/index.mjs';
import { SpanImpl } from '../js/internal-test.mjs';

const layer = (id, slot, hooks, extra = {}) => ({ id, slot, scope: 'execution', hooks, ...extra });
const summary = (spans) => spans.filter((s) => s.memory).map((s) => `${s.memory.hook}:${s.memory.layerId}:${s.memory.status}`);

function tracedHarness(memory, opts = {}) {
  const exporter = new InMemoryExporter();
  const diagnostics = [];
  const h = new AgentHarness({
    name: 'traced',
    params: {},
    memory,
    traceExporter: exporter,
    llm: { provider: 'scripted', script: ['one', 'two', 'three'] },
    onDiagnostic: (d) => diagnostics.push(d),
    ...opts,
  });
  return { h, exporter, diagnostics };
}

test('every hook call of a run becomes a memory span with its status, under the span of its context', async () => {
  const notes = layer('notes', 10, {
    init: async () => ({ state: { n: 0 } }),
    recall: async () => ({ items: [{ type: 'message', role: 'developer', content: 'remember this' }], tokenCount: 7 }),
    store: async ({ state }) => ({ state: { n: state.n + 1 } }),
    onComplete: async () => {},
  });
  const slow = layer('slow', 20, { recall: () => new Promise(() => {}) }, { timeouts: { recall: 20 } });
  const broken = layer('broken', 30, { store: async () => { throw new Error('disk full'); } });
  const { h, exporter } = tracedHarness([notes, slow, broken]);
  let ctxSpan;
  const probe = step.run({ id: 'probe', execute: async (input, ctx) => ((ctxSpan = ctx.span), input) });
  const ctx = h.createContext();
  await h.run(probe, 'x', ctx);
  await h.run(step.llm({ id: 'ask', model: 'm' }), 'hello', ctx);
  const spans = exporter.spans.filter((s) => s.memory);
  // Each run is an execution: init at its start, onComplete at its end.
  assert.deepEqual(summary(spans), [
    'init:notes:ok',
    'onComplete:notes:ok',
    'init:notes:ok',
    'recall:notes:ok',
    'recall:slow:timeout',
    'store:notes:ok',
    'store:broken:error',
    'onComplete:notes:ok',
  ]);
  const recall = spans.find((s) => s.memory.hook === 'recall' && s.memory.layerId === 'notes');
  assert.deepEqual(recall.memory.budget.used, 7);
  assert.equal(recall.memory.budget.yielded, recall.memory.budget.allocated - 7);
  assert.equal(recall.memory.itemCount, 1);
  assert.equal(recall.name, 'memory.recall');
  assert.equal(recall.attributes.get('memory.layer_id'), 'notes');
  const timeout = spans.find((s) => s.memory.status === 'timeout');
  assert.ok(timeout.memory.durationMs >= 15, `a timed-out hook took its timeout (${timeout.memory.durationMs} ms)`);
  assert.equal(timeout.memory.error.message, 'Timeout after 20ms');
  assert.equal(spans.find((s) => s.memory.status === 'error').memory.error.message, 'disk full');
  for (const span of spans) {
    assert.equal(span.parentSpanId, ctxSpan.spanId, 'a hook span hangs under its context span');
    assert.equal(span.traceId, ctxSpan.traceId);
    assert.ok(span.endTime >= span.startTime);
  }
  assert.equal(ctxSpan.spanId, ctx.id);
  // A hook called within a step names that step's span (O3: OpenTelemetry hangs it there); init and onComplete run
  // outside any step and name none.
  const ask = exporter.spans.find((s) => s.name === 'noetic.step' && s.attributes.get('noetic.step_id') === 'ask');
  assert.equal(recall.attributes.get('noetic.step_span_id'), ask.spanId);
  for (const span of spans.filter((s) => s.memory.hook === 'init' || s.memory.hook === 'onComplete')) {
    assert.equal(span.attributes.get('noetic.step_span_id'), undefined, `${span.memory.hook} ran outside any step`);
  }
});

test('a layer disabled by a failed init shows as skipped in every later span (D22)', async () => {
  const bad = layer('bad', 5, { init: async () => { throw new Error('no db'); }, recall: async () => 'never', store: async () => {} }, { onInitError: 'disable' });
  const good = layer('good', 10, { recall: async () => 'fine' });
  const { h, exporter, diagnostics } = tracedHarness([bad, good]);
  await h.run(step.llm({ id: 'ask', model: 'm' }), 'hello');
  assert.deepEqual(summary(exporter.spans), ['init:bad:error', 'recall:bad:skipped', 'recall:good:ok', 'store:bad:skipped']);
  assert.equal(diagnostics.length, 1);
});

test('spans of a spawn child hang under the child context, in the run\'s trace', async () => {
  const seen = layer('seen', 10, { recall: async () => null });
  const { h, exporter } = tracedHarness([seen]);
  const ids = {};
  const child = step.run({ id: 'child', execute: async (input, ctx) => ((ids.child = ctx.span), input) });
  const root = step.run({
    id: 'root',
    execute: async (input, ctx) => {
      ids.root = ctx.span;
      return input;
    },
  });
  const ctx = h.createContext();
  await h.run(root, 'x', ctx);
  await h.run(spawn({ id: 'sp', child }), 'y', ctx);
  assert.equal(ids.child.parentSpanId, ids.root.spanId);
  assert.equal(ids.child.traceId, ids.root.traceId);
});

test('built-in layers are traced too, and a harness without an exporter records nothing', async () => {
  const { h, exporter } = tracedHarness([workingMemory()]);
  await h.run(step.llm({ id: 'ask', model: 'm' }), 'hello');
  const hooks = summary(exporter.spans);
  assert.ok(hooks.includes('recall:working-memory:ok'), hooks.join(', '));
  assert.ok(hooks.includes('init:working-memory:ok'), hooks.join(', '));

  const plain = new AgentHarness({ name: 'plain', params: {}, memory: [layer('n', 1, { recall: async () => 'x' })], llm: { provider: 'scripted', script: ['a'] } });
  assert.ok(plain.traceExporter instanceof NoopExporter);
  let span;
  await plain.run(step.run({ id: 'r', execute: async (i, ctx) => ((span = ctx.span), i) }), 'x');
  span.addEvent('ignored');
  assert.equal(span.events, undefined, 'without an exporter, ctx.span records nothing (as upstream)');
});

test('an exporter that throws loses its spans, never the run', async () => {
  const warnings = [];
  const onWarning = (w) => warnings.push(w.message);
  process.on('warning', onWarning);
  try {
    const h = new AgentHarness({
      name: 'x',
      params: {},
      memory: [layer('n', 1, { recall: async () => 'x' })],
      traceExporter: { export: async () => { throw new Error('collector down'); } },
      llm: { provider: 'scripted', script: [{ text: 'fine' }] },
    });
    assert.equal(await h.run(step.llm({ id: 'ask', model: 'm' }), 'hi'), 'fine');
    await new Promise((r) => setTimeout(r, 20));
    assert.ok(warnings.some((m) => m.includes('collector down')), warnings.join('\n'));
  } finally {
    process.off('warning', onWarning);
  }
  assert.throws(() => new AgentHarness({ name: 'x', params: {}, traceExporter: {} }), (e) => e instanceof NoeticConfigError && e.code === 'INVALID_TRACE_EXPORTER');
});

test('exporters, createSpan and the attribute names behave as upstream', async () => {
  const exporter = new InMemoryExporter();
  const h = new AgentHarness({ name: 'x', params: {} });
  const root = h.createSpan('root', null);
  const child = h.createSpan('child', root);
  assert.ok(root instanceof SpanImpl, 'createSpan makes the SpanImpl that /internal/test exports');
  assert.equal(child.parentSpanId, root.spanId);
  assert.equal(child.traceId, root.traceId);
  await exporter.export([root, child, { spanId: 'plain', traceId: 't', parentSpanId: null }]);
  assert.equal(exporter.spans.length, 2, 'only SpanImpl instances are kept');
  assert.deepEqual(exporter.getChildSpans(root.spanId), [child]);
  assert.deepEqual(exporter.getTraceTree(root.traceId), [root, child]);
  assert.deepEqual(exporter.getSpansByName('child'), [child]);
  exporter.clear();
  assert.equal(exporter.spans.length, 0);
  assert.equal(await new NoopExporter().export([root]), undefined);
  assert.equal(GenAI.REQUEST_MODEL, 'gen_ai.request.model');
  assert.equal(GenAI.USAGE_OUTPUT_TOKENS, 'gen_ai.usage.output_tokens');
  assert.equal(ToolAttr.NEEDS_APPROVAL, 'tool.needs_approval');
});

test("each onItemAppend span counts what its hook passed on; the log takes the last hook's items", async () => {
  const note = (text) => ({ type: 'message', role: 'developer', content: [{ type: 'input_text', text }] });
  const adds = layer('adds', 10, { onItemAppend: async ({ items }) => ({ items: [...items, note('added')] }) });
  const fails = layer('fails', 20, { onItemAppend: async () => Promise.reject(new Error('no')) });
  const keeps = layer('keeps', 30, { onItemAppend: async ({ items }) => ({ items: items.slice(-1) }) });
  const { h, exporter } = tracedHarness([adds, fails, keeps]);
  const ctx = h.createContext();
  await h.run(step.llm({ id: 'ask', model: 'm' }), 'hello', ctx);
  // The step's input message, then the model's reply, each pass the three hooks.
  const spans = exporter.spans.filter((s) => s.memory?.hook === 'onItemAppend');
  assert.deepEqual(spans.slice(0, 3).map((s) => [s.memory.layerId, s.memory.status, s.memory.itemCount]), [
    ['adds', 'ok', 2],
    ['fails', 'error', undefined],
    ['keeps', 'ok', 1],
  ]);
  const texts = ctx.itemLog.items.map((item) => item.content?.[0]?.text);
  assert.deepEqual(texts.slice(0, 1), ['added'], "the input's pass left only what 'keeps' passed on");
});

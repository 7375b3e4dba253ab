// The OpenTelemetry subpath (issue 56, DECISIONS O1, O2): the harness's spans reach the tracer provider the user gave
// or registered, with their tree (executions, steps, model and tool calls, hooks), exact times, GenAI attributes and
// errors; nothing is recorded without a provider.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { trace, SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { z } from 'zod';
import { AgentHarness, step, spawn, fork, tool, loop, branch, until } from '../js/index.mjs';
import { createOtelTraceExporter } from '../js/otel.mjs';
import { fakeResponsesServer } from './fake-openrouter.mjs';

const notes = {
  id: 'notes',
  slot: 10,
  scope: 'execution',
  hooks: {
    recall: async () => ({ items: [{ type: 'message', role: 'developer', content: 'the user likes tea' }], tokenCount: 7 }),
    store: async () => {},
  },
};
const broken = { id: 'broken', slot: 20, scope: 'execution', hooks: { store: async () => { throw new Error('disk full'); } } };

// Our spans as the exporter was handed them, beside what OTel made of them, to compare times.
function teed(exporter) {
  const ours = [];
  return {
    ours,
    get tracing() {
      return exporter.tracing;
    },
    export: (spans) => (ours.push(...spans), exporter.export(spans)),
  };
}

function harnessWith(traceExporter, script = [{ text: 'hot tea it is' }]) {
  return new AgentHarness({ name: 'barista', params: {}, memory: [notes, broken], traceExporter, llm: { provider: 'scripted', script }, onDiagnostic: () => {} });
}

const ms = ([seconds, nanos]) => seconds * 1000 + nanos / 1e6;
const settle = () => new Promise((resolve) => setTimeout(resolve, 20));

test('an LLM step becomes an agent span over a chat span and its hook spans, with exact times and the GenAI attributes', async () => {
  const memory = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(memory)] });
  const exporter = teed(createOtelTraceExporter({ tracerProvider: provider }));
  const h = harnessWith(exporter);
  const ctx = h.createContext({ threadId: 'order-42' });
  await h.run(step.llm({ id: 'ask', model: 'tea-model' }), 'something warm', ctx);
  await settle();
  const spans = memory.getFinishedSpans();
  const named = (name) => spans.filter((s) => s.name === name);
  const [agent] = named('invoke_agent barista');
  const [chat] = named('chat tea-model');
  assert.ok(agent && chat, `spans: ${spans.map((s) => s.name).join(', ')}`);
  assert.equal(agent.parentSpanContext, undefined, 'the execution is the root');
  assert.equal(agent.attributes['gen_ai.operation.name'], 'invoke_agent');
  assert.equal(agent.attributes['gen_ai.conversation.id'], 'order-42');
  const [llm] = named('step llm ask');
  assert.equal(llm.parentSpanContext.spanId, agent.spanContext().spanId);
  assert.equal(chat.kind, SpanKind.CLIENT);
  assert.equal(chat.parentSpanContext.spanId, llm.spanContext().spanId);
  assert.equal(chat.attributes['gen_ai.operation.name'], 'chat');
  assert.equal(chat.attributes['gen_ai.request.model'], 'tea-model');
  assert.equal(chat.attributes['gen_ai.conversation.id'], 'order-42');
  assert.equal(typeof chat.attributes['gen_ai.usage.input_tokens'], 'number');
  assert.ok(chat.attributes['gen_ai.usage.output_tokens'] > 0);
  assert.equal(chat.attributes['gen_ai.output.messages'], undefined, 'no completion unless asked');
  const [recall] = named('memory.recall');
  assert.equal(recall.parentSpanContext.spanId, llm.spanContext().spanId, 'a hook span hangs under the step it ran in');
  assert.equal(recall.attributes['noetic.step_span_id'], undefined, 'the step is its parent, not an attribute');
  const ids = [llm, agent].map((s) => s.spanContext().spanId);
  assert.ok(spans.filter((s) => s.name.startsWith('memory.')).every((s) => ids.includes(s.parentSpanContext.spanId)));
  assert.equal(recall.attributes['noetic.layer_id'], 'notes');
  assert.equal(recall.attributes['noetic.hook'], 'recall');
  assert.equal(recall.attributes['noetic.status'], 'ok');
  assert.equal(recall.attributes['noetic.budget.used'], 7);
  assert.equal(recall.attributes['memory.layer_id'], undefined);
  assert.ok(spans.every((s) => s.spanContext().traceId === agent.spanContext().traceId), 'one trace');
  // The times are ours, to the microsecond.
  for (const span of spans) {
    const mine = exporter.ours.find((o) => (o.attributes.get('noetic.layer_id') ?? o.memory?.layerId) === span.attributes['noetic.layer_id'] && o.name === (span.attributes['noetic.hook'] ? `memory.${span.attributes['noetic.hook']}` : o.name) && ({ 'noetic.execution': 'invoke_agent barista', 'noetic.model_call': 'chat tea-model', 'noetic.step': 'step llm ask' }[o.name] ?? o.name) === span.name);
    assert.ok(mine, `our span for ${span.name}`);
    assert.ok(Math.abs(ms(span.startTime) - mine.startTime) < 0.01, `${span.name} starts when ours did`);
    assert.ok(Math.abs(ms(span.endTime) - mine.endTime) < 0.01, `${span.name} ends when ours did`);
  }
  assert.ok(ms(agent.startTime) <= ms(recall.startTime) && ms(chat.endTime) <= ms(agent.endTime));
});

test('a hook that throws is an error span with an exception event', async () => {
  const memory = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(memory)] });
  const h = harnessWith(createOtelTraceExporter({ tracerProvider: provider }));
  await h.run(step.llm({ id: 'ask', model: 'tea-model' }), 'hi');
  await settle();
  const store = memory.getFinishedSpans().find((s) => s.name === 'memory.store' && s.attributes['noetic.layer_id'] === 'broken');
  assert.deepEqual(store.status, { code: SpanStatusCode.ERROR, message: 'disk full' });
  assert.equal(store.attributes['error.type'], 'error');
  const [event] = store.events;
  assert.equal(event.name, 'exception');
  assert.equal(event.attributes['exception.message'], 'disk full');
  const fine = memory.getFinishedSpans().find((s) => s.name === 'memory.store' && s.attributes['noetic.layer_id'] === 'notes');
  assert.equal(fine.status.code, SpanStatusCode.UNSET);
});

test('a failing step makes its agent span an error; a spawn child hangs under its parent', async () => {
  const memory = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(memory)] });
  const h = harnessWith(createOtelTraceExporter({ tracerProvider: provider }));
  const boom = step.run({ id: 'boom', execute: async () => { throw new Error('kettle broke'); } });
  await assert.rejects(h.run(spawn({ id: 'sp', child: boom }), 'x'));
  await settle();
  const spans = memory.getFinishedSpans();
  const agents = spans.filter((s) => s.name === 'invoke_agent barista');
  assert.equal(agents.length, 2);
  const root = agents.find((s) => !s.parentSpanContext);
  const child = agents.find((s) => s.parentSpanContext);
  const spawned = spans.find((s) => s.name === 'step spawn sp');
  const failed = spans.find((s) => s.name === 'step run boom');
  assert.equal(spawned.parentSpanContext.spanId, root.spanContext().spanId);
  assert.equal(child.parentSpanContext.spanId, spawned.spanContext().spanId, 'the child runs under the spawn step');
  assert.equal(failed.parentSpanContext.spanId, child.spanContext().spanId);
  for (const span of [...agents, spawned, failed]) {
    assert.equal(span.status.code, SpanStatusCode.ERROR, span.name);
    assert.match(span.status.message, /kettle broke/);
  }
  assert.equal(failed.attributes['noetic.status'], 'error');
  assert.deepEqual(failed.events.map((e) => [e.name, e.attributes['exception.type']]), [['exception', 'error']]);
  assert.match(failed.events[0].attributes['exception.message'], /kettle broke/);
  assert.equal(child.attributes['noetic.depth'], 1);
});

test('steps are spans under the step they run in, with the model and tool calls of an LLM step under its own', async () => {
  const memory = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(memory)] });
  const exporter = teed(createOtelTraceExporter({ tracerProvider: provider }));
  const brew = tool({ name: 'brew', description: 'Brew tea.', input: z.object({ kind: z.string() }), execute: async ({ kind }) => `a pot of ${kind}` });
  const h = harnessWith(exporter, [{ toolCalls: [{ name: 'brew', arguments: { kind: 'green' } }] }, { text: 'Brewed.' }]);
  const ask = step.llm({ id: 'ask', model: 'tea-model', tools: [brew] });
  const body = loop({ id: 'rounds', steps: [branch({ id: 'pick', route: () => ask })], until: until.maxSteps(1) });
  assert.equal(await h.run(body, 'tea please'), 'Brewed.');
  await settle();
  const spans = memory.getFinishedSpans();
  const one = (name) => {
    const found = spans.filter((s) => s.name === name);
    assert.equal(found.length, 1, `one ${name} among ${spans.map((s) => s.name).join(', ')}`);
    return found[0];
  };
  const agent = one('invoke_agent barista');
  const [rounds, pick, llm, chat, ran] = ['step loop rounds', 'step branch pick', 'step llm ask', 'chat tea-model', 'execute_tool brew'].map(one);
  const parentOf = (span) => span.parentSpanContext?.spanId;
  assert.equal(parentOf(rounds), agent.spanContext().spanId);
  assert.equal(parentOf(pick), rounds.spanContext().spanId);
  assert.equal(parentOf(llm), pick.spanContext().spanId);
  assert.equal(parentOf(chat), llm.spanContext().spanId, 'the model call under its LLM step');
  assert.equal(parentOf(ran), llm.spanContext().spanId, 'the tool call under its LLM step');
  assert.deepEqual([llm.attributes['noetic.step_id'], llm.attributes['noetic.step_kind'], llm.attributes['noetic.status']], ['ask', 'llm', 'ok']);
  for (const [inner, outer] of [[rounds, agent], [pick, rounds], [llm, pick], [chat, llm], [ran, llm]]) {
    assert.ok(ms(outer.startTime) <= ms(inner.startTime) && ms(inner.endTime) <= ms(outer.endTime), `${inner.name} within ${outer.name}`);
    assert.equal(inner.status.code, SpanStatusCode.UNSET);
  }
  // Every exporter sees the step spans, with the times OTel was given.
  const ours = exporter.ours.filter((o) => o.name === 'noetic.step');
  assert.deepEqual(ours.map((o) => o.attributes.get('noetic.step_id')).sort(), ['ask', 'pick', 'rounds']);
  const mine = ours.find((o) => o.attributes.get('noetic.step_id') === 'ask');
  assert.ok(Math.abs(ms(llm.startTime) - mine.startTime) < 0.01 && Math.abs(ms(llm.endTime) - mine.endTime) < 0.01);
});

test('a path a race leaves behind still ends, its step and its execution', async () => {
  const memory = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(memory)] });
  const h = harnessWith(createOtelTraceExporter({ tracerProvider: provider }));
  const quick = step.run({ id: 'quick', execute: async () => 'fast' });
  const slow = step.run({ id: 'slow', execute: () => new Promise((resolve) => setTimeout(() => resolve('late'), 200)) });
  assert.equal(await h.run(fork({ id: 'race', mode: 'race', paths: () => [quick, slow] }), 'go'), 'fast');
  await settle();
  const spans = memory.getFinishedSpans();
  const slowSpan = spans.find((s) => s.name === 'step run slow');
  assert.ok(slowSpan, 'the dropped step has a span');
  assert.equal(slowSpan.status.code, SpanStatusCode.UNSET, 'left behind is no failure');
  assert.equal(slowSpan.attributes['noetic.status'], 'aborted', 'the race aborted its context before leaving it behind');
  // Its path's execution, dropped unfinished too, still ends, under the fork step.
  const path = spans.find((s) => s.spanContext().spanId === slowSpan.parentSpanContext?.spanId);
  assert.equal(path?.name, 'invoke_agent barista');
  assert.equal(path.attributes['noetic.status'], 'aborted');
  assert.equal(path.parentSpanContext.spanId, spans.find((s) => s.name === 'step fork race').spanContext().spanId);
});

test('attributes and events user code gives ctx.span arrive on its execution span', async () => {
  const memory = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(memory)] });
  const h = harnessWith(createOtelTraceExporter({ tracerProvider: provider }));
  const tag = step.run({
    id: 'tag',
    execute: async (input, ctx) => {
      ctx.span.setAttribute('customer.tier', 'gold');
      ctx.span.setAttribute('cart.items', 3);
      ctx.span.addEvent('cart.checked', { ok: true });
      return input;
    },
  });
  await h.run(tag, 'x');
  await settle();
  const agent = memory.getFinishedSpans().find((s) => s.name === 'invoke_agent barista');
  assert.equal(agent.attributes['customer.tier'], 'gold', 'kept as named');
  assert.equal(agent.attributes['cart.items'], 3);
  assert.equal(agent.attributes['gen_ai.operation.name'], 'invoke_agent');
  assert.deepEqual(agent.events.map((e) => [e.name, e.attributes]), [['cart.checked', { ok: true }]]);
});

test('a model call names its provider when the runtime knows it', async () => {
  const answer = { status: 'completed', output: [{ type: 'message', id: 'm', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: 'tea', annotations: [] }] }], usage: { input_tokens: 5, output_tokens: 1 } };
  const server = await fakeResponsesServer(() => ({ body: answer }));
  try {
    const chatOf = async (llm) => {
      const memory = new InMemorySpanExporter();
      const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(memory)] });
      const h = new AgentHarness({ name: 'barista', params: {}, llm, traceExporter: createOtelTraceExporter({ tracerProvider: provider }) });
      await h.run(step.llm({ id: 'ask', model: 'tea-model' }), 'hi');
      await settle();
      return memory.getFinishedSpans().find((s) => s.name === 'chat tea-model');
    };
    assert.equal((await chatOf({ provider: 'openrouter', apiKey: 'sk-or-test', baseUrl: server.baseUrl })).attributes['gen_ai.provider.name'], 'openrouter');
    assert.equal((await chatOf({ provider: 'scripted', script: [{ text: 'tea' }] })).attributes['gen_ai.provider.name'], undefined, 'the scripted model names none');
  } finally {
    server.close();
  }
});

test('each tool call is an execute_tool span under its LLM step, its arguments and result only when asked', async () => {
  const brew = tool({ name: 'brew', description: 'Brew tea.', input: z.object({ kind: z.string() }), execute: async ({ kind }) => `a pot of ${kind}` });
  const script = [{ toolCalls: [{ name: 'brew', arguments: { kind: 'green' } }, { name: 'grind', arguments: {} }] }, { text: 'Brewed.' }];
  for (const captureContent of [false, true]) {
    const memory = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(memory)] });
    const h = harnessWith(createOtelTraceExporter({ tracerProvider: provider, captureContent }), script);
    assert.equal(await h.run(step.llm({ id: 'ask', model: 'tea-model', tools: [brew] }), 'tea please'), 'Brewed.');
    await settle();
    const spans = memory.getFinishedSpans();
    const llm = spans.find((s) => s.name === 'step llm ask');
    const ran = spans.find((s) => s.name === 'execute_tool brew');
    const unknown = spans.find((s) => s.name === 'execute_tool grind');
    assert.equal(ran.parentSpanContext.spanId, llm.spanContext().spanId);
    assert.equal(unknown.parentSpanContext.spanId, llm.spanContext().spanId);
    assert.equal(ran.attributes['gen_ai.operation.name'], 'execute_tool');
    assert.equal(ran.attributes['gen_ai.tool.name'], 'brew');
    assert.match(ran.attributes['gen_ai.tool.call.id'], /./);
    assert.equal(ran.status.code, SpanStatusCode.UNSET);
    assert.deepEqual(unknown.status, { code: SpanStatusCode.ERROR, message: "Error: unknown tool 'grind'" });
    assert.equal(ran.attributes['gen_ai.tool.call.arguments'], captureContent ? '{"kind":"green"}' : undefined);
    assert.equal(ran.attributes['gen_ai.tool.call.result'], captureContent ? 'a pot of green' : undefined);
  }
});

test('prompts and completions only when the user opts in', async () => {
  const memory = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(memory)] });
  const exporter = createOtelTraceExporter({ tracerProvider: provider, captureContent: true });
  assert.equal(exporter.tracing, 'content');
  const h = harnessWith(exporter);
  await h.run(step.llm({ id: 'ask', model: 'tea-model', instructions: 'Be a barista.' }), 'something warm');
  await settle();
  const chat = memory.getFinishedSpans().find((s) => s.name === 'chat tea-model');
  assert.equal(chat.attributes['gen_ai.system_instructions'], 'Be a barista.');
  assert.match(chat.attributes['gen_ai.input.messages'], /something warm/);
  assert.match(chat.attributes['gen_ai.output.messages'], /hot tea it is/);
});

test('with no tracer provider registered the exporter says so and the harness records nothing', async () => {
  trace.disable();
  const exporter = createOtelTraceExporter();
  assert.equal(exporter.tracing, false);
  let exported = 0;
  const spy = { tracing: exporter.tracing, export: (spans) => ((exported += spans.length), exporter.export(spans)) };
  let span;
  const h = harnessWith(spy);
  await h.run(step.run({ id: 'look', execute: async (input, ctx) => ((span = ctx.span), input) }), 'x');
  await h.run(step.llm({ id: 'ask', model: 'tea-model' }), 'hi');
  await settle();
  assert.equal(exported, 0);
  assert.equal(span.name, undefined, 'ctx.span records nothing');
  // Registered later, a provider is seen by the next harness built.
  const memory = new InMemorySpanExporter();
  trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(memory)] }));
  try {
    assert.equal(exporter.tracing, true);
    await harnessWith(exporter).run(step.llm({ id: 'ask', model: 'tea-model' }), 'hi');
    await settle();
    assert.ok(memory.getFinishedSpans().some((s) => s.name === 'chat tea-model'));
  } finally {
    trace.disable();
  }
});

test('over the wire: OTLP/HTTP delivers the tree to a collector, decoded here', async () => {
  const received = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      received.push({ path: req.url, type: req.headers['content-type'], body: JSON.parse(body) });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const url = `http://127.0.0.1:${server.address().port}/v1/traces`;
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(new OTLPTraceExporter({ url }))] });
    const h = harnessWith(createOtelTraceExporter({ tracerProvider: provider }));
    await h.run(step.llm({ id: 'ask', model: 'tea-model' }), 'hi', h.createContext({ threadId: 'wire' }));
    await settle();
    await provider.forceFlush();
    const spans = received.flatMap((r) => r.body.resourceSpans.flatMap((rs) => rs.scopeSpans.flatMap((ss) => ss.spans)));
    assert.ok(received.every((r) => r.path === '/v1/traces' && r.type.startsWith('application/json')));
    const attr = (span, key) => {
      const value = span.attributes.find((a) => a.key === key)?.value;
      return value && (value.stringValue ?? value.intValue ?? value.doubleValue);
    };
    const agent = spans.find((s) => s.name === 'invoke_agent barista');
    const llm = spans.find((s) => s.name === 'step llm ask');
    const chat = spans.find((s) => s.name === 'chat tea-model');
    const store = spans.find((s) => s.name === 'memory.store' && attr(s, 'noetic.layer_id') === 'broken');
    assert.ok(agent && llm && chat && store, `arrived: ${spans.map((s) => s.name).join(', ')}`);
    assert.equal(llm.parentSpanId, agent.spanId);
    assert.equal(chat.parentSpanId, llm.spanId);
    assert.equal(store.parentSpanId, llm.spanId, 'a hook span under the step it ran in');
    assert.equal(chat.traceId, agent.traceId);
    assert.equal(chat.kind, 3, 'SPAN_KIND_CLIENT');
    assert.equal(attr(chat, 'gen_ai.request.model'), 'tea-model');
    assert.equal(attr(agent, 'gen_ai.conversation.id'), 'wire');
    assert.equal(store.status.code, 2, 'STATUS_CODE_ERROR');
    assert.equal(store.status.message, 'disk full');
    assert.ok(BigInt(agent.startTimeUnixNano) <= BigInt(chat.startTimeUnixNano) && BigInt(chat.endTimeUnixNano) <= BigInt(agent.endTimeUnixNano));
    await provider.shutdown();
  } finally {
    server.close();
  }
});

test('options it cannot use are a NoeticConfigError with a code and a hint', () => {
  const refused = (options, message) =>
    assert.throws(() => createOtelTraceExporter(options), (e) => e.code === 'INVALID_OTEL_OPTIONS' && e.message === message && /captureContent/.test(e.hint));
  refused({ captureContent: 'yes' }, 'createOtelTraceExporter: captureContent is "yes"; expected true or false.');
  refused({ tracerProvider: {} }, 'createOtelTraceExporter: tracerProvider is an object; expected an object with getTracer.');
  refused(null, 'createOtelTraceExporter: the options are null; expected an object.');
  assert.equal(createOtelTraceExporter(undefined).tracing, false);
});

test('without @opentelemetry/api installed, the exporter is a NoeticConfigError saying what to install', () => {
  // A process of its own whose resolver cannot find the API, as on an install without the optional peer dependency.
  const otel = fileURLToPath(new URL('../js/otel.cjs', import.meta.url));
  const program = `
    const Module = require('node:module');
    const resolve = Module._resolveFilename;
    Module._resolveFilename = function (request, ...rest) {
      if (request === '@opentelemetry/api') throw Object.assign(new Error("Cannot find module '@opentelemetry/api'"), { code: 'MODULE_NOT_FOUND' });
      return resolve.call(this, request, ...rest);
    };
    try {
      require(${JSON.stringify(otel)}).createOtelTraceExporter();
      console.log(JSON.stringify({ made: true }));
    } catch (e) {
      console.log(JSON.stringify({ name: e.name, code: e.code, message: e.message, hint: e.hint }));
    }`;
  const run = spawnSync(process.execPath, ['-e', program], { encoding: 'utf8' });
  const lines = run.stdout.trim().split('\n');
  const error = JSON.parse(lines.at(-1) || '{}');
  assert.equal(error.name, 'NoeticConfigError', run.stdout + run.stderr);
  assert.equal(error.code, 'OTEL_API_MISSING');
  assert.equal(error.message, 'createOtelTraceExporter needs the package @opentelemetry/api, which could not be loaded.');
  assert.match(error.hint, /npm install @opentelemetry\/api/);
});

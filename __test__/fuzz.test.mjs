// Random JS values through every crossing into the native runtime and back (issue 6). Each value comes back as
// JSON keeps it, with U+FFFD for a lone surrogate where Rust holds the text (DECISIONS B1), or it stays the very JS
// object, or it is refused with an error that says why. The generator is seeded: a failure names its seed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { z } from 'zod';
import { AgentHarness, NoeticConfigError, createInMemoryStorage, createSqliteStorage, step, tool } from '../js/index.mjs';
import { scratchDb, slow } from './helpers.mjs';


const SEED = Number(process.env.NOETIC_FUZZ_SEED ?? 20261122);

// V8's JSON.parse in Node 24 (and Deno 2.9) can misread an escaped object key as an earlier key ending in a backslash
// (nodejs/node#63785); the package reads such texts token by token there (js/json.cjs, json-keys.test.mjs), and so does
// `image` below, which would otherwise expect the misread keys.
const require = createRequire(import.meta.url);
const { parseByTokens, MISREADS_ESCAPED_KEYS } = require('../js/json.cjs');

// mulberry32: small, seedable, good enough to pick shapes.
function generator(seed) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n) => Math.floor(next() * n);
  const pick = (list) => list[int(list.length)];

  const pieces = ['a', 'Z', ' ', 'é', '日本', '😀', '😀'.slice(0, 1), '😀'.slice(1), '𝄞'.slice(1), '\u0000', '\n', '\t', '"', '\\', '\u2028', '\ufeff', '\ufffd', '{', '</x>', '\\ud83d'];
  const string = () => Array.from({ length: int(8) }, () => pick(pieces)).join('');
  const numbers = [0, -0, 1, -1, 0.1, 1e21, 1e-7, 5e-324, Number.MAX_VALUE, Number.MAX_SAFE_INTEGER, 2 ** 53 + 2, -(2 ** 31), Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY];
  const number = () => (next() < 0.7 ? pick(numbers) : (next() - 0.5) * 10 ** int(30));
  const keys = ['', 'a', 'type', '__proto__', '0', '10', '01', '-1', 'toJSON'];

  function value(depth = 0) {
    const roll = next();
    if (depth > 4 || roll < 0.45) {
      return pick([string, number, () => next() < 0.5, () => null, () => undefined])();
    }
    if (roll < 0.7) return Array.from({ length: int(6) }, () => value(depth + 1));
    const obj = {};
    for (let i = int(7); i > 0; i--) {
      const key = next() < 0.4 ? pick(keys) : string();
      // defineProperty, so that '__proto__' becomes a plain own key as JSON.parse would make it.
      Object.defineProperty(obj, key, { value: key === 'toJSON' ? 'not a function' : value(depth + 1), enumerable: true, writable: true, configurable: true });
    }
    return obj;
  }

  // A wide object: many keys at one level.
  const wide = () => Object.fromEntries(Array.from({ length: 500 + int(500) }, (_, i) => [`k${i}${string()}`, value(3)]));
  return { next, int, pick, string, value, wide };
}

// What a value is once it has crossed: its JSON form, with lone surrogates made U+FFFD in strings and keys.
function image(v) {
  const text = JSON.stringify(v);
  return text === undefined ? undefined : wellFormed(MISREADS_ESCAPED_KEYS ? parseByTokens(text) : JSON.parse(text));
}

function wellFormed(v) {
  if (typeof v === 'string') return v.toWellFormed();
  if (Array.isArray(v)) return v.map(wellFormed);
  if (v && typeof v === 'object') {
    const out = {};
    for (const [key, inner] of Object.entries(v)) {
      Object.defineProperty(out, key.toWellFormed(), { value: wellFormed(inner), enumerable: true, writable: true, configurable: true });
    }
    return out;
  }
  return v;
}

function nested(depth) {
  let v = 'leaf';
  for (let i = 0; i < depth; i++) v = { a: v };
  return v;
}

const stores = [
  ['createInMemoryStorage', () => createInMemoryStorage()],
  ['createSqliteStorage', () => createSqliteStorage(scratchDb('fuzz.db'))],
];

for (const [name, make] of stores) {
  test(`fuzz: ${name} returns every value as JSON keeps it, under any key, or refuses it clearly`, { timeout: slow(60_000) }, async () => {
    const g = generator(SEED);
    const storage = make();
    const keys = new Set();
    for (let i = 0; i < 600; i++) {
      const key = `${i}:${g.string()}`;
      const value = i % 50 === 0 ? g.wide() : g.value();
      const expected = image(value);
      if (expected === undefined) {
        await assert.rejects(storage.set(key, value), (e) => e instanceof NoeticConfigError && e.code === 'INVALID_STORAGE_VALUE', `seed ${SEED} #${i}`);
        continue;
      }
      await storage.set(key, value);
      keys.add(key.toWellFormed());
      assert.deepStrictEqual(await storage.get(key), expected, `seed ${SEED} #${i}: ${JSON.stringify(value)}`);
    }
    assert.deepEqual(new Set(await storage.list('')), keys);
    // Deep values: kept up to the limit, refused past it with the reason (DECISIONS B1).
    await storage.set('deep-ok', nested(120));
    assert.deepStrictEqual(await storage.get('deep-ok'), nested(120));
    await assert.rejects(storage.set('deep', nested(400)), (e) => e.code === 'INVALID_STORAGE_VALUE' && /deeper than 128 levels/.test(e.message) && e.message.includes("'deep'"));
  });
}

test('fuzz: run inputs and step outputs cross unchanged (strings made well-formed, objects by identity)', async () => {
  const g = generator(SEED + 1);
  const h = new AgentHarness({ name: 'fuzz', params: {} });
  for (let i = 0; i < 300; i++) {
    const input = g.string();
    const output = g.next() < 0.5 ? g.string() : g.value();
    const seen = [];
    const s = step.run({ id: 's', execute: async (x) => (seen.push(x), output) });
    const result = await h.run(s, input);
    assert.equal(seen[0], input.toWellFormed(), `seed ${SEED + 1} #${i} input`);
    if (typeof output === 'string') assert.equal(result, output.toWellFormed());
    else assert.equal(result, output, `seed ${SEED + 1} #${i}: a JS value comes back as itself`);
  }
});

test('fuzz: persisted layer state and thread ids reach a storage adapter as JSON keeps them', async () => {
  const g = generator(SEED + 2);
  const writes = [];
  const adapter = {
    get: async () => null,
    set: async (key, value) => void writes.push([key, value]),
    delete: async () => {},
    list: async () => [],
  };
  const diagnostics = [];
  let next;
  const layer = { id: 'fuzzed', slot: 1, scope: 'thread', hooks: { init: async () => ({ state: {} }), store: async () => ({ state: next }) } };
  const model = async () => ({ items: [{ id: 'm', type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'ok' }] }], usage: {} });
  const h = new AgentHarness({ name: 'fuzz', params: {}, storage: adapter, memory: [layer], _testCallModel: model, onDiagnostic: (d) => diagnostics.push(d) });
  const llm = step.llm({ id: 'llm', model: 'm' });
  for (let i = 0; i < 150; i++) {
    const value = i % 30 === 0 ? g.wide() : g.value();
    next = value === undefined || value === null ? { v: value } : value;
    const thread = g.string() || 'T';
    writes.length = 0;
    await h.run(llm, 'hi', { threadId: thread });
    assert.deepEqual(diagnostics, [], `seed ${SEED + 2} #${i}`);
    assert.equal(writes.length, 1, `seed ${SEED + 2} #${i}: one write of ${JSON.stringify(next)}`);
    assert.equal(writes[0][0], `layers/fuzzed/${thread.toWellFormed()}/state`);
    assert.deepStrictEqual(writes[0][1], image(next), `seed ${SEED + 2} #${i}: ${JSON.stringify(next)}`);
  }
  // Too deep a state is reported, and the run still succeeds.
  next = nested(400);
  assert.equal(await h.run(llm, 'hi', { threadId: 'deep' }), 'ok');
  assert.ok(diagnostics.some((d) => d.hook === 'persist' && /deeper than 128 levels/.test(d.message)), JSON.stringify(diagnostics));
});

test('fuzz: scripted replies and tool arguments cross as JSON keeps them', async () => {
  const g = generator(SEED + 3);
  for (let i = 0; i < 120; i++) {
    const text = g.string();
    const args = { payload: g.value(), note: g.string() };
    const result = g.next() < 0.5 ? g.string() : g.value();
    const received = [];
    const echoTool = tool({ name: 'echo', description: 'echo', input: z.any(), execute: async (a) => (received.push(a), result) });
    const script = [{ toolCalls: [{ name: 'echo', arguments: args }] }, { text }];
    const h = new AgentHarness({ name: 'fuzz', params: {}, llm: { provider: 'scripted', script } });
    const ctx = h.createContext();
    assert.equal(await h.run(step.llm({ id: 'llm', model: 'm', tools: [echoTool] }), 'go', ctx), text.toWellFormed(), `seed ${SEED + 3} #${i} text`);
    assert.deepStrictEqual(received[0], image(args), `seed ${SEED + 3} #${i} tool arguments`);
    // The tool's output, made an item natively, reads back in JS: a string made well-formed, any other value as
    // its JSON text (whose escapes keep lone surrogates as text, exactly as upstream's).
    const output = ctx.itemLog.items.find((item) => item.type === 'function_call_output')?.output;
    const expected = typeof result === 'string' ? result.toWellFormed() : JSON.stringify(result);
    assert.equal(output, expected, `seed ${SEED + 3} #${i} tool output`);
  }
});

// An item from JS keeps its very JSON text natively, so JS reads it back exactly (lone surrogates too); only text
// Rust takes out of it (the reply's text) holds U+FFFD.
const exactly = (v) => JSON.parse(JSON.stringify(v));

test("fuzz: a test model's reply items read back in JS exactly as JSON keeps them", async () => {
  const g = generator(SEED + 4);
  for (let i = 0; i < 200; i++) {
    const text = g.string();
    const extra = g.value();
    const model = async () => ({ items: [{ id: 'm', type: 'message', role: 'assistant', status: 'completed', extra, content: [{ type: 'output_text', text }] }], usage: {} });
    const h = new AgentHarness({ name: 'fuzz', params: {}, _testCallModel: model });
    const ctx = h.createContext();
    assert.equal(await h.run(step.llm({ id: 'llm', model: 'm' }), 'go', ctx), text.toWellFormed(), `seed ${SEED + 4} #${i} text`);
    const reply = ctx.itemLog.items.at(-1);
    // The model's own object stands in the log; what the native side holds of it is its exact JSON.
    assert.equal(reply.extra, extra, `seed ${SEED + 4} #${i}`);
    const last = ctx.itemLog.items.length;
    const native = JSON.parse(h._runtime.native.itemsJson(ctx.id, last - 1, last)[0]);
    assert.deepStrictEqual(native.extra, extra === undefined ? undefined : exactly(extra), `seed ${SEED + 4} #${i}: ${JSON.stringify(extra)}`);
  }
});

test('items with unusual JSON come back from the native log unchanged', async () => {
  const unusual = [
    { id: 'u1', type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: `half ${'😀'.slice(0, 1)} and ${'😀'.slice(1)} of an emoji` }] },
    { id: 'u2', type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'long '.repeat(200_000) }] },
    { id: 'u3', type: 'acme:numbers', values: [1e21, -0, 5e-324, 0.1, 2 ** 53 + 2, -1e-7], nested: [[[[1, [2, [3]]]]]] },
    { id: 'u4', type: 'reasoning', summary: [{ type: 'summary_text', text: '\u2028\u2029\u0000"\\' }] },
  ];
  // Seeded into a session, then previewed: the preview's items are read from the native log, not JS's objects.
  const h = new AgentHarness({ name: 'unusual', params: {}, strictItemSchemas: false });
  h.seedSessionHistory('T', unusual);
  const back = await h.previewRequestItems({ threadId: 'T' });
  assert.equal(back.length, unusual.length);
  unusual.forEach((item, i) => {
    assert.notEqual(back[i], item, 'read back from the native log, not the object handed over');
    assert.deepStrictEqual(back[i], JSON.parse(JSON.stringify(item)), item.id);
  });
});

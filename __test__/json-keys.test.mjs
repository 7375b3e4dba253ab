// Object keys written with an escape come back as written, on every engine. V8 12.8 and later (Node 24, Deno 2.9)
// can read such a key as an earlier key of the same length ending in a backslash (nodejs/node#63785); values cross
// from the runtime as JSON text, so js/json.cjs reads a text with such a key token by token there. On the other engines
// these tests pass either way; under Node 24 (`npm test` runs the suite there too) they fail without that reading.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { AgentHarness, createInMemoryStorage, createSqliteStorage, step } from '../js/index.mjs';
import { scratchDb } from './helpers.mjs';

const require = createRequire(import.meta.url);
const { parseByTokens, hasEscapedKey, MISREADS_ESCAPED_KEYS } = require('../js/json.cjs');

// Parsed by the engine, this makes the next same-shaped object's escaped key read as a backslash where it misreads.
const poison = () => JSON.parse(String.raw`{"h":[],"\\":0}`);
const own = (entries) => {
  const object = {};
  for (const [key, value] of entries) Object.defineProperty(object, key, { value, writable: true, enumerable: true, configurable: true });
  return object;
};

test('JSON text read token by token gives what JSON.parse gives on an engine that reads keys right', () => {
  const cases = [
    [String.raw`{"h":1,"\"":2}`, own([['h', 1], ['"', 2]])],
    [String.raw`{"a\nb":{"\\":[1,{"\u0041\t":null}]},"c":"x\"y"}`, own([['a\nb', own([['\\', [1, own([['A\t', null]])]]])], ['c', 'x"y']])],
    ['{"__proto__":{"x":1},"a":2}', own([['__proto__', { x: 1 }], ['a', 2]])],
    ['{"a":1,"b":2,"a":3}', { a: 3, b: 2 }],
    ['{"2":"two","1":"one","z":true}', { 1: 'one', 2: 'two', z: true }],
    [' [ -0 , 1e400 , 2.5e-3 , "\\ud800" , false , {} , [ ] , "" ] ', [-0, Infinity, 0.0025, '\ud800', false, {}, [], '']],
    ['"just a string"', 'just a string'],
  ];
  for (const [text, expected] of cases) {
    const read = parseByTokens(text);
    assert.deepStrictEqual(read, expected, text);
    if (Array.isArray(read)) assert.ok(Object.is(read[0], -0), 'negative zero stays negative');
  }
  // `__proto__` is an own key, and the object's prototype is untouched.
  const proto = parseByTokens('{"__proto__":{"polluted":true}}');
  assert.ok(Object.hasOwn(proto, '__proto__'));
  assert.equal(Object.getPrototypeOf(proto), Object.prototype);
  assert.equal({}.polluted, undefined);
  // Malformed text throws the engine's own SyntaxError.
  assert.throws(() => parseByTokens('{"a":'), SyntaxError);
  assert.throws(() => parseByTokens(String.raw`{"\"":1,}`), SyntaxError);
});

// Where the engine reads keys right, its JSON.parse is the reference for random values; seeded, so a failure repeats.
test('JSON text read token by token agrees with JSON.parse over random values', { skip: MISREADS_ESCAPED_KEYS && 'this engine misreads escaped keys' }, () => {
  let seed = 7;
  const random = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
  const pieces = ['a', '\\', '"', '\n', '\t', '\u0000', 'é', '😀', '\ud800', ':', ',', '{', ']', ' ', '__proto__'];
  const string = () => Array.from({ length: Math.floor(random() * 5) }, () => pieces[Math.floor(random() * pieces.length)]).join('');
  const value = (depth) => {
    const roll = random();
    if (depth > 4 || roll < 0.4) return [string(), random() * 1e6 - 5e5, -0, 1e21, true, false, null][Math.floor(random() * 7)];
    if (roll < 0.7) return Array.from({ length: Math.floor(random() * 4) }, () => value(depth + 1));
    return own(Array.from({ length: Math.floor(random() * 4) }, () => [string(), value(depth + 1)]));
  };
  for (let i = 0; i < 3000; i++) {
    const text = JSON.stringify(value(0), null, i % 3 === 0 ? 1 : undefined);
    assert.deepStrictEqual(parseByTokens(text), JSON.parse(text), text);
  }
});

test('a text is read token by token only when one of its keys holds an escape', () => {
  const withKey = [String.raw`{"\"":1}`, String.raw`{"a":"x\ny", "b\\" : 1}`, String.raw`[{"a":"q\\"},{"x\u0041":1}]`, String.raw`{"a":"\\\\","c\"d":1}`];
  const valuesOnly = [String.raw`{"a":"x\"y","b":"\\"}`, String.raw`["a\"",":"]`, String.raw`{"a":"q\\"}`, String.raw`{"a":"\":"}`, '{"plain":"text"}', String.raw`"\\"`];
  for (const text of withKey) assert.equal(hasEscapedKey(text), true, text);
  for (const text of valuesOnly) assert.equal(hasEscapedKey(text), false, text);
});

for (const [name, make] of [
  ['createInMemoryStorage', () => createInMemoryStorage()],
  ['createSqliteStorage', () => createSqliteStorage(scratchDb('json-keys.db'))],
]) {
  test(`${name} returns keys written with an escape as they were stored, after the engine read a key ending in a backslash`, async () => {
    const storage = make();
    const stored = [own([['h', 1], ['"', 2]]), own([['h', 1], ['\n', 2]]), own([['h', 1], ['\\', 2]])];
    for (const [i, value] of stored.entries()) await storage.set(`k${i}`, value);
    for (const [i, value] of stored.entries()) {
      poison();
      assert.deepStrictEqual(Object.keys(await storage.get(`k${i}`)), Object.keys(value), `k${i}`);
    }
  });
}

test("a layer's stored state and a persisted thread's items keep their escaped keys across the runtime", async () => {
  const state = own([['h', 1], ['"', 'quote']]);
  let seen;
  const layer = {
    id: 'quoted',
    slot: 100,
    scope: 'thread',
    hooks: {
      init: async ({ storage }) => {
        poison();
        seen = await storage.get('state');
        return { state };
      },
      store: async () => ({ state }),
    },
  };
  const storage = createInMemoryStorage();
  const reply = { id: 'a', type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'ok', annotations: [] }] };
  const harness = new AgentHarness({ name: 'json-keys', params: {}, storage, memory: [layer], initialStep: step.llm({ id: 'chat', model: 'test/model' }), _testCallModel: async () => ({ items: [reply] }) });
  for (let turn = 0; turn < 2; turn++) {
    await harness.execute(`turn ${turn}`, { threadId: 't' });
    await harness.getAgentResponse({ threadId: 't' });
  }
  assert.deepStrictEqual(Object.keys(seen ?? {}), ['h', '"'], 'the second turn reads back the state the first stored');

  // A second harness on the same storage reads the thread's history back from its text.
  const meta = own([['h', [1]], ['"', own([['\\', 'back']])]]);
  const model = async () => ({ items: [{ ...reply, id: 'm', meta }] });
  const persisted = createInMemoryStorage();
  const options = { name: 'p', params: {}, storage: persisted, persistSessions: true, initialStep: step.llm({ id: 'chat', model: 'test/model' }), _testCallModel: model };
  const first = new AgentHarness(options);
  await first.execute('hello', { threadId: 'p' });
  await first.getAgentResponse({ threadId: 'p' });
  const second = new AgentHarness(options);
  poison();
  const history = await second.previewRequestItems({ threadId: 'p' });
  assert.deepStrictEqual(history.find((item) => item.id === 'm')?.meta, meta);
});

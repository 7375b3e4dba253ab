// The error objects this package hands to user code look like upstream's to code that inspects them: the same own
// enumerable properties in the same order (what Object.keys, a spread, JSON.stringify and console.log show), the
// same names and classes, and NoeticError payloads whose first key is `kind`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import {
  AgentHarness,
  ItemSchemaRegistry,
  NoeticConfigError,
  NoeticErrorImpl,
  channel,
  fork,
  isNoeticConfigError,
  isNoeticError,
  react,
  step,
} from '../js/index.mjs';

const harness = () => new AgentHarness({ name: 'errors', params: {} });
const failureOf = async (promise) => {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  return assert.fail('expected a rejection');
};
const thrownBy = (fn) => {
  try {
    fn();
  } catch (error) {
    return error;
  }
  return assert.fail('expected a throw');
};

function assertConfigErrorShape(error) {
  assert.ok(error instanceof Error && error instanceof NoeticConfigError && isNoeticConfigError(error));
  assert.ok(!(error instanceof NoeticErrorImpl) && !isNoeticError(error));
  assert.equal(error.name, 'NoeticConfigError');
  assert.deepEqual(Object.keys(error), ['code', 'hint', 'docsUrl', 'name']);
  // message and stack are Error's own, not enumerable (engines add others of their own: Bun its line and column).
  assert.equal(Object.getOwnPropertyDescriptor(error, 'message')?.enumerable, false);
}

function assertNoeticErrorShape(error, kind) {
  assert.ok(error instanceof Error && error instanceof NoeticErrorImpl && isNoeticError(error));
  assert.ok(!(error instanceof NoeticConfigError));
  assert.equal(error.name, 'NoeticError');
  assert.deepEqual(Object.keys(error), ['noeticError', 'name']);
  assert.equal(error.noeticError.kind, kind);
  assert.equal(Object.keys(error.noeticError)[0], 'kind', `kind leads ${JSON.stringify(Object.keys(error.noeticError))}`);
}

test('a NoeticConfigError has its own docsUrl, undefined unless given, after code and hint and before name', () => {
  const plain = new NoeticConfigError({ code: 'SOME_CODE', message: 'Something is off.', hint: 'Fix it.' });
  assertConfigErrorShape(plain);
  assert.ok(Object.hasOwn(plain, 'docsUrl'));
  assert.equal(plain.docsUrl, undefined);
  assert.deepEqual({ ...plain }, { code: 'SOME_CODE', hint: 'Fix it.', docsUrl: undefined, name: 'NoeticConfigError' });
  assert.equal(JSON.stringify(plain), '{"code":"SOME_CODE","hint":"Fix it.","name":"NoeticConfigError"}');
  assert.equal(String(plain), 'NoeticConfigError: Something is off.');

  const linked = new NoeticConfigError({ code: 'C', message: 'm', hint: 'h', docsUrl: 'https://example.com/c' });
  assertConfigErrorShape(linked);
  assert.equal(linked.docsUrl, 'https://example.com/c');
  assert.equal(JSON.stringify(linked), '{"code":"C","hint":"h","docsUrl":"https://example.com/c","name":"NoeticConfigError"}');

  // Options it does not know are not copied onto it; a subclass keeps the shape.
  assertConfigErrorShape(new NoeticConfigError({ code: 'C', message: 'm', hint: 'h', extra: 1 }));
  class AppConfigError extends NoeticConfigError {}
  assertConfigErrorShape(new AppConfigError({ code: 'C', message: 'm', hint: 'h' }));
});

test('the config errors the package throws have that shape', () => {
  const emptyId = thrownBy(() => step.run({ id: '', execute: async () => 1 }));
  assertConfigErrorShape(emptyId);
  assert.equal(emptyId.code, 'EMPTY_STEP_ID');
  assertConfigErrorShape(thrownBy(() => react({ model: 'm', memory: [{ id: 'l', slot: 1, scope: 'session', hooks: {} }] })));
  assertConfigErrorShape(thrownBy(() => new AgentHarness({ name: 't', params: {}, memory: [{ id: 'l', slot: 1, scope: 'thread', hooks: { recall: 1 } }] })));
});

test('a NoeticErrorImpl has its payload, then its name, as own keys', () => {
  const error = new NoeticErrorImpl({ kind: 'budget_exceeded', field: 'cost', limit: 1, actual: 2 });
  assertNoeticErrorShape(error, 'budget_exceeded');
  assert.equal(error.message, 'Budget exceeded: cost limit 1, actual 2');
  assert.equal(
    JSON.stringify(error),
    '{"noeticError":{"kind":"budget_exceeded","field":"cost","limit":1,"actual":2},"name":"NoeticError"}',
  );
  const mismatch = thrownBy(() => new ItemSchemaRegistry({ items: [z.object({ type: z.literal('acme:x') })] }).parse({ type: 'acme:y' }));
  assertNoeticErrorShape(mismatch, 'item_schema_mismatch');
});

test('a failed step rejects with a NoeticError whose payload leads with its kind', async () => {
  const h = harness();
  const boom = new Error('boom');
  const failed = await failureOf(h.run(step.run({ id: 'boom', execute: async () => { throw boom; } }), 'x', h.createContext()));
  assertNoeticErrorShape(failed, 'step_failed');
  assert.deepEqual(Object.keys(failed.noeticError), ['kind', 'stepId', 'cause', 'retriesExhausted']);
  assert.equal(failed.noeticError.cause, boom);

  const retried = await failureOf(
    h.run(step.run({ id: 'again', retry: { maxAttempts: 2, backoff: 'fixed', initialDelay: 1 }, execute: async () => { throw new Error('again'); } }), 'x', h.createContext()),
  );
  assertNoeticErrorShape(retried, 'step_failed');
  assert.equal(retried.noeticError.retriesExhausted, true);

  const value = channel('error-shape-value', { schema: z.string(), mode: 'value' });
  const waited = await failureOf(h.run(step.run({ id: 'wait', execute: (_input, ctx) => ctx.recv(value, { timeout: 5 }) }), 'x', h.createContext()));
  assertNoeticErrorShape(waited, 'step_failed');
  assertNoeticErrorShape(waited.noeticError.cause, 'channel_timeout');
});

test("a config error a step throws is its failure's cause, and the message is the cause's own", async () => {
  const h = harness();
  const thrown = new NoeticConfigError({ code: 'APP_SETUP', message: 'Setup is missing.', hint: 'Set it up.' });
  const failed = await failureOf(h.run(step.run({ id: 'setup', execute: async () => { throw thrown; } }), 'x', h.createContext()));
  assertNoeticErrorShape(failed, 'step_failed');
  // Not "[APP_SETUP] Setup is missing.": upstream's message ends with the cause's message.
  assert.equal(failed.message, "Step 'setup' failed: Setup is missing.");
  const { cause } = failed.noeticError;
  assertConfigErrorShape(cause);
  assert.deepEqual([cause.code, cause.message, cause.hint], [thrown.code, thrown.message, thrown.hint]);
});

test('fork failures lead with their kind at every level, settled results too', async () => {
  const h = harness();
  const paths = () => [
    step.run({ id: 'bad', execute: async () => { throw new Error('bad'); } }),
    step.run({ id: 'good', execute: async () => 2 }),
  ];
  const partial = await failureOf(h.run(fork({ id: 'all', mode: 'all', paths, merge: (results) => results }), 'x', h.createContext()));
  assertNoeticErrorShape(partial, 'fork_partial');
  assert.deepEqual(Object.keys(partial.noeticError), ['kind', 'stepId', 'succeeded', 'failed']);
  assert.deepEqual(Object.keys(partial.noeticError.failed[0]), ['stepId', 'error']);
  assert.deepEqual(Object.keys(partial.noeticError.failed[0].error), ['kind', 'stepId', 'cause', 'retriesExhausted']);

  const settled = await h.run(fork({ id: 'settle', mode: 'settle', paths, merge: (results) => results }), 'x', h.createContext());
  assert.deepEqual(Object.keys(settled[0]), ['stepId', 'status', 'error']);
  assert.deepEqual(Object.keys(settled[0].error), ['kind', 'stepId', 'cause', 'retriesExhausted']);
});

test("a detached run's failure has the same shape", async () => {
  const h = harness();
  const handle = h.detachedSpawn(step.run({ id: 'detached', execute: async () => { throw new Error('detached'); } }), 1, h.createContext());
  const failed = await failureOf(handle.await());
  assertNoeticErrorShape(failed, 'step_failed');
  assert.deepEqual(Object.keys(failed.noeticError), ['kind', 'stepId', 'cause', 'retriesExhausted']);
});

// Shared fixtures for the JS tests: seed 002's custom layer, written as a user would.
import assert from 'node:assert/strict';
import { spawn as spawnProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { createMessage, isNoeticError, layerData, layerFn } from '../js/index.mjs';

// A developer's own key must not turn harnesses that the tests build without a model into OpenRouter clients.
delete process.env.OPENROUTER_API_KEY;
delete process.env.OPENROUTER_BASE_URL;

// The tests' time limits only guard against hangs. Under emulation (the release check runs the suite under qemu,
// about 20 times slower) they stretch by NOETIC_TEST_SLOWDOWN, so that a slow machine never fails a test.
const slowdown = Math.max(1, Number(process.env.NOETIC_TEST_SLOWDOWN) || 1);
export function slow(ms) {
  return ms * slowdown;
}

export function myCustomLayer() {
  return {
    id: 'my-custom-layer',
    name: 'My Custom Layer',
    slot: 275,
    scope: 'thread',
    budget: { min: 200, max: 1e3 },
    provides: {
      entryCount: layerData({ read: (state) => state.entries.length }),
      addEntry: layerFn({
        description: 'Add a new entry to the custom layer.',
        input: z.object({ text: z.string() }),
        output: z.void(),
        execute: async (args, state) => ({ result: undefined, state: { entries: [...state.entries, args.text], lastUpdated: Date.now() } }),
      }),
    },
    hooks: {
      async init({ storage }) {
        const saved = await storage.get('state');
        return { state: saved ?? { entries: [], lastUpdated: 0 } };
      },
      async recall({ state }) {
        if (!state.entries.length) return null;
        const content = `<my_context>\n${state.entries.join('\n')}\n</my_context>`;
        return { items: [createMessage(content, 'developer')], tokenCount: Math.ceil(content.length / 4) };
      },
    },
  };
}

// A layer that records every hook call into `log` as `hook:id`.
export function probe(id, slot, log, extra = {}) {
  const record = (hook) => async (params) => {
    log.push(`${hook}:${id}`);
    if (hook === 'init') return { state: { id } };
    if (hook === 'recall') return `${id} recalled`;
    return undefined;
  };
  const hooks = {};
  for (const hook of ['init', 'recall', 'store', 'onComplete', 'dispose']) hooks[hook] = record(hook);
  return { id, slot, scope: 'execution', hooks, ...extra };
}

// A test model that records what it was sent and answers with fixed text.
export function recordingModel(reply = 'ok') {
  const requests = [];
  const model = async (request) => {
    requests.push(request);
    return {
      items: [{ id: `m${requests.length}`, type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: reply }] }],
      usage: { inputTokens: 10, outputTokens: 2 },
    };
  };
  return { model, requests };
}

// A test model answering r1, r2, ... in turn, keeping the items of each request it was sent.
export function numberedReplies() {
  const requests = [];
  const model = async (request) => {
    requests.push(request.items);
    const text = `r${requests.length}`;
    return { items: [{ id: text, type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text }] }] };
  };
  return { model, requests };
}

// A test model that records the texts of each request's items (one list per call) and answers `re: <the last>`.
export function recorder() {
  const shown = [];
  const model = async (request) => {
    const texts = request.items.map((item) => item.content?.[0]?.text ?? item.type);
    shown.push(texts);
    return { items: [{ type: 'message', id: `a-${shown.length}-${Math.random()}`, role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: `re: ${texts.at(-1)}`, annotations: [] }] }] };
  };
  return { model, shown };
}

// An extension item type of our own, a schema that admits it, and an assistant reply item.
export const ticket = (id, extra = {}) => ({ id, type: 'acme:ticket', priority: 2, ...extra });
export const Ticket = z.object({ type: z.literal('acme:ticket'), priority: z.number() });
export const assistant = (text) => ({ id: `a-${text}`, type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text }] });

// An assert.throws / rejects validator: a NoeticError item_schema_mismatch with exactly `payload`, and a message
// naming `fragment` when given.
export function isMismatch(payload, fragment) {
  return (e) => {
    assert.ok(isNoeticError(e), `expected a NoeticError, got ${e?.stack ?? e}`);
    assert.deepEqual(e.noeticError, { kind: 'item_schema_mismatch', ...payload });
    if (fragment) assert.ok(e.message.includes(fragment), `'${e.message}' names ${fragment}`);
    return true;
  };
}

// A database path in a directory of its own under the temp folder; every such directory is removed when the
// process exits (under Node each test file is a process of its own, under Bun all of them are one).
const scratchDirs = [];
export function scratchDb(name = 'store.db') {
  if (scratchDirs.length === 0) {
    process.once('exit', () => {
      for (const dir of scratchDirs) rmSync(dir, { recursive: true, force: true });
    });
  }
  const dir = mkdtempSync(join(tmpdir(), 'noetic-test-'));
  scratchDirs.push(dir);
  return join(dir, name);
}


// Runs `fixtures/<name>` in a Node process of its own; resolves with its stdout lines (JSON, one per line) as they
// came, its exit code, signal and stderr, killing it with SIGKILL once `killWhen(line)` holds.
export function runFixture(name, args, { killWhen, env } = {}) {
  const fixture = fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));
  return new Promise((resolve, reject) => {
    const child = spawnProcess(process.execPath, [fixture, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
    const lines = [];
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk) => {
      out += chunk;
      let at;
      while ((at = out.indexOf('\n')) >= 0) {
        const line = JSON.parse(out.slice(0, at));
        out = out.slice(at + 1);
        lines.push(line);
        if (killWhen?.(line)) child.kill('SIGKILL');
      }
    });
    child.stderr.on('data', (chunk) => (err += chunk));
    child.on('error', reject);
    child.on('exit', (code, signal) => resolve({ lines, code, signal, err }));
  });
}

// Runs `inner` in `ctx` as one execution, then `read(ctx)` before that execution ends (its layer states end with
// it): what a test reads of a run's layer states.
export async function runAndRead(harness, inner, input, ctx, read) {
  const { step } = await import('../js/index.mjs');
  let seen;
  const outer = step.run({ id: 'run-and-read', execute: async (value, c) => {
    const output = await c.harness.run(inner, value, c);
    seen = await read(c);
    return output;
  } });
  const output = await harness.run(outer, input, ctx);
  return { output, seen };
}


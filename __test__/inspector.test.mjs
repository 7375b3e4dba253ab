// The inspector (`@noetic-tools/core/inspector`): what it records of each model call, how its server guards the
// page, and the page itself in a real browser (the system's Chromium, driven by puppeteer-core).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import http from 'node:http';
import { AgentHarness, createMessage, step } from '../js/index.mjs';
import { startInspector } from '../js/inspector.mjs';
import { slow } from './helpers.mjs';

// Three layers as a user might write them: one whose recall is far over its budget, one eventual, one whose recall
// throws.
const layers = () => [
  {
    id: 'notes',
    name: 'Notes',
    slot: 100,
    scope: 'thread',
    budget: { min: 10, max: 40 },
    hooks: {
      init: async ({ storage }) => ({ state: (await storage.get('state')) ?? { turns: 0 } }),
      recall: async () => ({ items: [createMessage('note '.repeat(200), 'developer')], tokenCount: 250 }),
      store: async ({ state }) => ({ state: { turns: state.turns + 1 } }),
    },
  },
  { id: 'facts', name: 'Facts', slot: 200, scope: 'thread', recallMode: 'eventual', hooks: { recall: async () => ({ items: [createMessage('fact: the sky is blue', 'developer')], tokenCount: 6 }) } },
  { id: 'broken', name: 'Broken', slot: 300, scope: 'thread', hooks: { recall: async () => { throw new Error('recall exploded'); } } },
];

const reply = async (request) => ({
  items: [{ type: 'message', id: `a-${Math.random()}`, role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: `seen ${request.items.length}`, annotations: [] }] }],
  usage: { inputTokens: 10, outputTokens: 2 },
});

function agent() {
  const harness = new AgentHarness({ name: 'inspected', params: {}, memory: layers(), initialStep: step.llm({ id: 'chat', model: 'm' }), _testCallModel: reply, onDiagnostic: () => {} });
  return harness;
}

async function turn(harness, text, threadId = 'T') {
  await harness.execute(text, { threadId });
  return harness.getAgentResponse({ threadId });
}

const apiUrl = (inspector, path, params = {}) => {
  const url = new URL(inspector.url);
  url.pathname = path;
  for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
  return url.toString();
};
const getJson = async (inspector, path, params) => (await fetch(apiUrl(inspector, path, params))).json();

// A raw request, so that the Host and Origin headers are exactly what a test says.
function request(inspector, { path = '/', method = 'GET', headers = {} } = {}) {
  const url = new URL(inspector.url);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: url.hostname, port: url.port, path: `${path}${url.search}`, method, headers: { host: url.host, ...headers } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode));
    });
    req.on('error', reject);
    req.end();
  });
}

test('each model call is recorded with the figures lastLayerUsage gives, the failing layer marked and the window itself', async () => {
  const harness = agent();
  const inspector = await startInspector(harness);
  try {
    const usages = [];
    for (const text of ['one', 'two', 'three']) usages.push((await turn(harness, text)).lastLayerUsage);
    const snapshot = await getJson(inspector, '/api/snapshot');
    assert.equal(snapshot.harness, 'inspected');
    assert.deepEqual(snapshot.layers.map((l) => [l.id, l.name]), [['notes', 'Notes'], ['facts', 'Facts'], ['broken', 'Broken']]);
    const [thread] = snapshot.recorder.threads;
    assert.equal(thread.threadId, 'T');
    assert.equal(thread.turns.length, 3);
    thread.turns.forEach((t, i) => {
      assert.equal(t.calls.length, 1);
      const [call] = t.calls;
      for (const layer of call.layers) {
        const expected = usages[i].layers.find((l) => l.layerId === layer.id)?.tokenCount ?? null;
        assert.equal(layer.used, expected, `turn ${i + 1}, ${layer.id}`);
      }
      const byId = Object.fromEntries(call.layers.map((l) => [l.id, l]));
      assert.equal(byId.broken.status, 'error');
      assert.equal(byId.broken.error, 'recall exploded');
      assert.ok(byId.notes.used > byId.notes.budget, 'the notes layer recalls past its budget');
      assert.equal(byId.facts.recallMode, 'eventual');
      assert.equal(call.history.overflow, 'sliding_window');
      assert.equal(call.history.total, 2 * i + 1);
    });
    // The whole call: the layers' items and the history kept, as the model got them, and the hook spans.
    const last = thread.turns[2].calls[0];
    const whole = await getJson(inspector, '/api/call', { id: last.id });
    assert.match(whole.layers.find((l) => l.id === 'notes').items[0].content[0].text, /^note note/);
    const history = whole.windowItems.history;
    assert.equal(history.length, 5);
    assert.deepEqual(history.filter((i) => i.role === 'user').map((i) => i.content[0].text), ['one', 'two', 'three']);
    assert.ok(whole.spans.some((s) => s.layerId === 'broken' && s.hook === 'recall' && s.status === 'error'));
    // The layers' states as their storage holds them for the thread.
    const states = await getJson(inspector, '/api/state', { thread: 'T' });
    assert.deepEqual(states.map((s) => s.id), ['notes', 'facts', 'broken']);
    assert.deepEqual(states[0], { id: 'notes', scope: 'thread', scopeKey: 'T', state: { turns: 3 } });
  } finally {
    await inspector.close();
  }
});

test('a harness never inspected records nothing, and a closed inspector forgets and stops recording', async () => {
  const harness = agent();
  await turn(harness, 'before');
  assert.deepEqual(JSON.parse(harness._runtime.native.inspectorSnapshot()).threads, []);
  const inspector = await startInspector(harness);
  await turn(harness, 'during');
  assert.equal(JSON.parse(harness._runtime.native.inspectorSnapshot()).threads.length, 1);
  await inspector.close();
  await turn(harness, 'after');
  assert.deepEqual(JSON.parse(harness._runtime.native.inspectorSnapshot()).threads, []);
  assert.equal(await fetch(inspector.url).then(() => 'answered', () => 'refused'), 'refused', 'the server is gone');
});

test('what it keeps is bounded: the newest turns of each thread, the most recently active threads', async () => {
  const harness = agent();
  const inspector = await startInspector(harness, { turnsPerThread: 2, threads: 2 });
  try {
    for (let i = 0; i < 5; i++) await turn(harness, `t${i}`, 'A');
    await turn(harness, 'b', 'B');
    await turn(harness, 'c', 'C');
    const { recorder } = await getJson(inspector, '/api/snapshot');
    assert.deepEqual(recorder.threads.map((t) => t.threadId), ['C', 'B']);
    assert.ok(recorder.threads.every((t) => t.turns.length <= 2));
  } finally {
    await inspector.close();
  }
});

test('the server answers only with the token, from its own origin and host, and only reads', async () => {
  const harness = agent();
  const inspector = await startInspector(harness);
  try {
    assert.match(inspector.url, /^http:\/\/127\.0\.0\.1:\d+\/\?token=[0-9a-f]{48}$/);
    assert.equal(await request(inspector), 200);
    const withoutToken = new URL(inspector.url);
    withoutToken.search = '';
    assert.equal((await fetch(withoutToken)).status, 401);
    withoutToken.searchParams.set('token', 'x'.repeat(48));
    assert.equal((await fetch(withoutToken)).status, 401);
    assert.equal(await request(inspector, { method: 'POST' }), 405);
    assert.equal(await request(inspector, { headers: { origin: 'http://evil.example' } }), 403);
    assert.equal(await request(inspector, { headers: { 'sec-fetch-site': 'cross-site' } }), 403);
    assert.equal(await request(inspector, { headers: { host: 'rebound.example:80' } }), 403, 'a name rebound to 127.0.0.1');
    const page = await fetch(inspector.url);
    assert.equal(page.headers.get('referrer-policy'), 'no-referrer');
    assert.match(page.headers.get('content-security-policy'), /connect-src 'self'/);
    await assert.rejects(startInspector(harness), { code: 'INSPECTOR_ALREADY_OPEN' });
  } finally {
    await inspector.close();
  }
  await assert.rejects(startInspector({}), { code: 'INVALID_INSPECTOR_TARGET' });
  for (const bad of [{ port: -1 }, { port: 1.5 }, { host: '' }, { turnsPerThread: 0 }, { threads: 'many' }]) {
    await assert.rejects(startInspector(harness, bad), { code: 'INVALID_INSPECTOR_OPTIONS' }, JSON.stringify(bad));
  }
});

// The system's Chromium (Debian's `chromium`, which .ci/run installs); CHROMIUM_PATH names another.
const chromium = process.env.CHROMIUM_PATH ?? ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => existsSync(p));
const browserSkip = chromium ? false : 'no Chromium on this machine';

test('in the browser: the thread, its turns and layer figures, the failing layer, a live fourth turn, no token no page', { skip: browserSkip, timeout: slow(120_000) }, async () => {
  const { default: puppeteer } = await import('puppeteer-core');
  const harness = agent();
  const inspector = await startInspector(harness);
  const browser = await puppeteer.launch({
    executablePath: chromium,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  try {
    const usages = [];
    for (const text of ['one', 'two', 'three']) usages.push((await turn(harness, text)).lastLayerUsage);
    const page = await browser.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(e.message));
    assert.equal((await page.goto(inspector.url)).status(), 200);
    await page.waitForSelector('[data-thread="T"]');
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="turns"] .col').length === 3);
    assert.match(await page.$eval('[data-testid="turn-title"]', (n) => n.textContent), /^Turn 3 of 3/);
    // Each layer row's tokens are lastLayerUsage's for that call.
    const rows = await page.$$eval('[data-layer]', (trs) => trs.map((tr) => ({ id: tr.dataset.layer, used: tr.querySelector('[data-used]').dataset.used, status: tr.querySelector('[data-status]').dataset.status, failed: tr.classList.contains('failed') })));
    for (const row of rows) {
      const expected = usages[2].layers.find((l) => l.layerId === row.id)?.tokenCount;
      assert.equal(row.used, expected === undefined ? '' : String(expected), row.id);
    }
    assert.deepEqual(rows.find((r) => r.id === 'broken'), { id: 'broken', used: '', status: 'error', failed: true });
    // Opening the window shows the items the model saw.
    await page.click('[data-testid="window-items"] > summary');
    await page.waitForSelector('[data-testid="spans"]');
    assert.match(await page.$eval('.window', (n) => n.textContent), /History kept \(5\).*three/s);

    // A fourth turn arrives over the live feed, with no reload.
    await page.evaluate(() => (window.__sameDocument = true));
    await turn(harness, 'four');
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="turns"] .col').length === 4, { timeout: slow(10_000) });
    assert.equal(await page.evaluate(() => window.__sameDocument), true, 'the page was not reloaded');
    assert.match(await page.$eval('[data-testid="turn-title"]', (n) => n.textContent), /^Turn 4 of 4/);

    // Without the token there is no page, and the page's own requests without it are refused.
    const bare = new URL(inspector.url);
    bare.search = '';
    assert.equal(await page.evaluate((u) => fetch(u).then((r) => r.status), `${bare.origin}/api/snapshot`), 401);
    const other = await browser.newPage();
    assert.equal((await other.goto(bare.toString())).status(), 401);
    assert.deepEqual(errors, []);
  } finally {
    await browser.close();
    await inspector.close();
  }
});

test("tool calls carry the layers' steering: which layer denied one, and a guide after the model's reply", async () => {
  const { z } = await import('zod');
  const { tool } = await import('../js/index.mjs');
  const remove = tool({ name: 'delete_files', description: 'deletes', input: z.object({ path: z.string() }), execute: async () => 'deleted' });
  const list = tool({ name: 'list_files', description: 'lists', input: z.object({}), execute: async () => 'a.txt' });
  const guard = { id: 'guard', slot: 10, scope: 'thread', hooks: { beforeToolCall: async ({ toolName }) => (toolName === 'delete_files' ? { decision: { action: 'deny', guidance: 'never delete' } } : undefined) } };
  let guided = false;
  const tone = { id: 'tone', slot: 20, scope: 'thread', hooks: { afterModelCall: async () => (guided ? undefined : ((guided = true), { decision: { action: 'guide', guidance: 'be brief' } })) } };
  const script = [{ toolCalls: [{ name: 'delete_files', arguments: { path: '/' } }, { name: 'list_files', arguments: {} }] }, { text: 'long answer' }, { text: 'done' }];
  const harness = new AgentHarness({ name: 'steered', params: {}, memory: [guard, tone], initialStep: step.llm({ id: 'chat', model: 'm', tools: [remove, list] }), llm: { provider: 'scripted', script }, onDiagnostic: () => {} });
  const inspector = await startInspector(harness);
  try {
    await turn(harness, 'clean up');
    const { recorder } = await getJson(inspector, '/api/snapshot');
    const calls = recorder.threads[0].turns[0].calls;
    const first = calls[0];
    const [denied, allowed] = first.toolCalls;
    assert.deepEqual([denied.name, denied.steering], ['delete_files', { action: 'deny', guidance: 'never delete', by: ['guard'] }]);
    assert.deepEqual([allowed.name, allowed.steering], ['list_files', { action: 'allow', by: [] }]);
    assert.deepEqual(first.steering, { action: 'guide', guidance: 'be brief', by: ['tone'] });
  } finally {
    await inspector.close();
  }
});

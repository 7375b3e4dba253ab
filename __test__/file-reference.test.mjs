// fileReference (issue 11, spec §20.7): `#path` references become anchors, the files are read through the harness's
// `fs` (natively for the in-memory one, in one request for a JS adapter), scored through the model, injected by
// priority within the budget, and re-rendered when they change.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import * as fsp from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { AgentHarness, NoeticConfigError, createInMemoryFsAdapter, createMessage, fileReference, step, tool } from '../js/index.mjs';
import { recordingModel, scratchDb, slow } from './helpers.mjs';

const SCORER = 'You are a relevance scorer. Respond with only a number 0-100.';
const textOf = (item) => item.content.map((part) => part.text).join('');
const userTexts = (items) => items.filter((item) => item.role === 'user').map(textOf);
const referenced = (items) => items.filter((item) => item.role === 'developer' && textOf(item).startsWith('# Referenced Files')).map(textOf);
const reply = (text) => ({ items: [{ id: `a-${text}`, type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text }] }] });

// A directory of its own, removed when the process exits.
function scratchDir() {
  const dir = mkdtempSync(join(tmpdir(), 'noetic-fileref-'));
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

// An FsAdapter over the real disk that counts the calls it gets.
function diskFs(calls = []) {
  const stats = (s) => ({ size: s.size, isDirectory: () => s.isDirectory(), isSymbolicLink: () => s.isSymbolicLink(), isFile: () => s.isFile() });
  const counted = (name, fn) => (...args) => (calls.push(name), fn(...args));
  return {
    readFile: counted('readFile', (p) => fsp.readFile(p)),
    readFileText: counted('readFileText', (p) => fsp.readFile(p, 'utf-8')),
    writeFile: (p, c) => fsp.writeFile(p, c, 'utf-8'),
    writeFileBytes: (p, c) => fsp.writeFile(p, c),
    appendFile: (p, c) => fsp.appendFile(p, c, 'utf-8'),
    mkdir: (p) => fsp.mkdir(p, { recursive: true }).then(() => {}),
    rename: (a, b) => fsp.rename(a, b),
    rm: (p, o) => fsp.rm(p, o),
    access: (p, m) => fsp.access(p, m),
    stat: counted('stat', async (p) => stats(await fsp.stat(p))),
    lstat: counted('lstat', async (p) => stats(await fsp.lstat(p))),
    readdir: (p) => fsp.readdir(p),
  };
}

// A session agent over `fs` with fileReference as its only layer; `model` answers the turns (and the scoring asks).
function agent(fs, layerOptions, model) {
  return new AgentHarness({
    name: 'files',
    params: {},
    fs,
    memory: [fileReference(layerOptions)],
    initialStep: step.llm({ id: 'ask', model: 'm' }),
    _testCallModel: model,
  });
}

async function turn(harness, text, threadId = 'T') {
  await harness.execute(text, { threadId });
  return harness.getAgentResponse({ threadId });
}

test('on the in-memory filesystem: the reference becomes an anchor, the file is injected, and nothing crosses to JS', async () => {
  const fs = createInMemoryFsAdapter({ '/repo/src/auth.ts': 'export const secret = 42;' });
  // The adapter's own methods are never called: the harness reads its files natively.
  const jsCalls = [];
  for (const name of ['stat', 'lstat', 'readFile', 'readFileText']) {
    const original = fs[name];
    fs[name] = (...args) => (jsCalls.push(name), original(...args));
  }
  const { model, requests } = recordingModel('noted');
  const h = agent(fs, { baseDir: '/repo' }, model);
  await turn(h, 'Why is #src/auth.ts failing?');
  const [request] = requests.filter((r) => r.instructions !== SCORER);
  assert.deepEqual(userTexts(request.items), ['Why is [#src/auth.ts](#src-auth-ts) failing?']);
  assert.deepEqual(referenced(request.items), ['# Referenced Files\n\n## src/auth.ts\n\n```\nexport const secret = 42;\n```']);
  assert.deepEqual(jsCalls, []);
  // The file is scored once, through the model, against the question.
  const scoring = requests.filter((r) => r.instructions === SCORER);
  assert.equal(scoring.length, 1);
  assert.equal(scoring[0].model, 'anthropic/claude-haiku-4-5-20251001');
  assert.match(textOf(scoring[0].items[0]), /User Query: Why is #src\/auth\.ts failing\?\n\nFile Path: src\/auth\.ts\nFile Content \(first 2000 chars\):\nexport const secret = 42;/);
  // The state JS code reads keeps upstream's shape: a Map of tracked files.
  const ctx = h.createContext({ threadId: 'T' });
  await h.initLayers(h._layers, ctx);
  const state = h.getLayerState(ctx.id, 'file-reference');
  assert.ok(state.files instanceof Map);
  assert.deepEqual([...state.files.keys()], ['src/auth.ts']);
});

test('a JS adapter is asked for every tracked file on each append, and the next turn shows a changed or deleted file', async () => {
  const dir = scratchDir();
  writeFileSync(join(dir, 'a.md'), 'alpha v1');
  writeFileSync(join(dir, 'b.md'), 'beta');
  const calls = [];
  const { model, requests } = recordingModel('ok');
  const h = agent(diskFs(calls), { baseDir: dir }, model);
  await turn(h, 'Compare #a.md and #b.md');
  assert.equal(calls.filter((c) => c === 'readFileText').length, 2);
  writeFileSync(join(dir, 'a.md'), 'alpha v2');
  unlinkSync(join(dir, 'b.md'));
  await turn(h, 'And now?');
  const asked = requests.filter((r) => r.instructions !== SCORER);
  const [shown] = referenced(asked.at(-1).items);
  assert.match(shown, /## a\.md\n\n```\nalpha v2\n```/);
  assert.match(shown, new RegExp(`## b\\.md\\n\\n\\[FILE DELETED: ${dir.replaceAll('/', '\\/')}\\/b\\.md\\]`));
  assert.deepEqual(userTexts(asked.at(-1).items), ['Compare [#a.md](#a-md) and [#b.md](#b-md)', 'And now?']);
});

test('harness.fs assigned later is the one the layer reads, in-memory or a JS adapter', async () => {
  const { model, requests } = recordingModel('ok');
  const h = agent(createInMemoryFsAdapter({ '/repo/a.md': 'first fs' }), { baseDir: '/repo' }, model);
  const lastShown = () => referenced(requests.filter((r) => r.instructions !== SCORER).at(-1).items);
  await turn(h, 'Read #a.md');
  assert.match(lastShown()[0], /first fs/);
  // Another in-memory filesystem: read natively, like the first.
  const second = createInMemoryFsAdapter({ '/repo/a.md': 'second fs' });
  h.fs = second;
  assert.equal(h.fs, second);
  await turn(h, 'Again #a.md');
  assert.match(lastShown()[0], /second fs/);
  // A JS adapter: asked in JS.
  const dir = scratchDir();
  writeFileSync(join(dir, 'a.md'), 'disk fs');
  const calls = [];
  const h2 = agent(createInMemoryFsAdapter({ [`${dir}/a.md`]: 'memory fs' }), { baseDir: dir }, model);
  h2.fs = diskFs(calls);
  await turn(h2, 'Read #a.md');
  assert.match(lastShown()[0], /disk fs/);
  assert.ok(calls.includes('readFileText'));
  assert.ok(Object.keys(h2).includes('fs'), 'fs stays an own enumerable property');
});

test('the model’s scores order the files; a failed or nonsensical score is 50', async () => {
  const fs = createInMemoryFsAdapter({ '/r/low.ts': 'low', '/r/high.ts': 'high', '/r/mid.ts': 'mid', '/r/odd.ts': 'odd' });
  const seen = [];
  const model = async (request) => {
    if (request.instructions === SCORER) {
      const path = /File Path: (\S+)/.exec(textOf(request.items[0]))[1];
      if (path === 'mid.ts') throw new Error('the scorer is down');
      return reply({ 'low.ts': '12', 'high.ts': '95', 'odd.ts': 'very relevant' }[path]);
    }
    seen.push(request.items);
    return reply('ok');
  };
  const h = agent(fs, { baseDir: '/r', scoringModel: 'acme/scorer' }, model);
  await turn(h, 'Look at #low.ts #mid.ts #high.ts #odd.ts');
  const [shown] = referenced(seen[0]);
  const order = [...shown.matchAll(/^## (\S+)$/gm)].map((m) => m[1]);
  assert.deepEqual(order, ['high.ts', 'mid.ts', 'odd.ts', 'low.ts'], 'high 95, then the two 50s in reference order, then low 12');
});

test('files that cannot be read show why, the turn goes on, and the state keeps them', async () => {
  const dir = scratchDir();
  const base = join(dir, 'base');
  mkdirSync(join(base, 'docs'), { recursive: true });
  mkdirSync(join(dir, 'outside'));
  writeFileSync(join(dir, 'outside', 'secret.ts'), 'TOP SECRET');
  symlinkSync(join(dir, 'outside'), join(base, 'linked'));
  writeFileSync(join(base, 'logo.svg'), Buffer.from([0x3c, 0x73, 0x00, 0x01, 0x02]));
  writeFileSync(join(base, 'big.ts'), 'x'.repeat(20_000));
  writeFileSync(join(base, 'tool.exe'), 'MZ');
  writeFileSync(join(base, 'docs', 'ok.md'), 'fine');
  mkdirSync(join(base, 'folder.md'));
  const { model, requests } = recordingModel('ok');
  const h = agent(diskFs(), { baseDir: base, maxFileSize: 10_000 }, model);
  await turn(h, 'See #missing.ts #logo.svg #big.ts #tool.exe #../outside/secret.ts #linked/secret.ts #folder.md #docs/ok.md');
  const [shown] = referenced(requests.filter((r) => r.instructions !== SCORER)[0].items);
  assert.match(shown, /## missing\.ts\n\n\[FILE DELETED: .*\/base\/missing\.ts\]/);
  assert.match(shown, /## logo\.svg\n\n\[ERROR: BINARY_FILE: Binary files cannot be referenced\]/);
  assert.match(shown, /## big\.ts\n\n\[ERROR: FILE_TOO_LARGE: 20000 bytes exceeds limit of 10000\]/);
  assert.match(shown, /## tool\.exe\n\n\[ERROR: DISALLOWED_EXTENSION: \.exe\]/);
  assert.match(shown, /## \.\.\/outside\/secret\.ts\n\n\[ERROR: PATH_TRAVERSAL: File outside allowed directory\]/);
  assert.match(shown, /## linked\/secret\.ts\n\n\[ERROR: SYMLINK: Symlinks not allowed\]/);
  assert.match(shown, /## folder\.md\n\n\[ERROR: READ_FAILED: EISDIR: illegal operation on a directory, read\]/);
  assert.match(shown, /## docs\/ok\.md\n\n```\nfine\n```/);
  assert.ok(!shown.includes('TOP SECRET'), 'nothing from outside baseDir reaches the model');
  const saved = await h.config.storage.get('layers/file-reference/T/state');
  assert.equal(Object.keys(saved.files).length, 8, 'every reference is tracked, readable or not');
  assert.equal(saved.files['big.ts'].content, null);
  // followSymlinks opts out of the link check.
  const { model: second, requests: seen } = recordingModel('ok');
  await turn(agent(diskFs(), { baseDir: base, followSymlinks: true }, second), 'See #linked/secret.ts');
  assert.match(referenced(seen.filter((r) => r.instructions !== SCORER)[0].items)[0], /TOP SECRET/);
});

test('a filesystem that never answers: the append times out, the turn goes on with the message as it was', async () => {
  const diagnostics = [];
  const stuck = { ...diskFs(), readFileText: () => new Promise(() => {}) };
  const { model, requests } = recordingModel('ok');
  const dir = scratchDir();
  writeFileSync(join(dir, 'a.ts'), 'a');
  const layer = { ...fileReference({ baseDir: dir }), timeouts: { onItemAppend: 100 } };
  const h = new AgentHarness({ name: 'f', params: {}, fs: stuck, memory: [layer], initialStep: step.llm({ id: 'ask', model: 'm' }), _testCallModel: model, onDiagnostic: (d) => diagnostics.push(d) });
  await turn(h, 'Look at #a.ts');
  assert.deepEqual(diagnostics.map((d) => [d.layerId, d.hook, d.message]), [['file-reference', 'onItemAppend', 'Timeout after 100ms']]);
  assert.deepEqual(userTexts(requests[0].items), ['Look at #a.ts']);
  assert.deepEqual(referenced(requests[0].items), []);
});

test('a file that errored recovers once it can be read, and a file that comes back is shown again', async () => {
  const fs = createInMemoryFsAdapter({ '/r/data.ts': 'x'.repeat(200) });
  const { model, requests } = recordingModel('ok');
  const h = agent(fs, { baseDir: '/r', maxFileSize: 50 }, model);
  const lastShown = () => referenced(requests.filter((r) => r.instructions !== SCORER).at(-1).items)[0];
  await turn(h, 'Check #data.ts');
  assert.match(lastShown(), /FILE_TOO_LARGE: 200 bytes exceeds limit of 50/);
  await fs.writeFile('/r/data.ts', 'ok');
  await turn(h, 'again');
  assert.match(lastShown(), /## data\.ts\n\n```\nok\n```/);
  await fs.rm('/r/data.ts');
  await turn(h, 'gone?');
  assert.match(lastShown(), /FILE DELETED/);
  await fs.writeFile('/r/data.ts', 'ok');
  await turn(h, 'back?');
  assert.match(lastShown(), /## data\.ts\n\n```\nok\n```/, 'the same content as before it was deleted is shown again');
});

test('through ctx.harness: the append pipeline rewrites, tracks once and asks for an immediate re-render of itself', async () => {
  const fs = createInMemoryFsAdapter({ '/r/config.json': '{"a":1}', '/r/changing.ts': 'original' });
  const layer = fileReference({ baseDir: '/r' });
  const h = new AgentHarness({ name: 'f', params: {}, fs, memory: [layer], _testCallModel: async () => reply('50') });
  const ctx = h.createContext({});
  await h.initLayers([layer], ctx);
  const first = await h.runAppendPipeline([layer], [createMessage('See #config.json and #./config.json, #changing.ts', 'user')], ctx);
  assert.equal(textOf(first.items[0]), 'See [#config.json](#config-json) and [#./config.json](#--config-json), [#changing.ts](#changing-ts)');
  assert.deepEqual(first.rerenderRequests, [{ layerId: 'file-reference', slot: 350, timing: 'immediate', scope: 'self' }]);
  assert.deepEqual([...h.getLayerState(ctx.id, 'file-reference').files.keys()], ['config.json', 'changing.ts'], 'one entry per file');
  const quiet = [createMessage('No file refs here', 'user')];
  const same = await h.runAppendPipeline([layer], quiet, ctx);
  assert.deepEqual(same.rerenderRequests, [], 'nothing changed, nothing to re-render');
  assert.deepEqual(same.items, quiet, 'an item without references passes as it is');
  await fs.writeFile('/r/changing.ts', 'modified');
  const changed = await h.runAppendPipeline([layer], [createMessage('What about now?', 'user')], ctx);
  assert.equal(changed.rerenderRequests.length, 1);
  const [recalled] = await h.recallLayers([layer], '', ctx);
  assert.match(textOf(recalled.items[0]), /## changing\.ts\n\n```\nmodified\n```/);
});

test('a tool that edits a referenced file mid-step: the next model round sees the new content', async () => {
  const server = await fakeResponsesApi([
    { output: [{ type: 'function_call', id: 'fc_1', call_id: 'call_1', name: 'edit', arguments: '{"text":"v2"}', status: 'completed' }] },
    { output: [message('done')] },
  ]);
  try {
    const fs = createInMemoryFsAdapter({ '/r/notes.md': 'v1' });
    const edit = tool({ name: 'edit', description: 'Rewrite notes.md', input: z.object({ text: z.string() }), execute: async ({ text }) => (await fs.writeFile('/r/notes.md', text), 'written') });
    const h = new AgentHarness({
      name: 'f', params: {}, fs, memory: [fileReference({ baseDir: '/r' })],
      llm: { provider: 'openrouter', apiKey: 'sk-or-test', baseUrl: server.baseUrl },
    });
    const answer = await h.run(step.llm({ id: 'ask', model: 'openai/gpt-4o-mini', tools: [edit] }), 'Update #notes.md', h.createContext({}));
    assert.equal(answer, 'done');
    const rounds = server.received.filter((body) => body.instructions !== SCORER);
    const injected = (body) => body.input.filter((item) => item.role === 'developer').map((item) => JSON.stringify(item.content));
    assert.match(injected(rounds[0]).join(), /```\\nv1\\n```/);
    assert.match(injected(rounds[1]).join(), /```\\nv2\\n```/, 're-rendered before the second round');
  } finally {
    server.close();
  }
});

test('the tracked files outlive the process: a thread resumed elsewhere is still shown them', () => {
  const path = scratchDb('file-reference.db');
  const script = fileURLToPath(new URL('./fixtures/file-reference-turn.mjs', import.meta.url));
  const run = (message) => {
    const result = spawnSync(process.execPath, [script, path, message], { encoding: 'utf8', timeout: slow(30_000) });
    assert.equal(result.status, 0, result.stderr);
    return JSON.parse(result.stdout);
  };
  const first = run('Read #src/app.ts');
  assert.deepEqual(first.saved, ['src/app.ts']);
  const second = run('Anything else?');
  assert.match(second.shown, /## src\/app\.ts\n\n```\nconsole\.log\('app'\);\n```/, 'rehydrated from SQLite');
  assert.deepEqual(second.saved, ['src/app.ts']);
});

test('the config is checked when the factory is called', () => {
  const code = (opts) => {
    try {
      fileReference(opts);
    } catch (e) {
      assert.ok(e instanceof NoeticConfigError, String(e));
      return [e.code, e.message];
    }
    return null;
  };
  assert.deepEqual(code({ maxFileSize: '1mb' }), ['INVALID_FILE_REFERENCE_CONFIG', 'fileReference: maxFileSize must be a number of bytes, at least 0, got "1mb"']);
  assert.equal(code({ maxFileSize: -1 })[0], 'INVALID_FILE_REFERENCE_CONFIG');
  assert.equal(code({ allowedExtensions: '.ts' })[0], 'INVALID_FILE_REFERENCE_CONFIG');
  assert.equal(code({ followSymlinks: 1 })[0], 'INVALID_FILE_REFERENCE_CONFIG');
  assert.equal(code({ baseDir: 7 })[0], 'INVALID_FILE_REFERENCE_CONFIG');
  assert.equal(code({ scoringModel: '' })[0], 'INVALID_FILE_REFERENCE_CONFIG');
  assert.equal(code({ slot: Number.NaN })[0], 'INVALID_LAYER_SLOT');
  assert.equal(code({ maxFileSize: Number.POSITIVE_INFINITY, allowedExtensions: [] }), null);
  const layer = fileReference();
  assert.deepEqual(
    [layer.id, layer.name, layer.slot, layer.scope, layer.budget, layer.rerenderTiming, layer.timeouts.onItemAppend],
    ['file-reference', 'File Reference', 350, 'thread', 'auto', 'immediate', 30_000],
  );
});

test('its hooks called directly: ctx.fs reads, ctx.callModel scores in parallel, recall by priority within the budget', async () => {
  const dir = scratchDir();
  for (const [name, text] of [['p1.ts', 'one'], ['p2.ts', 'two'], ['p3.ts', 'three']]) writeFileSync(join(dir, name), text);
  writeFileSync(join(dir, 'many.ts'), Array.from({ length: 200 }, (_, i) => `line number ${i}`).join('\n'));
  const layer = fileReference({ baseDir: dir });
  const { state: empty } = await layer.hooks.init({});
  assert.ok(empty.files instanceof Map && empty.files.size === 0);
  assert.deepEqual(await layer.hooks.recall({ state: empty, budget: 1000 }), { items: [], tokenCount: 0 });
  const callModel = async () => (await new Promise((resolve) => setTimeout(resolve, 200)), reply('75'));
  const items = [createMessage('Look at #p1.ts #p2.ts #p3.ts and #many.ts', 'user')];
  const started = performance.now();
  const result = await layer.hooks.onItemAppend({ items, ctx: { fs: diskFs(), callModel }, state: empty });
  assert.ok(performance.now() - started < 400, 'the four scores are asked at once');
  assert.deepEqual([result.rerender, result.timing, result.scope], [true, 'immediate', 'self']);
  assert.equal(textOf(result.items[0]), 'Look at [#p1.ts](#p1-ts) [#p2.ts](#p2-ts) [#p3.ts](#p3-ts) and [#many.ts](#many-ts)');
  assert.deepEqual([...result.state.files.values()].map((f) => f.priority), [75, 75, 75, 75]);
  result.state.files.get('p3.ts').priority = 90;
  const all = await layer.hooks.recall({ state: result.state, budget: 10_000 });
  assert.ok(textOf(all.items[0]).indexOf('## p3.ts') < textOf(all.items[0]).indexOf('## p1.ts'));
  const tight = await layer.hooks.recall({ state: result.state, budget: 100 });
  assert.ok(tight.tokenCount <= 100, `${tight.tokenCount}`);
  // Without ctx.callModel the path heuristic scores: the query names the file.
  const heuristic = await layer.hooks.onItemAppend({ items: [createMessage('fix #p1.ts', 'user')], ctx: { fs: diskFs() }, state: empty });
  assert.equal(heuristic.state.files.get('p1.ts').priority, 80);
});

// ---- a stand-in for the Responses API (streamed), recording each request's body ----

const message = (text) => ({ type: 'message', id: `msg_${text}`, status: 'completed', role: 'assistant', content: [{ type: 'output_text', text, annotations: [] }] });

async function fakeResponsesApi(replies) {
  const received = [];
  const server = http.createServer((req, res) => {
    let text = '';
    req.on('data', (chunk) => (text += chunk));
    req.on('end', () => {
      const body = JSON.parse(text);
      received.push(body);
      const scoring = body.instructions === SCORER;
      const rounds = received.filter((b) => b.instructions !== SCORER).length;
      const output = scoring ? [message('60')] : replies[Math.min(rounds - 1, replies.length - 1)].output;
      const response = { status: 'completed', output, usage: { input_tokens: 10, output_tokens: 2 } };
      const events = [{ type: 'response.created', response: { status: 'in_progress', output: [] } }, { type: 'response.completed', response }];
      res.writeHead(200, { 'content-type': 'text/event-stream', connection: 'close' });
      res.end(events.map((event) => `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`).join(''));
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    received,
    baseUrl: `http://127.0.0.1:${server.address().port}/api/v1`,
    close() {
      server.closeAllConnections?.();
      server.close();
    },
  };
}

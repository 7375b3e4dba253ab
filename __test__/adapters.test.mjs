import { test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import {
  AgentHarness,
  NoeticConfigError,
  createInMemoryFsAdapter,
  createInMemoryShellAdapter,
  spawn,
  step,
  tool,
} from '../js/index.mjs';
import './helpers.mjs';

// Upstream's errors are plain Errors whose message carries the POSIX code, with no `code` property.
const fsError = (message) => (e) => {
  assert.equal(e.constructor, Error);
  assert.equal(e.message, message);
  assert.equal('code' in e, false);
  return true;
};

test('fs: the adapter has exactly upstream\'s methods, all async, usable without `this`', async () => {
  const fs = createInMemoryFsAdapter();
  assert.deepEqual(Object.keys(fs), ['readFile', 'readFileText', 'writeFile', 'writeFileBytes', 'appendFile', 'mkdir', 'rename', 'rm', 'access', 'stat', 'lstat', 'readdir']);
  const { writeFile, readFileText } = fs;
  const written = writeFile('/a', 'x');
  assert.ok(written instanceof Promise);
  await written;
  assert.equal(await readFileText('/a'), 'x');
  // Two adapters never share files.
  await assert.rejects(createInMemoryFsAdapter().access('/a'));
});

test('fs: writeFile and readFile/readFileText, with parents created and paths normalised', async () => {
  const fs = createInMemoryFsAdapter();
  await fs.writeFile('notes/today/todo.txt', 'héllo ✓');
  assert.equal(await fs.readFileText('/notes/./today/../today/todo.txt'), 'héllo ✓');
  const buffer = await fs.readFile('  /notes/today/todo.txt  ');
  assert.ok(Buffer.isBuffer(buffer));
  assert.deepEqual([...buffer], [...Buffer.from('héllo ✓')]);
  // Each read is a copy.
  buffer[0] = 0;
  assert.equal(await fs.readFileText('/notes/today/todo.txt'), 'héllo ✓');
  assert.deepEqual(await fs.readdir('/'), ['notes']);
  assert.deepEqual(await fs.readdir('/notes'), ['today']);
  // Content goes through ToString as TextEncoder's does; a lone surrogate is written as U+FFFD.
  await fs.writeFile('/n', 42);
  assert.equal(await fs.readFileText('/n'), '42');
  await fs.writeFile('/u', undefined);
  assert.equal(await fs.readFileText('/u'), '');
  await fs.writeFile('/s', 'a\uD800b');
  assert.deepEqual([...(await fs.readFile('/s'))], [...new TextEncoder().encode('a\uD800b')]);
  await assert.rejects(fs.writeFile('/sym', Symbol('x')), TypeError);
});

test('fs: reading what is missing or a directory fails with upstream\'s errors', async () => {
  const fs = createInMemoryFsAdapter();
  await fs.mkdir('/dir');
  await assert.rejects(fs.readFile('/missing'), fsError("ENOENT: no such file or directory, '/missing'"));
  await assert.rejects(fs.readFileText('missing/x'), fsError("ENOENT: no such file or directory, '/missing/x'"));
  await assert.rejects(fs.readFile('/dir'), fsError("EISDIR: illegal operation on a directory, read '/dir'"));
  await assert.rejects(fs.readFileText('/dir/'), fsError("EISDIR: illegal operation on a directory, read '/dir'"));
});

test('fs: bytes round-trip, and text decodes exactly as TextDecoder does', async () => {
  const fs = createInMemoryFsAdapter();
  const bytes = new Uint8Array([0, 1, 0xff, 0xfe, 0x80]);
  await fs.writeFileBytes('/bin', bytes);
  assert.deepEqual([...(await fs.readFile('/bin'))], [...bytes]);
  // A view writes only its own window; an ArrayBuffer is taken whole; a string is UTF-8.
  await fs.writeFileBytes('/view', Buffer.from('abcdef').subarray(2, 4));
  assert.equal(await fs.readFileText('/view'), 'cd');
  await fs.writeFileBytes('/ab', new Uint8Array([104, 105]).buffer);
  assert.equal(await fs.readFileText('/ab'), 'hi');
  await fs.writeFileBytes('/str', 'é');
  assert.deepEqual([...(await fs.readFile('/str'))], [0xc3, 0xa9]);
  await fs.writeFileBytes('/u16', new Uint16Array([0x4241]));
  assert.equal((await fs.readFile('/u16')).length, 2);
  // As upstream: an object that is not a view has no bytes, and null is a TypeError.
  await fs.writeFileBytes('/arr', [1, 2, 3]);
  assert.equal((await fs.stat('/arr')).size, 0);
  await assert.rejects(fs.writeFileBytes('/null', null), TypeError);
  // A leading byte-order mark is dropped and invalid sequences become U+FFFD, as TextDecoder does.
  let seed = 7;
  const next = () => (seed = (seed * 48271) % 2147483647);
  const decoder = new TextDecoder();
  for (let i = 0; i < 300; i++) {
    const random = Array.from({ length: next() % 12 }, () => [0xef, 0xbb, 0xbf, 0xed, 0xa0, 0x80, 0xf0, 0x9f, 0xc0, 0x41, 0xe2, 0x82, 0xac][next() % 13] ?? next() % 256);
    const sample = new Uint8Array(i % 3 === 0 ? [0xef, 0xbb, 0xbf, ...random] : random);
    await fs.writeFileBytes('/sample', sample);
    assert.equal(await fs.readFileText('/sample'), decoder.decode(sample), `bytes ${[...sample]}`);
  }
});

test('fs: appendFile creates, extends and refuses directories', async () => {
  const fs = createInMemoryFsAdapter();
  await fs.appendFile('/logs/run.log', 'one\n');
  await fs.appendFile('/logs/run.log', 'two\n');
  assert.equal(await fs.readFileText('/logs/run.log'), 'one\ntwo\n');
  await assert.rejects(fs.appendFile('/logs', 'x'), fsError("EISDIR: illegal operation on a directory, append '/logs'"));
});

test('fs: mkdir is recursive and idempotent, and a file in the way is ENOTDIR', async () => {
  const fs = createInMemoryFsAdapter();
  await fs.mkdir('/a/b/c');
  await fs.mkdir('/a/b/c');
  assert.deepEqual(await fs.readdir('/a/b'), ['c']);
  await fs.writeFile('/a/file', 'x');
  await assert.rejects(fs.mkdir('/a/file/sub/deeper'), fsError("ENOTDIR: not a directory, mkdir '/a/file'"));
  await assert.rejects(fs.writeFile('/a/file/x', 'y'), fsError("ENOTDIR: not a directory, mkdir '/a/file'"));
  await assert.rejects(fs.access('/a/file/sub'));
});

test('fs: rename moves files and whole trees, replacing the target', async () => {
  const fs = createInMemoryFsAdapter();
  await fs.writeFile('/draft.txt', 'v2');
  await fs.writeFile('/final.txt', 'v1');
  await fs.rename('/draft.txt', '/final.txt');
  assert.equal(await fs.readFileText('/final.txt'), 'v2');
  await assert.rejects(fs.access('/draft.txt'));
  await fs.writeFile('/src/a', '1');
  await fs.writeFile('/src/sub/b', '2');
  await fs.rename('/src', '/archive/src');
  assert.deepEqual(await fs.readdir('/archive/src'), ['a', 'sub']);
  assert.equal(await fs.readFileText('/archive/src/sub/b'), '2');
  await assert.rejects(fs.readdir('/src'), fsError("ENOENT: no such file or directory, '/src'"));
  await assert.rejects(fs.rename('/nope', '/x'), fsError("ENOENT: no such file or directory, '/nope'"));
  await assert.rejects(fs.rename('/final.txt', '/final.txt/inside'), fsError("ENOTDIR: not a directory, mkdir '/final.txt'"));
});

test('fs: rm removes files and directories, with recursive and force as upstream', async () => {
  const fs = createInMemoryFsAdapter();
  await fs.writeFile('/d/x', '1');
  await fs.writeFile('/d/e/y', '2');
  await assert.rejects(fs.rm('/d'), fsError("ENOTEMPTY: directory not empty, rm '/d'"));
  await assert.rejects(fs.rm('/missing'), fsError("ENOENT: no such file or directory, rm '/missing'"));
  await fs.rm('/missing', { force: true });
  await fs.rm('/d/x');
  await fs.rm('/d', { recursive: true });
  assert.deepEqual(await fs.readdir('/'), []);
  await fs.mkdir('/empty');
  await fs.rm('/empty');
  // The root itself is never removed.
  await fs.writeFile('/keep', 'k');
  await fs.rm('/', { recursive: true });
  assert.deepEqual(await fs.readdir('/'), ['keep']);
});

test('fs: access, stat and lstat', async () => {
  const fs = createInMemoryFsAdapter();
  await fs.writeFile('/f', 'four');
  await fs.access('/f', 4);
  await fs.access('/');
  await assert.rejects(fs.access('/g'), fsError("ENOENT: no such file or directory, '/g'"));
  for (const method of ['stat', 'lstat']) {
    const file = await fs[method]('/f');
    assert.deepEqual(Object.keys(file), ['size', 'isDirectory', 'isSymbolicLink', 'isFile']);
    assert.deepEqual([file.size, file.isFile(), file.isDirectory(), file.isSymbolicLink()], [4, true, false, false]);
    const dir = await fs[method]('/');
    assert.deepEqual([dir.size, dir.isFile(), dir.isDirectory(), dir.isSymbolicLink()], [0, false, true, false]);
    await assert.rejects(fs[method]('/g'), fsError("ENOENT: no such file or directory, '/g'"));
  }
});

test('fs: readdir lists direct children in JS sort order', async () => {
  const fs = createInMemoryFsAdapter();
  for (const name of ['b', 'a', 'B', '\uff61', '\u{1f600}', 'sub/deep']) await fs.writeFile(`/d/${name}`, '');
  assert.deepEqual(await fs.readdir('/d'), ['B', 'a', 'b', 'sub', '\u{1f600}', '\uff61'].sort());
  assert.deepEqual(await fs.readdir('/d/sub'), ['deep']);
  await assert.rejects(fs.readdir('/d/a'), fsError("ENOTDIR: not a directory, scandir '/d/a'"));
  await assert.rejects(fs.readdir('/none'), fsError("ENOENT: no such file or directory, '/none'"));
});

test('fs: a path that is not a string rejects with a TypeError, as upstream\'s path.trim() does', async () => {
  const fs = createInMemoryFsAdapter();
  for (const bad of [undefined, null, 5, {}]) {
    const call = fs.readFile(bad);
    assert.ok(call instanceof Promise, 'rejects rather than throws');
    await assert.rejects(call, TypeError);
  }
  await fs.writeFile(new String('/boxed'), 'ok');
  assert.equal(await fs.readFileText('/boxed'), 'ok');
});

test('fs: a seed creates its files and their parents; a file in the way throws at once', async () => {
  const fs = createInMemoryFsAdapter({ 'docs/readme.md': '# Hi', '/bin/data': new Uint8Array([1, 2, 3]) });
  assert.deepEqual(await fs.readdir('/'), ['bin', 'docs']);
  assert.equal(await fs.readFileText('/docs/readme.md'), '# Hi');
  assert.deepEqual([...(await fs.readFile('/bin/data'))], [1, 2, 3]);
  assert.throws(() => createInMemoryFsAdapter({ '/f': 'x', '/f/g': 'y' }), fsError("ENOTDIR: not a directory, mkdir '/f'"));
});

test('shell: the default adapter runs nothing and says so', async () => {
  const shell = createInMemoryShellAdapter();
  assert.deepEqual(Object.keys(shell), ['exec']);
  assert.deepEqual(await shell.exec('ls -la', { cwd: '/' }), {
    stdout: '',
    stderr: 'Shell execution is not available in the default in-memory adapter: ls -la',
    exitCode: 127,
  });
});

test('harness: in-memory fs and shell by default, the given ones otherwise', async () => {
  const harness = new AgentHarness({ name: 't', params: {} });
  await harness.fs.writeFile('/x', 'y');
  assert.equal(await harness.fs.readFileText('/x'), 'y');
  assert.equal((await harness.shell.exec('pwd', { cwd: '/' })).exitCode, 127);
  // Every harness has its own filesystem.
  await assert.rejects(new AgentHarness({ name: 't', params: {} }).fs.access('/x'));
  const fs = createInMemoryFsAdapter({ '/seeded': 's' });
  const shell = { exec: async (command) => ({ stdout: `ran ${command}`, stderr: '', exitCode: 0 }) };
  const custom = new AgentHarness({ name: 't', params: {}, fs, shell });
  assert.equal(custom.fs, fs);
  assert.equal(custom.shell, shell);
  // null means the default, as upstream's `??`.
  assert.equal((await new AgentHarness({ name: 't', params: {}, fs: null, shell: null }).shell.exec('x', { cwd: '/' })).exitCode, 127);
});

test('harness: an fs or shell without the adapter methods is a NoeticConfigError', () => {
  const bad = (opts, code, pattern) =>
    assert.throws(
      () => new AgentHarness({ name: 't', params: {}, ...opts }),
      (e) => e instanceof NoeticConfigError && e.code === code && pattern.test(e.message) && e.hint.length > 0,
    );
  bad({ fs: 'memory' }, 'INVALID_FS_ADAPTER', /fs is "memory"; expected an FsAdapter/);
  bad({ fs: { readFile() {} } }, 'INVALID_FS_ADAPTER', /fs has no 'readFileText', .*'readdir' methods/);
  const { readdir: _dropped, ...noReaddir } = createInMemoryFsAdapter();
  bad({ fs: noReaddir }, 'INVALID_FS_ADAPTER', /^AgentHarness fs has no 'readdir' method\.$/);
  bad({ shell: {} }, 'INVALID_SHELL_ADAPTER', /shell has no 'exec' method/);
  bad({ shell: 42 }, 'INVALID_SHELL_ADAPTER', /shell is 42; expected a ShellAdapter/);
  // Methods may come from a prototype.
  class Shell {
    async exec() {
      return { stdout: '', stderr: '', exitCode: 0 };
    }
  }
  new AgentHarness({ name: 't', params: {}, shell: new Shell() });
});

test('harness: rootCwdState starts at initialCwd (default /) and setRootCwd keeps the previous cwd', () => {
  assert.deepEqual(new AgentHarness({ name: 't', params: {} }).rootCwdState, { cwd: '/' });
  const harness = new AgentHarness({ name: 't', params: {}, initialCwd: '/work' });
  const state = harness.rootCwdState;
  assert.deepEqual(state, { cwd: '/work' });
  harness.setRootCwd('/work/app');
  assert.equal(harness.rootCwdState, state, 'the same object, mutated');
  assert.deepEqual(state, { cwd: '/work/app', previousCwd: '/work' });
  // Setting the current cwd changes nothing (previousCwd is not overwritten).
  harness.setRootCwd('/work/app');
  assert.deepEqual(state, { cwd: '/work/app', previousCwd: '/work' });
  harness.setRootCwd('/tmp');
  assert.deepEqual(state, { cwd: '/tmp', previousCwd: '/work/app' });
});

test('ctx: fs and shell are the harness\'s; root contexts share rootCwdState, children get a copy', async () => {
  const harness = new AgentHarness({ name: 't', params: {}, initialCwd: '/repo' });
  const seen = {};
  const child = step.run({
    id: 'child',
    execute: async (_input, ctx) => {
      seen.child = { ...ctx.cwdState };
      ctx.cwdState.cwd = '/child-only';
      return 'done';
    },
  });
  const root = step.run({
    id: 'root',
    execute: async (_input, ctx) => {
      seen.fs = ctx.fs === harness.fs && ctx.harness.fs === harness.fs;
      seen.shell = ctx.shell === harness.shell;
      seen.shared = ctx.cwdState === harness.rootCwdState;
      await ctx.fs.writeFile('/from-step', 'hi');
      seen.exec = await ctx.shell.exec('echo', { cwd: ctx.cwdState.cwd });
      harness.setRootCwd('/repo/pkg');
      return harness.run(spawn({ id: 'sp', child }), 'go', ctx);
    },
  });
  const ctx = harness.createContext();
  assert.equal(await harness.run(root, 'go', ctx), 'done');
  assert.deepEqual([seen.fs, seen.shell, seen.shared], [true, true, true]);
  assert.equal(seen.exec.exitCode, 127);
  assert.equal(await harness.fs.readFileText('/from-step'), 'hi');
  assert.deepEqual(seen.child, { cwd: '/repo/pkg', previousCwd: '/repo' });
  // The child's cd stayed in the child.
  assert.deepEqual(harness.rootCwdState, { cwd: '/repo/pkg', previousCwd: '/repo' });
  assert.deepEqual(harness.createContext({ cwdInit: '/elsewhere' }).cwdState, { cwd: '/elsewhere' });
});

test('hooks: a layer\'s init and recall receive the harness fs and shell in ctx', async () => {
  const fs = createInMemoryFsAdapter({ '/memory/notes.md': 'likes tea' });
  const got = [];
  const notes = {
    id: 'notes',
    slot: 275,
    scope: 'execution',
    hooks: {
      init: async ({ ctx }) => {
        got.push(['init', ctx.fs === fs, ctx.shell === harness.shell]);
        return { state: { text: await ctx.fs.readFileText('/memory/notes.md') } };
      },
      recall: async ({ ctx, state }) => {
        got.push(['recall', ctx.fs === fs, (await ctx.shell.exec('true', { cwd: '/' })).exitCode]);
        return state.text;
      },
    },
  };
  const requests = [];
  const harness = new AgentHarness({
    name: 't',
    params: {},
    fs,
    memory: [notes],
    _testCallModel: async (request) => {
      requests.push(request);
      return { items: [{ id: 'm', type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'ok' }] }] };
    },
  });
  assert.equal(await harness.run(step.llm({ id: 'ask', model: 'm' }), 'hi'), 'ok');
  assert.deepEqual(got, [['init', true, true], ['recall', true, 127]]);
  assert.ok(JSON.stringify(requests[0].items).includes('likes tea'));
});

test('tools: execute receives the harness, fs and shell in its tool context', async () => {
  const shell = createInMemoryShellAdapter();
  const save = tool({
    name: 'save',
    description: 'Save a note.',
    input: z.object({ text: z.string() }),
    execute: async ({ text }, toolCtx) => {
      await toolCtx.fs.appendFile('/notes.txt', `${text}\n`);
      return { sameHarness: toolCtx.harness === harness, sameShell: toolCtx.shell === shell };
    },
  });
  const script = [{ toolCalls: [{ name: 'save', arguments: { text: 'tea' } }] }, { text: 'Saved.' }];
  const harness = new AgentHarness({ name: 't', params: {}, shell, llm: { provider: 'scripted', script } });
  const ctx = harness.createContext();
  assert.equal(await harness.run(step.llm({ id: 'llm', model: 'm', tools: [save] }), 'go', ctx), 'Saved.');
  assert.equal(await harness.fs.readFileText('/notes.txt'), 'tea\n');
  const output = ctx.itemLog.items.find((item) => item.type === 'function_call_output').output;
  assert.deepEqual(JSON.parse(output), { sameHarness: true, sameShell: true });
});

// The fileReference benchmark (issue 11): one model step on a context whose history already holds N items (1k, 10k, 100k of about 300 bytes), with fileReference as the harness's only layer tracking three
// files of about 4 KB. Each turn's message names one of them, so every step rewrites a reference, reads every
// tracked file again (change detection) and injects them all; the history keeps growing by the question and the
// answer. The files live in the harness's `fs`: its in-memory adapter, or (`FS=disk`) a Node adapter over a
// temporary directory. The time is per step, median of STEPS. `NOETIC_UPSTREAM_PKG=<dir of an installed upstream
// package>` runs the same workload on upstream in the same process, side by side. Figures vary run to run on a
// busy machine.
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import * as fsp from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { median, history, upstreamApi } from './common.mjs';

const STEPS = Number(process.env.STEPS ?? 40);
const WARMUP = Number(process.env.WARMUP ?? 10);
const SIZES = (process.env.SIZES ?? '1000,10000,100000').split(',').map(Number);
const DISK = process.env.FS === 'disk';

const FILES = ['src/auth.ts', 'src/db.ts', 'docs/notes.md'];
const fileText = (name) => Array.from({ length: 100 }, (_, i) => `// ${name} line ${i}: const value${i} = compute(${i});`).join('\n');

// Answers the step, and any relevance question a layer asks aside.
function model() {
  let n = 0;
  let injected = 0;
  const call = async (request) => {
    n++;
    const developer = request.items.find((item) => item.role === 'developer' && item.content?.[0]?.text?.startsWith('# Referenced Files'));
    if (developer) injected = developer.content[0].text.length;
    const text = request.instructions?.startsWith('You are a relevance scorer') ? '60' : `answer ${n}`;
    return {
      items: [{ type: 'message', role: 'assistant', id: `a${n}`, status: 'completed', content: [{ type: 'output_text', text, annotations: [] }] }],
      usage: { inputTokens: 100, outputTokens: 5 },
    };
  };
  return { call, injected: () => injected };
}

// A Node FsAdapter over `dir` (upstream's tests build theirs the same way).
function diskFs() {
  const stats = (s) => ({ size: s.size, isDirectory: () => s.isDirectory(), isSymbolicLink: () => s.isSymbolicLink(), isFile: () => s.isFile() });
  return {
    readFile: (p) => fsp.readFile(p),
    readFileText: (p) => fsp.readFile(p, 'utf-8'),
    writeFile: (p, c) => fsp.writeFile(p, c, 'utf-8'),
    writeFileBytes: (p, c) => fsp.writeFile(p, c),
    appendFile: (p, c) => fsp.appendFile(p, c, 'utf-8'),
    mkdir: (p) => fsp.mkdir(p, { recursive: true }).then(() => {}),
    rename: (a, b) => fsp.rename(a, b),
    rm: (p, o) => fsp.rm(p, o),
    access: (p, m) => fsp.access(p, m),
    stat: async (p) => stats(await fsp.stat(p)),
    lstat: async (p) => stats(await fsp.lstat(p)),
    readdir: (p) => fsp.readdir(p),
  };
}

function filesystem(api) {
  if (!DISK) return { fs: api.createInMemoryFsAdapter(Object.fromEntries(FILES.map((f) => [`/repo/${f}`, fileText(f)]))), baseDir: '/repo', done() {} };
  const dir = mkdtempSync(path.join(tmpdir(), 'noetic-bench-'));
  for (const f of FILES) {
    mkdirSync(path.dirname(path.join(dir, f)), { recursive: true });
    writeFileSync(path.join(dir, f), fileText(f));
  }
  return { fs: diskFs(), baseDir: dir, done: () => rmSync(dir, { recursive: true, force: true }) };
}

// A context seeded with `n` items, its layers initialised once, then one LLM step per question: a step's input is
// what passes through onItemAppend on both stacks (upstream's session turns put the message in the log without it,
// which leaves fileReference inert there).
async function measure(api, n) {
  const { AgentHarness, fileReference, step } = api;
  const { fs, baseDir, done } = filesystem(api);
  const m = model();
  const layer = fileReference({ baseDir });
  const harness = new AgentHarness({ name: 'fr', params: {}, fs, memory: [layer], _testCallModel: m.call });
  const ask = step.llm({ id: 'ask', model: 'bench/model' });
  const ctx = harness.createContext({ items: history(n), threadId: `fr-${n}` });
  await harness.initLayers([layer], ctx, harness.config.storage);
  await harness.run(ask, `Read ${FILES.map((f) => `#${f}`).join(' ')}`, ctx);
  // Unmeasured steps first, so that neither stack is timed while its JS is still being compiled.
  for (let i = 0; i < WARMUP; i++) await harness.run(ask, `warm-up ${i}`, ctx);
  const times = [];
  for (let i = 0; i < STEPS; i++) {
    const started = performance.now();
    await harness.run(ask, `question ${i} about #${FILES[i % FILES.length]}`, ctx);
    times.push(performance.now() - started);
  }
  done();
  return { ms: median(times), injected: m.injected() };
}

const ours = await import('../js/index.mjs');
const upstream = await upstreamApi();

console.log(`fileReference (3 files, ${DISK ? 'a Node disk adapter' : 'the in-memory fs'}), one model step on a growing history (median of ${STEPS} steps)`);
for (const n of SIZES) {
  const a = await measure(ours, n);
  let line = `  ${String(n).padStart(6)} items: ours ${a.ms.toFixed(3)} ms (injected ${a.injected} chars)`;
  if (upstream) {
    const b = await measure(upstream, n);
    line += `, upstream ${b.ms.toFixed(3)} ms (injected ${b.injected}): ${(b.ms / a.ms).toFixed(1)}x faster`;
  }
  console.log(line);
}

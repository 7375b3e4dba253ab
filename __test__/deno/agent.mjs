// Run by `npm test` under Deno 2 (`deno run -A __test__/deno/agent.mjs`, with node_modules present): an agent with
// memory layers and a tool, its session persisted on SQLite and picked up by a second harness as after a restart, and
// the inspector's page fetched. It prints what it saw and compares that with what it should be: it exits 1 on any
// difference. Only node: modules and the package's own entry points, so it runs under Node too.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import process from 'node:process';
import { z } from 'zod';
import { AgentHarness, createMessage, createSqliteStorage, layerFn, memory, react, tool, workingMemory } from '../../js/index.mjs';
import { startInspector } from '../../js/inspector.mjs';

const notes = {
  id: 'notes',
  slot: 275,
  scope: 'thread',
  provides: {
    add: layerFn({
      description: 'Remember a note.',
      input: z.object({ text: z.string() }),
      output: z.void(),
      execute: async (args, state) => ({ result: undefined, state: { entries: [...state.entries, args.text] } }),
    }),
  },
  hooks: {
    init: async ({ storage }) => ({ state: (await storage.get('state')) ?? { entries: [] } }),
    recall: async ({ state }) => (state.entries.length ? { items: [createMessage(state.entries.join('\n'), 'developer')], tokenCount: 10 } : null),
  },
};
const asked = [];
const weather = tool({
  name: 'weather',
  description: 'The weather in a city.',
  input: z.object({ city: z.string() }),
  execute: async ({ city }) => {
    asked.push(city);
    return `sunny in ${city}`;
  },
});

const dir = mkdtempSync(join(tmpdir(), 'noetic-deno-'));
const db = join(dir, 'agent.db');
const thread = { threadId: 'ada' };
const seen = [];
const harnessWith = (script) =>
  new AgentHarness({
    name: 'deno-agent',
    params: {},
    storage: createSqliteStorage(db),
    persistSessions: true,
    memory: memory([workingMemory(), notes]),
    initialStep: react({ model: 'm', maxSteps: 1, tools: [weather] }),
    llm: { provider: 'scripted', script },
  });

try {
  const first = harnessWith([
    { toolCalls: [{ name: 'notes/add', arguments: { text: 'Ada drinks green tea' } }, { name: 'weather', arguments: { city: 'Paris' } }] },
    { text: 'Noted, and it is sunny in Paris.' },
  ]);
  const inspector = await startInspector(first);
  try {
    await first.execute("Hi, I'm Ada. Weather in Paris?", thread);
    const one = await first.getAgentResponse(thread);
    seen.push(`turn 1: ${one.text} (${one.items.length} items)`);
    seen.push(`history: ${one.items.map((i) => (i.type === 'function_call' ? `${i.type} ${i.name}` : i.type)).join(', ')}; weather asked for ${asked.join(', ')}`);
    const page = await fetch(inspector.url);
    const html = await page.text();
    seen.push(`inspector page: ${page.status} ${page.headers.get('content-type')} ${/<html/i.test(html) ? 'html' : 'not html'}`);
    const api = new URL(inspector.url);
    api.pathname = '/api/snapshot';
    const snapshot = await (await fetch(api)).json();
    const [recorded] = snapshot.recorder.threads;
    seen.push(`inspector snapshot: ${snapshot.harness}, layers ${snapshot.layers.map((l) => l.id).join(', ')}, thread ${recorded.threadId} with ${recorded.turns.length} turn(s)`);
  } finally {
    await inspector.close();
  }

  // A second harness on the same database, as a restarted process: the thread's history (six items, eight after this
  // turn) and the layer's state are read back from SQLite.
  const second = harnessWith([{ text: 'You are Ada, and you drink green tea.' }]);
  await second.execute('What do you know about me?', thread);
  const two = await second.getAgentResponse(thread);
  seen.push(`turn 2: ${two.text} (${two.items.length} items)`);
  const storage = createSqliteStorage(db);
  seen.push(`stored: ${(await storage.list('sessions/')).length > 0 ? 'session history' : 'no history'}, notes ${JSON.stringify(await storage.get('layers/notes/ada/state'))}`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}

const expected = [
  'turn 1: Noted, and it is sunny in Paris. (6 items)',
  'history: message, function_call notes/add, function_call weather, function_call_output, function_call_output, message; weather asked for Paris',
  'inspector page: 200 text/html; charset=utf-8 html',
  'inspector snapshot: deno-agent, layers working-memory, notes, thread ada with 1 turn(s)',
  'turn 2: You are Ada, and you drink green tea. (8 items)',
  'stored: session history, notes {"entries":["Ada drinks green tea"]}',
];
const runtime = globalThis.Deno ? `Deno ${globalThis.Deno.version.deno}` : globalThis.Bun ? `Bun ${globalThis.Bun.version}` : `Node ${process.version}`;
let failed = false;
for (let i = 0; i < Math.max(seen.length, expected.length); i++) {
  const ok = seen[i] === expected[i];
  failed ||= !ok;
  console.log(ok ? `ok   ${seen[i]}` : `FAIL ${seen[i] ?? '(nothing)'}\n     expected: ${expected[i] ?? '(nothing)'}`);
}
console.log(failed ? `${runtime}: the agent did not do what it should` : `${runtime}: all as expected`);
process.exit(failed ? 1 : 0);

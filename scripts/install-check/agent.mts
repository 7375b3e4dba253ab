// The package as an ES module: an agent whose layer state lives in SQLite, talked to through a session.
import { z } from 'zod';
import { AgentHarness, createSqliteStorage, layerFn, memory, react, type MemoryLayer } from '@noetic-tools/core';
import { startInspector } from '@noetic-tools/core/inspector';

interface Notes { entries: string[] }
const notes: MemoryLayer<Notes> = {
  id: 'notes',
  slot: 275,
  scope: 'thread',
  budget: { min: 200, max: 1000 },
  provides: {
    add: layerFn({
      description: 'Remember a note.',
      input: z.object({ text: z.string() }),
      output: z.void(),
      execute: async (args: { text: string }, state: Notes) => ({ result: undefined, state: { entries: [...state.entries, args.text] } }),
    }),
  },
  hooks: { init: async ({ storage }) => ({ state: ((await storage.get('state')) as Notes | undefined) ?? { entries: [] } }) },
};

const file = 'esm.db'; // in the project's folder, made anew for each check
const storage = createSqliteStorage(file);
const harness = new AgentHarness({
  name: 'install-check',
  params: {},
  storage,
  initialStep: react({ model: 'any', maxSteps: 1 }),
  memory: memory([notes]),
  llm: { provider: 'scripted', script: [{ toolCalls: [{ name: 'notes/add', arguments: { text: 'likes tea' } }] }, { text: 'Noted.' }] },
});
// The inspector's page ships in the package: it is served, and records the turn.
const inspector = await startInspector(harness);
await harness.execute('I like tea', { threadId: 'esm' });
const { text } = await harness.getAgentResponse({ threadId: 'esm' });
const page = await fetch(inspector.url).then((r) => r.text());
if (!page.includes('Noetic inspector')) throw new Error('the inspector page is missing from the package');
await inspector.close();
const stored = await createSqliteStorage(file).get('layers/notes/esm/state');
console.log(`esm: ${text} ${JSON.stringify(stored)}`);

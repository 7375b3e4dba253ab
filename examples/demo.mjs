// An agent with memory layers, run twice on one thread: the second run remembers what the first stored.
// Without OPENROUTER_API_KEY it uses the built-in scripted model, so it needs no key and gives the same output every
// time. With the key set it talks to OpenRouter (model from NOETIC_DEMO_MODEL, default openai/gpt-4o-mini).
import { z } from 'zod';
import {
  AgentHarness, createInMemoryStorage, createMessage, layerData, layerFn, memory, observationalMemory, react, workingMemory,
} from '../js/index.mjs';

// A memory layer of your own: notes the model can add to with the tool `notes/add`, recalled into every model call.
function notesLayer() {
  return {
    id: 'notes',
    slot: 275,
    scope: 'thread',
    budget: { min: 200, max: 1000 },
    provides: {
      count: layerData({ read: (state) => state.entries.length }),
      add: layerFn({
        description: 'Remember a note about the user.',
        input: z.object({ text: z.string() }),
        output: z.void(),
        execute: async (args, state) => ({ result: undefined, state: { entries: [...state.entries, args.text] } }),
      }),
    },
    hooks: {
      init: async ({ storage }) => ({ state: (await storage.get('state')) ?? { entries: [] } }),
      recall: async ({ state }) =>
        state.entries.length ? { items: [createMessage(`<notes>\n${state.entries.join('\n')}\n</notes>`, 'developer')], tokenCount: 10 } : null,
    },
  };
}

const script = [
  { toolCalls: [{ name: 'notes/add', arguments: { text: 'The user drinks green tea.' } }, { name: 'working-memory/update', arguments: { name: 'Ada' } }] },
  { text: 'Nice to meet you, Ada. I will remember the tea.' },
  { text: 'You are Ada, and you drink green tea.' },
];
const live = Boolean(process.env.OPENROUTER_API_KEY);
const model = process.env.NOETIC_DEMO_MODEL || 'openai/gpt-4o-mini';
const storage = createInMemoryStorage();
const instructions = 'You are a helpful assistant. Save what you learn about the user with your memory tools.';
const agent = react({ model, instructions, maxSteps: 1 });
const harness = new AgentHarness({
  name: 'demo',
  params: {},
  storage,
  initialStep: agent,
  memory: memory([workingMemory(), notesLayer(), observationalMemory()]),
  // The OpenRouter provider reads its key from OPENROUTER_API_KEY.
  llm: live ? { provider: 'openrouter' } : { provider: 'scripted', script },
});
console.log(live ? `(model: ${model} on OpenRouter)\n` : '(model: the built-in scripted model; set OPENROUTER_API_KEY for a real one)\n');

// One session: each message is a turn over the thread's growing history, with the layers remembering across turns.
const thread = { threadId: 'demo-thread' };
for (const message of ["Hi, I'm Ada and I love green tea.", 'What do you know about me?']) {
  console.log(`user:  ${message}`);
  await harness.execute(message, thread);
  const response = await harness.getAgentResponse(thread);
  console.log(`agent: ${response.text}   (${response.items.length} items in the thread)`);
}
console.log('\nstored memory:');
for (const key of await storage.list('layers/')) console.log(`  ${key} = ${JSON.stringify(await storage.get(key))}`);

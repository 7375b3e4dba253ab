// Takes the README's picture of the inspector: a three-layer agent runs four turns on a thread, and the system's
// Chromium (puppeteer-core) photographs the page. `node scripts/inspector-screenshot.mjs [out.png]`.
import { existsSync } from 'node:fs';
import puppeteer from 'puppeteer-core';
import { AgentHarness, createMessage, step } from '../js/index.mjs';
import { startInspector } from '../js/inspector.mjs';

const out = process.argv[2] ?? 'docs/inspector.png';
const chromium = process.env.CHROMIUM_PATH ?? ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => existsSync(p));
const memory = [
  {
    id: 'profile',
    name: 'User profile',
    slot: 50,
    scope: 'resource',
    budget: { min: 100, max: 600 },
    hooks: { recall: async () => ({ items: [createMessage('The user is Ada, a climber based in Lisbon. Prefers metric units.', 'developer')], tokenCount: 18 }) },
  },
  {
    id: 'notes',
    name: 'Session notes',
    slot: 100,
    scope: 'thread',
    budget: { min: 20, max: 120 },
    hooks: {
      init: async () => ({ state: { notes: [] } }),
      recall: async ({ state }) => ({ items: [createMessage(`Notes so far:\n${'- planning a trip to the Alps, late June\n'.repeat(8 + state.notes.length * 4)}`, 'developer')], tokenCount: 100 + state.notes.length * 60 }),
      store: async ({ state, newItems }) => ({ state: { notes: [...state.notes, newItems.length] } }),
    },
  },
  { id: 'weather', name: 'Weather feed', slot: 200, scope: 'thread', recallMode: 'eventual', hooks: { recall: async () => ({ items: [createMessage('Chamonix: 14°C, light rain, snow above 2800 m.', 'developer')], tokenCount: 16 }) } },
  { id: 'search', name: 'Search index', slot: 300, scope: 'thread', hooks: { recall: async () => { throw new Error('index offline (ECONNREFUSED)'); } } },
];
let n = 0;
const model = async () => ({
  items: [{ type: 'message', id: `a${++n}`, role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: ['Late June is a good time for the Alps.', 'Chamonix is a fine base; expect rain early in the week.', 'Pack layers: 14°C in the valley, snow above 2800 m.', 'The Aiguille du Midi lift opens at 7:10.'][(n - 1) % 4], annotations: [] }] }],
  usage: { inputTokens: 400 + n * 120, outputTokens: 20 + n * 3 },
});
const harness = new AgentHarness({ name: 'trip-planner', params: {}, memory, projection: { tokenBudget: 1200, responseReserve: 200, overflow: 'sliding_window' }, initialStep: step.llm({ id: 'chat', model: 'anthropic/claude-sonnet-4' }), _testCallModel: model, onDiagnostic: () => {} });
const inspector = await startInspector(harness);
for (const text of ['When should I go to the Alps?', 'Where should I stay?', 'What should I pack?', 'When does the lift open?']) {
  await harness.execute(text, { threadId: 'ada-trip' });
  await harness.getAgentResponse({ threadId: 'ada-trip' });
}
const browser = await puppeteer.launch({ executablePath: chromium, headless: true, args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'] });
const page = await browser.newPage();
await page.setViewport({ width: 1280, height: 900, deviceScaleFactor: 1 });
await page.goto(inspector.url);
await page.waitForSelector('[data-layer]');
await page.click('[data-testid="window-items"] > summary');
await page.waitForSelector('[data-testid="spans"]');
await page.screenshot({ path: out });
await browser.close();
await inspector.close();
console.log(`wrote ${out}`);

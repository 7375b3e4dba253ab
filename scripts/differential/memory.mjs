// memory: 1-4 layers of every scope, recall and store results of every shape, budgets that drop, projectHistory, a
// context window that may trim, one or two sessions of one to three turns. The hook records are compared as a set,
// not in order: this package runs init, store and onComplete in slot order (founding D2), upstream in array order.
// Left out, as decided differences: onItemAppend (M5: here it also sees the session's message) and onComplete and
// dispose (S1: here they run after each turn).
import { textsOf, plain, answer, sleep } from './shared.mjs';

export async function memory({ AgentHarness, createMessage, step, createInMemoryStorage }, { next, pick }) {
  const seen = [];
  // The keys each hook's parameters and their ctx have (a set: hooks run once per layer and turn).
  const shapes = new Set();
  const shapeOf = (params) => [Object.keys(params).sort(), Object.keys(params.ctx ?? {}).sort(), Object.keys(params.ctx?.tokenUsage ?? {}).sort()];
  const layers = Array.from({ length: 1 + Math.floor(next() * 4) }, (_, i) => {
    const scope = pick(['thread', 'resource', 'execution', 'global']);
    const recallKind = pick(['null', 'string', 'items', 'itemsUncounted', 'large']);
    const storeKind = pick(['nothing', 'empty', 'state', 'undefinedState']);
    const budget = pick([{ min: 0, max: 30 }, { min: 10, max: 200 }, { min: 50, max: 500 }, 40, 300]);
    const projectKind = pick(['none', 'none', 'lastTwo', 'all']);
    const hooks = {
      init: async (params) => {
        const { storage } = params;
        shapes.add(JSON.stringify(['init', shapeOf(params)]));
        const saved = await storage.get('saved');
        seen.push(['init', i, scope, plain(saved)]);
        await storage.set('saved', { inits: (saved?.inits ?? 0) + 1 });
        return { state: { notes: saved?.notes ?? [] } };
      },
      recall: async (params) => {
        const { state, budget: given, log } = params;
        shapes.add(JSON.stringify(['recall', shapeOf(params)]));
        seen.push(['recall', i, given, plain(state), log.items.length]);
        const notes = state?.notes ?? [];
        if (recallKind === 'null' || notes.length === 0) return null;
        if (recallKind === 'string') return `notes of ${i}: ${notes.join(', ')}`;
        if (recallKind === 'large') return { items: [createMessage(`${'x'.repeat(400)}${notes.join(',')}`, 'developer')], tokenCount: 120 };
        const items = [createMessage(`layer ${i}: ${notes.join(' | ')}`, 'developer')];
        return recallKind === 'items' ? { items, tokenCount: 15 } : { items };
      },
      store: async (params) => {
        const { state, newItems, response } = params;
        shapes.add(JSON.stringify(['store', shapeOf(params), Object.keys(response).sort()]));
        seen.push(['store', i, plain(state), textsOf(newItems), plain(response.usage)]);
        if (storeKind === 'nothing') return undefined;
        if (storeKind === 'empty') return {};
        if (storeKind === 'undefinedState') return { state: undefined };
        return { state: { notes: [...(state?.notes ?? []), `saw ${newItems.length}`].slice(-3) } };
      },
    };
    if (projectKind !== 'none') {
      hooks.projectHistory = async (params) => {
        const { items } = params;
        shapes.add(JSON.stringify(['projectHistory', shapeOf(params)]));
        seen.push(['project', i, textsOf(items)]);
        return { items: projectKind === 'lastTwo' ? items.slice(-2) : items };
      };
    }
    return { id: `layer-${i}`, slot: pick([10, 50, 100, 200]) + i, scope, budget, hooks };
  });
  let calls = 0;
  const storage = createInMemoryStorage();
  const harness = new AgentHarness({
    name: 'differential', params: {}, storage, memory: layers, contextWindow: pick([undefined, 400, 2000]),
    initialStep: step.llm({ id: 'chat', model: 'test' }),
    _testCallModel: async (request) => {
      seen.push(['model', textsOf(request.items)]);
      const k = ++calls;
      await sleep(1 + (k % 3));
      return answer(k);
    },
  });
  const out = [];
  const sessions = Array.from({ length: 1 + Math.floor(next() * 2) }, (_, s) => ({ thread: `thread-${s}`, resourceId: pick([undefined, 'resource-1']), turns: 1 + Math.floor(next() * 3) }));
  for (const { thread, resourceId, turns } of sessions) {
    for (let t = 0; t < turns; t++) {
      try {
        await harness.execute(`message ${t} of ${thread}`, { threadId: thread, resourceId });
        const response = await harness.getAgentResponse({ threadId: thread });
        out.push([thread, t, response.text, textsOf(response.items)]);
      } catch (e) {
        out.push([thread, t, 'failed', String(e?.message ?? e).slice(0, 120)]);
      }
    }
  }
  const stored = {};
  for (const key of (await storage.list('')).sort()) stored[key.replace(/[0-9a-f]{8}-[0-9a-f-]{27}/g, '<uuid>')] = await storage.get(key);
  return [JSON.stringify(layers.map((l) => [l.scope, l.budget, Object.keys(l.hooks).join('|')])), ...seen.map((x) => JSON.stringify(x)).sort(), ...out.map((x) => JSON.stringify(x)), JSON.stringify(stored), ...[...shapes].sort()];
}

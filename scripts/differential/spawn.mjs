// spawn: a run whose step spawns children (one or two levels, a timeout or none) under layers with onSpawn and
// onReturn (child states, items for the child, a result replaced or kept), and LLM
// steps on both sides of the spawn under a test model: what each hook is handed (states, the child's log, the
// result), each model request, and the output or error. It runs as a session's turn: a bare `harness.run` inits
// layers here and not upstream (M10). Left out, as a decided difference: a spawn with memory of its own (M4: its
// layers are initialised in the child here, inert upstream).
import { plain, sleep, itemText, failureOf } from './shared.mjs';


export async function spawn(api, { next, pick }) {
  const { AgentHarness, step, spawn: spawnStep, loop, until, createMessage } = api;
  const seen = [];
  const layer = (id, slot) => {
    const spawnKind = pick(['copy', 'fresh', 'null', 'items', 'none']);
    const returnKind = pick(['merge', 'result', 'undefined', 'none']);
    const hooks = {
      init: async () => ({ state: { id, notes: [] } }),
      recall: async ({ state }) => (seen.push(['recall', id, plain(state)]), state?.notes?.length ? `${id} knows ${state.notes.join(',')}` : null),
      store: async ({ state, newItems }) => ({ state: { ...state, notes: [...(state?.notes ?? []), `saw ${newItems.length}`].slice(-3) } }),
    };
    if (spawnKind !== 'none') {
      hooks.onSpawn = async ({ parentState, childCtx }) => {
        seen.push(['onSpawn', id, plain(parentState), Object.keys(childCtx).sort(), childCtx.depth ?? null]);
        if (spawnKind === 'null') return null;
        if (spawnKind === 'fresh') return { childState: { id, notes: ['child'] } };
        if (spawnKind === 'items') return { childState: parentState, items: [createMessage(`from ${id}`, 'developer')] };
        return { childState: parentState };
      };
    }
    if (returnKind !== 'none') {
      hooks.onReturn = async ({ childState, childLog, parentState, result }) => {
        seen.push(['onReturn', id, plain(childState), childLog.items.map(itemText), plain(parentState), plain(result)]);
        if (returnKind === 'undefined') return undefined;
        if (returnKind === 'result') return { parentState, result: `${id} rewrote ${result}` };
        return { parentState: { ...parentState, notes: [...(parentState?.notes ?? []), 'child returned'] } };
      };
    }
    return { id, slot, scope: pick(['execution', 'thread']), hooks };
  };
  const parentLayers = Array.from({ length: 1 + Math.floor(next() * 2) }, (_, i) => layer(`p${i}`, 100 + i * 10));
  const child = (depth) => {
    const body = depth < 1 && next() < 0.4
      ? step.run({ id: `inner-${depth}`, execute: async (input, ctx) => ctx.harness.run(child(depth + 1), `${input} (deeper)`, ctx) })
      : pick([
        step.llm({ id: `child-llm-${depth}`, model: 'test', instructions: 'child' }),
        step.run({ id: `child-run-${depth}`, execute: async (input, ctx) => (seen.push(['child run', plain(input), ctx.depth]), `child did ${input}`) }),
        loop({ id: `child-loop-${depth}`, steps: [step.llm({ id: `child-loop-llm-${depth}`, model: 'test' })], until: until.maxSteps(2) }),
      ]);
    return spawnStep({ id: `spawn-${depth}`, child: body, ...(next() < 0.2 ? { timeout: 5000 } : {}) });
  };
  const root = loop({
    id: 'root',
    steps: [pick([step.llm({ id: 'parent-llm', model: 'test', instructions: 'parent' }), step.run({ id: 'parent-run', execute: async (input) => `parent saw ${input}` })]), child(0)],
    until: until.maxSteps(1 + Math.floor(next() * 2)),
  });
  let calls = 0;
  const harness = new AgentHarness({
    name: 'differential', params: {}, memory: parentLayers, initialStep: root,
    _testCallModel: async (request) => {
      const k = ++calls;
      seen.push(['model', request.instructions ?? null, request.items.map(itemText)]);
      await sleep(1);
      return { items: [{ type: 'message', id: `a${k}`, role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: `answer ${k}`, annotations: [] }] }], usage: { inputTokens: 5, outputTokens: 2 } };
    },
  });
  let outcome;
  try {
    await harness.execute(pick(['go', 'start now']), { threadId: 'thread' });
    const response = await harness.getAgentResponse({ threadId: 'thread' });
    outcome = ['output', plain(response.text), response.items.map(itemText)];
  } catch (e) {
    outcome = ['error', ...failureOf(e)];
  }
  return [...seen.map((x) => JSON.stringify(x)), JSON.stringify(outcome)];
}

// until: a loop over a step whose outputs the seed chooses (text that repeats or not, objects with a text field,
// other values; a cost added through a test model's usage) stopped by until's predicates and their combinations:
// maxSteps, maxCost, outputContains, outputEquals, converged (exact, or by embedding with a threshold and a cache or
// none), verified (with feedback), custom, any and all; with maxIterations and prepareNext in some programs. What
// each step run and verifier receives, each prepareNext call, and the loop's output or error with its reason.
import { plain, sleep, runOutcome } from './shared.mjs';

const embedText = (text) => ['a', 'e', 'o', 's', 't'].map((letter) => [...String(text).toLowerCase()].filter((c) => c === letter).length + 1);

export async function until(api, { next, pick }) {
  const { AgentHarness, step, loop, until: u, any, all, createInMemoryStorage } = api;
  const seen = [];
  const outputs = Array.from({ length: 6 }, () => pick(['same text', 'same text', 'DONE now', 'other text', { text: 'object text' }, { value: 3 }, 42, 'same texts']));
  let runs = 0;
  const body = step.run({ id: 'body', execute: async (input) => (seen.push(['run', ++runs, plain(input)]), outputs[(runs - 1) % outputs.length]) });
  const priced = step.llm({ id: 'priced', model: 'test' });
  const predicate = (depth = 0) => {
    const kind = depth > 1 ? pick(['maxSteps', 'outputContains']) : pick(['maxSteps', 'maxCost', 'outputContains', 'outputEquals', 'converged', 'convergedEmbed', 'verified', 'custom', 'any', 'all']);
    switch (kind) {
      case 'maxSteps': return u.maxSteps(1 + Math.floor(next() * 5));
      case 'maxCost': return u.maxCost(pick([0.001, 0.01, 1]));
      case 'outputContains': return u.outputContains(pick(['DONE', 'text', 'zzz']));
      case 'outputEquals': return u.outputEquals(pick(['same text', 'object text', '42']));
      case 'converged': return u.converged({});
      case 'convergedEmbed': {
        const cache = next() < 0.5 ? { cache: createInMemoryStorage() } : {};
        return u.converged({ threshold: pick([0.9, 0.99]), embed: async (texts) => (seen.push(['embed', texts]), texts.map(embedText)), ...cache });
      }
      case 'verified': return u.verified(async (output, snapshot) => {
        const pass = JSON.stringify(output ?? null).includes('DONE');
        seen.push(['verify', plain(output), snapshot?.stepCount ?? null]);
        return pass ? { pass } : { pass, feedback: pick([undefined, 'not yet']) };
      });
      case 'custom': return u.custom((snapshot) => (seen.push(['custom', snapshot.stepCount, snapshot.lastText]), { stop: snapshot.stepCount >= 3, reason: 'custom says so' }));
      case 'any': return any(predicate(depth + 1), predicate(depth + 1));
      default: return all(predicate(depth + 1), predicate(depth + 1));
    }
  };
  const withCost = next() < 0.3;
  const root = loop({
    id: 'loop',
    steps: withCost ? [body, priced] : [body],
    until: predicate(),
    maxIterations: pick([undefined, 4, 8]),
    ...(next() < 0.4 ? { prepareNext: (output, verdict) => (seen.push(['prepareNext', plain(output), plain(verdict)]), `next after ${JSON.stringify(output)}`) } : {}),
  });
  const harness = new AgentHarness({
    name: 'differential', params: {},
    _testCallModel: async () => (await sleep(1), { items: [{ type: 'message', id: `p${runs}`, role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: outputs[runs % outputs.length] === 42 ? 'DONE by model' : 'model says same text', annotations: [] }] }], usage: { inputTokens: 10, outputTokens: 5 }, cost: 0.004 }),
  });
  const outcome = await runOutcome(harness, root, 'start');
  return [JSON.stringify([outputs, withCost]), ...seen.map((x) => JSON.stringify(x)), JSON.stringify(outcome)];
}

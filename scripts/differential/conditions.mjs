// conditions: a branch routed by semanticRoute (when-clauses over embeddingMatch in both forms, aiCondition under a
// test model whose answers are JSON booleans or not, anyCondition, allCondition; an otherwise or none) or by
// semanticSwitch (simple or multi-label cases, a threshold, a storage cache or none), run over several inputs in
// one context: which step each input reaches, what the embedder is asked (label vectors are embedded once and
// cached), each model request, the context's usage, and the stored cache keys.
import { plain, sleep, failureOf } from './shared.mjs';

// A deterministic embedding: letter counts of a few letters, so that texts sharing words are close.
const embedText = (text) => ['a', 'e', 'i', 'o', 'u', 'r', 's', 't'].map((letter) => [...text.toLowerCase()].filter((c) => c === letter).length);

export async function conditions(api, { next, pick }) {
  const { AgentHarness, step, branch, semanticRoute, semanticSwitch, when, otherwise, embeddingMatch, aiCondition, anyCondition, allCondition, createInMemoryStorage } = api;
  const seen = [];
  const embed = async (texts) => (seen.push(['embed', texts]), texts.map(embedText));
  const target = (name) => step.run({ id: `to-${name}`, execute: async (input) => (seen.push(['reached', name, plain(input)]), `${name}:${input}`) });
  const labels = ['order status', 'refund please', 'technical issue', 'sales question'];
  const storage = next() < 0.5 ? createInMemoryStorage() : undefined;
  let answers = 0;
  const harness = new AgentHarness({
    name: 'differential', params: {},
    _testCallModel: async (request) => {
      seen.push(['model', request.model, request.items.map((item) => `${item.role}:${item.content?.[0]?.text}`), plain(request.params)]);
      await sleep(1);
      const text = pick(['{"answer": true}', '{"answer": false}', '{"answer": "yes"}', 'true', '']);
      return { items: [{ type: 'message', id: `a${++answers}`, role: 'assistant', status: 'completed', content: [{ type: 'output_text', text, annotations: [] }] }], usage: { inputTokens: 7, outputTokens: 3 } };
    },
  });
  const condition = () => {
    switch (pick(['match', 'matchMany', 'ai', 'any', 'all'])) {
      case 'match':
        return embeddingMatch(embed, pick(labels), pick([0.5, 0.8, 0.95]));
      case 'matchMany':
        return embeddingMatch({ embed, labels: [pick(labels), pick(labels)], threshold: pick([0.6, 0.9]), match: pick([undefined, 'any', 'all']), ...(storage ? { cache: storage } : {}) });
      case 'ai':
        return aiCondition({ model: 'test', prompt: pick(['is it urgent?', 'is it about money?']) });
      case 'any':
        return anyCondition(embeddingMatch(embed, pick(labels), 0.8), aiCondition({ model: 'test', prompt: 'either?' }));
      default:
        return allCondition(aiCondition({ model: 'test', prompt: 'both?' }), embeddingMatch(embed, pick(labels), 0.5));
    }
  };
  let route;
  if (next() < 0.5) {
    const clauses = Array.from({ length: 1 + Math.floor(next() * 3) }, (_, i) => when(condition(), target(`when${i}`)));
    if (next() < 0.6) clauses.push(otherwise(target('otherwise')));
    route = semanticRoute(...clauses);
  } else {
    const threshold = pick([undefined, 0.5, 0.9, 0.99]);
    const fallback = next() < 0.5 ? { default: target('default') } : {};
    const cache = storage ? { cache: storage } : {};
    route = next() < 0.5
      ? semanticSwitch({ embed, cases: Object.fromEntries(labels.slice(0, 3).map((label) => [label, target(label)])), threshold, ...fallback, ...cache })
      : semanticSwitch({ embed, cases: [{ labels: [labels[0], labels[1]], step: target('money') }, { labels: labels[2], step: target('tech') }], threshold, ...fallback, ...cache });
  }
  const root = branch({ id: 'route', route });
  const ctx = harness.createContext({ threadId: 'thread' });
  const out = [];
  for (const input of ['where is my order status', 'I want a refund please', 'my technical issue again', 'hello', { ask: 'refund' }].slice(0, 2 + Math.floor(next() * 4))) {
    try {
      out.push(['output', plain(await harness.run(root, input, ctx))]);
    } catch (e) {
      out.push(['error', ...failureOf(e)]);
    }
  }
  out.push(['usage', plain(ctx.tokens)]);
  if (storage) out.push(['cached', (await storage.list('')).sort()]);
  return [...seen, ...out].map((x) => JSON.stringify(x));
}

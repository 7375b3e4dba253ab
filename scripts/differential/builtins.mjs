// builtins: sessions over some of the built-in layers (historyWindow, staticContent, workingMemory, planMemory, and
// steering with a rule on each model response that allows, denies or guides by the answer's number) and a JS layer
// beside them, in the configurations chosen by the seed, under a test model: each model request (its items,
// instructions and tools), what the rule is handed, the responses, and the stored keys and values. Timestamps read
// from the clock are one placeholder. Left out, as decided differences: the layers that act on the session's message
// or on a turn's end (observationalMemory, temporalMemory, durableTaskState): here the session's message passes
// through onItemAppend (M5) and every turn is an execution that completes (S1), so their states differ by design;
// for the same reason steering is execution-scoped (its onComplete writes each turn's outcome into its ledger).
import { answer, plain, sleep, itemText } from './shared.mjs';

export async function builtins(api, { next, pick }) {
  const { AgentHarness, step, createInMemoryStorage, historyWindow, staticContent, workingMemory, planMemory, steering } = api;
  const seen = [];
  const makers = {
    historyWindow: () => historyWindow({ maxItems: pick([2, 3, 5]) }),
    staticContent: () => staticContent({ load: async () => pick(['Answer in one line.', '', 'x'.repeat(900)]), ...(next() < 0.5 ? { tag: 'rules' } : {}), scope: pick(['thread', 'resource']) }),
    workingMemory: () => workingMemory({ scope: pick(['thread', 'resource']), ...(next() < 0.4 ? { template: '# Notes\n- ' } : {}) }),
    planMemory: () => planMemory(),
    // Rules on each model response: by the answer's number, allow, deny, or guide (a retry with the guidance).
    steering: () =>
      steering({
        scope: 'execution', maxRetries: pick([undefined, 0, 2]), maxLedgerEntries: pick([undefined, 2]),
        rules: [{
          id: 'by-number', appliesTo: ['afterModelCall'],
          predicate: (params) => {
            const text = params.response?.items?.map((item) => item.content?.[0]?.text ?? '').join('') ?? '';
            seen.push(['rule', Object.keys(params).sort(), text]);
            const verdict = verdicts[Number(text.replace(/\D/g, '')) % verdicts.length];
            return verdict === 'allow' ? { action: 'allow' } : { action: verdict, guidance: `try again, not ${text}` };
          },
        }],
      }),
  };
  const verdicts = [pick(['allow', 'guide']), pick(['allow', 'deny', 'guide']), 'allow'];
  const names = Object.keys(makers).filter(() => next() < 0.4).slice(0, 4);
  const layers = names.map((name) => makers[name]());
  if (next() < 0.5) layers.push({ id: 'js-notes', slot: pick([50, 150, 350]), scope: 'thread', budget: pick([40, { min: 0, max: 200 }]), hooks: { recall: async ({ budget }) => (seen.push(['js recall', budget]), 'remember the notes') } });
  let calls = 0;
  const storage = createInMemoryStorage();
  const harness = new AgentHarness({
    name: 'differential', params: {}, storage, memory: layers, contextWindow: pick([undefined, 600, 3000]),
    initialStep: step.llm({ id: 'chat', model: 'test', instructions: pick([undefined, 'be kind']) }),
    _testCallModel: async (request) => {
      seen.push(['model', request.instructions ?? null, request.items.map(itemText), (request.tools ?? []).map((t) => t.name).sort()]);
      await sleep(1);
      return answer(++calls);
    },
  });
  const out = [];
  for (const [thread, resourceId] of [['thread-0', 'resource-1'], ['thread-1', 'resource-1']].slice(0, 1 + Math.floor(next() * 2))) {
    const turns = 1 + Math.floor(next() * 3);
    for (let t = 0; t < turns; t++) {
      try {
        await harness.execute(`message ${t} of ${thread}: ${'words '.repeat(Math.floor(next() * 30))}`, { threadId: thread, resourceId });
        const response = await harness.getAgentResponse({ threadId: thread });
        out.push([thread, t, response.text, response.items.map(itemText)]);
      } catch (e) {
        out.push([thread, t, 'failed', String(e?.message ?? e).slice(0, 160)]);
      }
    }
  }
  const stored = {};
  for (const key of (await storage.list('')).sort()) stored[key.replace(/[0-9a-f]{8}-[0-9a-f-]{27}/g, '<uuid>')] = plain(await storage.get(key));
  return [JSON.stringify(names), ...[...seen, ...out, stored].map((x) => JSON.stringify(x).replace(/\b1[0-9]{12}\b/g, '<ts>'))];
}


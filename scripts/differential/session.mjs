// session: a seeded sequence of the session API on one or two threads under a test model: execute (a string, an
// item, items, an empty string; with resourceId, state, messageId), getAgentResponse, previewRequestItems,
// seedSessionHistory, getStatus, getQueueSize, and abort while idle; with a recall layer in some programs and a
// model that fails some calls. What each call returns or throws, and each model request.
import { plain, sleep, itemText } from './shared.mjs';


export function session(api, random) {
  return sessionProgram(api, random, {});
}

// The same program with persistSessions on ours (upstream has no such option and ignores it): each thread's history
// in storage, and sessions that leave memory 2 ms after going idle, once their response is read, so that most turns
// and previews read their history back. What user code sees must not change.
export function persisted(api, random) {
  return sessionProgram(api, random, { persistSessions: true, sessionIdleMs: 2, storage: api.createInMemoryStorage() });
}

async function sessionProgram(api, { next, pick }, options) {
  const { AgentHarness, step, createMessage } = api;
  const lines = [];
  // Model calls and recalls apart from the API's results, as a set: when a turn starts relative to the `execute`
  // that asked for it is timing (here within the microtask after it, upstream a few ticks later), and so is how two
  // threads' turns interleave.
  const modelCalls = [];
  // The model's answers depend on what it is asked, never on the order of calls: two threads' turns interleave
  // by timing. It fails for a message marked so.
  const fails = () => (next() < 0.2 ? ' (fails)' : '');
  const memory = next() < 0.5
    ? [{ id: 'notes', slot: 100, scope: 'thread', hooks: { recall: async ({ state, ctx }) => (modelCalls.push(JSON.stringify(['recall', plain(state), ctx.threadId])), 'keep it short') } }]
    : undefined;
  const harness = new AgentHarness({
    ...options,
    name: 'differential', params: {}, memory,
    initialStep: step.llm({ id: 'chat', model: 'test' }),
    _testCallModel: async (request) => {
      const asked = request.items.map(itemText);
      modelCalls.push(JSON.stringify(['model', asked]));
      await sleep(1);
      const last = asked.at(-1) ?? '';
      if (last.endsWith('(fails)')) throw new Error(`the model failed on ${last}`);
      return { items: [{ type: 'message', id: `a${asked.length}`, role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: `re: ${last}`, annotations: [] }] }], usage: { inputTokens: 3, outputTokens: 2 } };
    },
  });
  const record = async (what, run) => {
    try {
      lines.push(JSON.stringify([what, 'ok', await run()]));
    } catch (e) {
      lines.push(JSON.stringify([what, 'threw', e?.code ?? e?.noeticError?.kind ?? e?.name, String(e?.message ?? e).slice(0, 120)]));
    }
  };
  const response = (r) => [plain(r.text), r.items.map(itemText), plain(r.usage), r.cost ?? null];
  for (let i = 0; i < 8; i++) {
    const threadId = pick(['a', 'a', 'b']);
    const scope = { threadId };
    switch (pick(['turn', 'turn', 'turn', 'preview', 'seed', 'status', 'abort', 'two'])) {
      case 'turn': {
        const input = pick([`message ${i}${fails()}`, createMessage(`item ${i}${fails()}`, 'user'), [createMessage(`first ${i}`, 'user'), createMessage(`second ${i}${fails()}`, 'user')], '', createMessage(`note ${i}`, 'developer')]);
        const options = { threadId, ...(next() < 0.3 ? { resourceId: 'r1' } : {}), ...(next() < 0.3 ? { messageId: `id-${i}` } : {}), ...(next() < 0.2 ? { state: { turn: i } } : {}) };
        await record('execute', async () => plain(await harness.execute(input, options)));
        await record('response', async () => response(await harness.getAgentResponse(scope)));
        break;
      }
      case 'two':
        // Two messages, the second sent while the first's turn runs.
        await record('execute', async () => plain(await harness.execute(`now ${i}${fails()}`, scope)));
        await record('queue', async () => [harness.getStatus(scope).kind, harness.getQueueSize(scope)]);
        await record('execute', async () => plain(await harness.execute(`then ${i}${fails()}`, scope)));
        await record('queue', async () => [harness.getStatus(scope).kind, harness.getQueueSize(scope)]);
        await record('response', async () => response(await harness.getAgentResponse(scope)));
        // A failed first turn answers at once, with the second still to run: let it, as its timing is not ours.
        await settle(harness, threadId);
        break;
      case 'preview':
        await record('preview', async () => (await harness.previewRequestItems(scope)).map(itemText));
        break;
      case 'seed':
        // Awaited: ours returns a promise that settles once the seed is stored (DECISIONS S33), upstream's nothing.
        await record('seed', async () => plain(await harness.seedSessionHistory(threadId, [createMessage(`seeded ${i}`, 'user'), { type: 'message', id: `s${i}`, role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: `seeded answer ${i}`, annotations: [] }] }])));
        break;
      case 'status':
        await record('status', async () => {
          const { startedAt, turnId, ...status } = harness.getStatus(scope);
          return [status, typeof startedAt, typeof turnId, harness.getQueueSize(scope)];
        });
        break;
      default:
        await record('abort', async () => plain(await harness.abort({ ...scope, reason: 'nothing to stop' })));
    }
  }
  for (const threadId of ['a', 'b']) await settle(harness, threadId);
  return [...lines, ...modelCalls.sort()];
}

// Waits until the thread has no turn running or queued.
async function settle(harness, threadId) {
  for (let i = 0; i < 400 && (harness.getStatus({ threadId }).kind !== 'idle' || harness.getQueueSize({ threadId }) > 0); i++) await sleep(5);
}

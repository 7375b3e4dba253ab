// durable: runnableLoop driving a session under a test model, with createStallNudgeHook after the first turn: a
// model that resolves the detached signal in some turn (through a step.run after the model, standing in for a
// terminal tool), fails a turn, or never does (the hook nudges once, then escalates through onStall); priorItems
// that seed the thread instead; a pending external wait that holds the hook back. What each model request sees,
// whether onStall ran, and what the loop resolves with.
import { itemText, plain, sleep } from './shared.mjs';

export async function durable(api, { next, pick }) {
  const { AgentHarness, step, loop, until, runnableLoop, createStallNudgeHook, createNudgeMessage, createDetachedSignal, createMessage } = api;
  const seen = [];
  const signal = createDetachedSignal();
  const finishOn = pick([0, 1, 2, 99]);
  const failOn = pick([0, 2, 99]);
  let turns = 0;
  const chat = step.llm({ id: 'chat', model: 'test' });
  const terminal = step.run({
    id: 'terminal',
    execute: async (input) => {
      if (turns === finishOn) signal.resolve({ done: `finished in turn ${turns}` });
      return input;
    },
  });
  const harness = new AgentHarness({
    name: 'differential', params: {},
    initialStep: loop({ id: 'turn', steps: [chat, terminal], until: until.maxSteps(1) }),
    _testCallModel: async (request) => {
      turns++;
      seen.push(['model', turns, request.items.map(itemText)]);
      await sleep(1);
      if (turns === failOn) throw new Error(`turn ${turns} failed`);
      return { items: [{ type: 'message', id: `a${turns}`, role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: `working ${turns}`, annotations: [] }] }], usage: { inputTokens: 2, outputTokens: 1 } };
    },
  });
  const pending = next() < 0.2;
  const hook = createStallNudgeHook({
    harness, threadId: 'job', signal,
    nudgeMessage: createNudgeMessage({ id: 'nudge-1', ...(next() < 0.5 ? { text: 'keep going' } : {}) }),
    hasPendingExternal: () => pending,
    onStall: async () => void seen.push(['onStall', turns]),
    buildStalledOutcome: () => ({ stalled: true, turns }),
  });
  const prior = next() < 0.2 ? [createMessage('earlier', 'user')] : undefined;
  let outcome;
  try {
    const done = runnableLoop({ harness, threadId: 'job', signal, initialMessage: 'start the job', afterFirstTurn: hook, ...(prior ? { priorItems: prior } : {}) });
    // A loop that nothing ends (seeded, or waiting on something external) is ended from outside.
    const ended = await Promise.race([done.then((value) => ['resolved', plain(value)], (e) => ['rejected', String(e?.message ?? e)]), sleep(300).then(() => ['still waiting'])]);
    if (ended[0] === 'still waiting') signal.resolve({ ended: 'from outside' });
    // A signal settles once: a later resolve changes nothing.
    signal.resolve({ late: true });
    outcome = [...ended, plain(await done), plain(await signal.done)];
  } catch (e) {
    outcome = ['error', e?.code ?? e?.name, String(e?.message ?? e).slice(0, 160)];
  }
  return [JSON.stringify([finishOn, failOn, pending, Boolean(prior)]), ...seen.map((x) => JSON.stringify(x)), JSON.stringify(outcome)];
}

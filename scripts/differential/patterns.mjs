// patterns: one of upstream's patterns run with harness.run under a scripted test model. `interview` (the model's
// envelopes, a question, a completion or text that is not JSON, chosen by the seed; what askQuestion and onComplete
// are handed), `adaptivePlan` (plans that fit, name an unknown agent, break the schema, or whose agent fails, so that
// it revises; what each agent's step is handed), `react` and `ralphWiggum` (replies that are text or tool calls, a
// verifier that passes or gives feedback). Each model request's items and instructions, and the output or error.
// Which agent factories compilePlan calls is left out (M18: it checks every assignee first). A test model's tool calls
// are not run (as upstream's), so they stay unanswered in the log, and requests are compared with such calls
// stripped: here the projection drops them with or without layers (founding D10, W1), upstream only with layers.
import { createRequire } from 'node:module';
import path from 'node:path';
import { plain, sleep, itemText, runOutcome } from './shared.mjs';

const message = (k, text) => ({ type: 'message', id: `a${k}`, role: 'assistant', status: 'completed', content: [{ type: 'output_text', text, annotations: [] }] });

export async function patterns(api, { next, pick }) {
  const { AgentHarness, step, tool, interview, adaptivePlan, react, ralphWiggum, stripUnresolvedToolCalls } = api;
  const { z } = createRequire(path.join(process.env.NOETIC_UPSTREAM_PKG, 'package.json'))('zod');
  const seen = [];
  // The model's replies, in order; past the script it answers plain text.
  const script = [];
  let calls = 0;
  const harness = new AgentHarness({
    name: 'differential', params: {},
    _testCallModel: async (request) => {
      const k = ++calls;
      seen.push(['model', request.instructions ?? null, stripUnresolvedToolCalls(request.items).map(itemText), (request.tools ?? []).map((t) => t.name)]);
      await sleep(1);
      const reply = script.shift() ?? { text: `plain ${k}` };
      const items = reply.call ? [{ type: 'function_call', id: `fc${k}`, callId: `call${k}`, name: reply.call, arguments: '{"n":1}', status: 'completed' }] : [message(k, reply.text)];
      return { items, usage: { inputTokens: 10, outputTokens: 5 } };
    },
  });
  const kind = pick(['interview', 'adaptivePlan', 'react', 'ralphWiggum']);
  let root;
  if (kind === 'interview') {
    for (let i = 0; i < 4; i++) {
      script.push({ text: pick([
        JSON.stringify({ type: 'question', data: { id: `q${i}`, text: `question ${i}?` } }),
        JSON.stringify({ type: 'question', data: { id: `q${i}`, text: `question ${i}?` } }),
        JSON.stringify({ type: 'complete', data: { summary: `done at ${i}` } }),
        JSON.stringify({ type: 'question', data: { text: 'no id' } }),
        'not json at all',
      ]) });
    }
    root = interview({
      systemPrompt: 'ask things', model: 'test', maxQuestions: pick([1, 2, 4]),
      questionSchema: z.object({ id: z.string(), text: z.string() }), completeSchema: z.object({ summary: z.string() }),
      askQuestion: async (question) => (seen.push(['ask', plain(question)]), { questionId: question.id, question: question.text, answer: pick(['yes', ['a', 'b']]), ...(next() < 0.3 ? { notes: 'a note' } : {}) }),
      onComplete: async (envelope) => void seen.push(['complete', plain(envelope)]),
    });
  } else if (kind === 'adaptivePlan') {
    const plans = Array.from({ length: 3 }, (_, i) => pick([
      { id: `p${i}`, description: 'do it', assignee: 'writer', execution: 'sequential' },
      { id: `p${i}`, description: 'both', assignee: 'writer', execution: pick(['sequential', 'parallel']), children: [{ id: 'c1', description: 'first part', assignee: 'writer', execution: 'sequential' }, { id: 'c2', description: 'second part', assignee: pick(['checker', 'writer']), execution: 'sequential' }] },
      { id: `p${i}`, description: 'who?', assignee: 'nobody', execution: 'sequential' },
      { id: `p${i}`, description: 'broken', execution: 'sideways' },
    ]));
    let planned = 0;
    const failing = next() < 0.4;
    root = adaptivePlan({
      planner: step.run({ id: 'planner', execute: async (input) => (seen.push(['plan', input]), plans[planned++ % plans.length]) }),
      agents: {
        writer: (prompt) => step.run({ id: `writer-${prompt}`, execute: async (input) => (seen.push(['writer', prompt, input]), `${prompt} written`) }),
        checker: (prompt) => step.run({ id: `checker-${prompt}`, execute: async (input) => { seen.push(['checker', prompt, input]); if (failing) throw new Error('check failed'); return { checked: prompt }; } }),
      },
      maxRevisions: pick([1, 2, 3]),
      executeStep: harness.run.bind(harness),
    });
  } else {
    const tools = [tool({ name: 'bump', description: 'bumps', input: z.object({ n: z.number() }), execute: async (args) => (seen.push(['bump', plain(args)]), args.n + 1) })];
    for (let i = 0; i < 6; i++) script.push(pick([{ call: 'bump' }, { text: `answer ${i}` }]));
    if (kind === 'react') {
      root = react({ model: 'test', instructions: pick([undefined, 'think']), tools, maxSteps: pick([1, 2, 4]) });
    } else {
      const verdicts = [pick([true, false]), pick([true, false]), true];
      let verified = 0;
      root = ralphWiggum({
        model: 'test', instructions: 'keep at it', tools, maxIterations: pick([1, 2, 3]), innerMaxSteps: pick([1, 2]),
        verify: async (output) => {
          const pass = verdicts[verified++ % verdicts.length];
          seen.push(['verify', plain(output), pass]);
          return pass ? { pass } : { pass, feedback: pick([undefined, 'try harder']) };
        },
      });
    }
  }
  const outcome = await runOutcome(harness, root, pick(['start', 'begin here']));
  return [kind, ...seen.map((x) => JSON.stringify(x)), JSON.stringify(outcome)];
}

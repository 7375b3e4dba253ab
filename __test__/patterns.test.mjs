// Patterns (issue 12): a model's workflow checked, hydrated and run (dynamicWorkflow, parseAndRunWorkflow), plan
// trees compiled and re-planned, the interview loop and the retry-with-feedback loop, all on the native scripted
// model.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import {
  AgentHarness,
  PlanNodeSchema,
  adaptivePlan,
  compilePlan,
  dynamicWorkflow,
  interview,
  isNoeticConfigError,
  parseAndRunWorkflow,
  ralphWiggum,
  step,
  tool,
} from '../js/index.mjs';

const say = (text) => ({ text });
const harnessWith = (script) => new AgentHarness({ name: 'p', params: {}, llm: { provider: 'scripted', script } });
const reverse = (calls = []) =>
  tool({ name: 'reverse', description: 'Reverses its text', input: z.object({ text: z.string() }), execute: async ({ text }) => (calls.push(text), [...text].reverse().join('')) });
const doc = (root) => JSON.stringify({ version: 1, root });

// The developer messages of the model steps a context saw.
const instructionsIn = (ctx) => ctx.itemLog.items.filter((i) => i.type === 'message' && i.role === 'developer').map((i) => i.content[0].text);

test('dynamicWorkflow: a refused document goes back to the planner with the reason; the next one is hydrated and run', async () => {
  const calls = [];
  const good = doc({ kind: 'sequence', id: 'plan', steps: [{ kind: 'tool', id: 'rev', toolName: 'reverse', args: { text: 'abc' } }, { kind: 'llm', id: 'tell', instructions: 'Report.' }] });
  const requests = [];
  const replies = ['not json at all', JSON.stringify({ version: 1, root: { kind: 'llm', id: 'x' } }), good, 'reported'];
  const h = new AgentHarness({
    name: 'dw',
    params: {},
    _testCallModel: async (request) => {
      requests.push(request);
      const text = replies.shift();
      return { items: [{ id: `m${requests.length}`, type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text }] }] };
    },
  });
  const out = await h.run(dynamicWorkflow({ tools: [reverse(calls)], maxRevisions: 3 }), 'reverse abc and report', h.createContext());
  assert.equal(out, 'reported');
  assert.deepEqual(calls, ['abc']);
  const briefs = requests.slice(0, 3).map((r) => r.instructions);
  assert.match(briefs[0], /Available tools:\n- reverse: Reverses its text\n\nTask: reverse abc and report$/);
  assert.match(briefs[1], /refused: the reply is not a JSON workflow document/);
  assert.match(briefs[2], /refused: root\.instructions must be a string, got nothing/);
});

test('dynamicWorkflow gives up after maxRevisions with WORKFLOW_VALIDATION_FAILED naming the last reason', async () => {
  const tooDeep = doc({ kind: 'spawn', id: 'a', child: { kind: 'spawn', id: 'b', child: { kind: 'llm', id: 'c', instructions: '' } } });
  const h = harnessWith([say(tooDeep), say(tooDeep)]);
  await assert.rejects(h.run(dynamicWorkflow({ tools: [], maxDepth: 1, maxRevisions: 2 }), 'go'), (e) => {
    assert.equal(e.noeticError.kind, 'step_failed', 'as any error a run step throws');
    const cause = e.noeticError.cause;
    assert.ok(isNoeticConfigError(cause), String(e));
    assert.equal(cause.code, 'WORKFLOW_VALIDATION_FAILED');
    assert.match(cause.message, /after 2 attempts: the workflow is 2 levels deep, more than the 1 allowed/);
    return true;
  });
});

test('parseAndRunWorkflow runs a checked document in the harness; a bad one is refused before anything runs', async () => {
  const calls = [];
  const h = harnessWith([say('unused')]);
  const ctx = h.createContext();
  const json = { version: 1, root: { kind: 'tool', id: 'rev', toolName: 'reverse', args: { text: 'stressed' } } };
  assert.equal(await parseAndRunWorkflow({ json, harness: h, ctx, tools: [reverse(calls)] }), 'desserts');
  assert.equal(await parseAndRunWorkflow({ json: JSON.stringify(json), harness: h, ctx, tools: [reverse(calls)] }), 'desserts', 'text works too');

  const refused = (opts, code, pattern) =>
    assert.rejects(parseAndRunWorkflow({ harness: h, ctx, tools: [reverse(calls)], ...opts }), (e) => isNoeticConfigError(e) && e.code === code && pattern.test(e.message));
  await refused({ json: '{"version":1' }, 'WORKFLOW_VALIDATION_FAILED', /^Invalid workflow document: the reply is not a JSON workflow document/);
  let deep = { kind: 'llm', id: 'l', instructions: '' };
  for (let i = 0; i < 6; i++) deep = { kind: 'sequence', id: `s${i}`, steps: [deep] };
  await refused({ json: { version: 1, root: deep } }, 'WORKFLOW_VALIDATION_FAILED', /6 levels deep, more than the 5 allowed/);
  await refused({ json: { version: 1, root: { kind: 'tool', id: 't', toolName: 'nope' } } }, 'UNKNOWN_TOOL_REFERENCE', /'nope'/);
  assert.equal(calls.length, 2, 'nothing ran for the refused documents');
});

test('compilePlan: leaves are their agents’ steps, sequential nodes pipe, parallel nodes fork; deep plans compile without recursion', async () => {
  const agents = { echo: (prompt) => step.run({ id: `echo-${prompt}`, execute: async (input) => `${input}>${prompt}` }) };
  const plan = {
    id: 'root', description: 'root', assignee: 'echo', execution: 'sequential',
    children: [
      { id: 'a', description: 'A', assignee: 'echo', execution: 'sequential' },
      { id: 'p', description: 'P', assignee: 'echo', execution: 'parallel', children: [{ id: 'b', description: 'B', assignee: 'echo', execution: 'sequential' }, { id: 'c', description: 'C', assignee: 'echo', execution: 'sequential' }] },
    ],
  };
  const h = harnessWith([]);
  const compiled = compilePlan(plan, agents, undefined, h.run.bind(h));
  assert.deepEqual([compiled.kind, compiled.id], ['run', 'plan-seq-root']);
  assert.equal(await h.run(compiled, 'in'), 'in>A>C', 'the fork keeps its last path’s output');
  assert.throws(() => compilePlan({ ...plan, children: [{ ...plan.children[0], assignee: 'ghost' }] }, agents), /Unknown agent: ghost/);

  let deep = { id: 'leaf', description: 'L', assignee: 'echo', execution: 'sequential' };
  for (let i = 0; i < 50_000; i++) deep = { id: `n${i}`, description: '', assignee: 'echo', execution: 'sequential', children: [deep] };
  assert.equal(compilePlan(deep, agents).id, 'plan-seq-n49999');
  assert.equal(PlanNodeSchema.safeParse({ id: 'x', description: '', assignee: 'a', execution: 'both' }).success, false);
});

test('adaptivePlan re-plans with the failure in the planner’s input, and gives up after maxRevisions', async () => {
  const seen = [];
  const planner = step.run({ id: 'planner', execute: async (input) => (seen.push(input), { id: 'x', description: 'work', assignee: seen.length === 1 ? 'ghost' : 'worker', execution: 'sequential' }) });
  const agents = { worker: (prompt) => step.run({ id: 'worker', execute: async (input) => `${prompt}:${input}` }) };
  const h = harnessWith([]);
  assert.equal(await h.run(adaptivePlan({ planner, agents, maxRevisions: 2 }), 'task'), 'work:task');
  assert.deepEqual(seen, ['task', 'task\n\nPrevious plan failed: Unknown agent: ghost']);
  const never = step.run({ id: 'planner2', execute: async () => ({ id: 'x', description: 'd', assignee: 'ghost', execution: 'sequential' }) });
  await assert.rejects(h.run(adaptivePlan({ planner: never, agents, maxRevisions: 2 }), 'task'), /Unknown agent: ghost/);
});

test('interview: questions go to the host and its answers come back as the next input, until the model completes', async () => {
  const question = (id) => say(JSON.stringify({ type: 'question', data: { id } }));
  const h = harnessWith([question('name'), question('age'), say(JSON.stringify({ type: 'complete', data: { summary: 'Ada, 36' } }))]);
  const asked = [];
  const completed = [];
  const step = interview({
    systemPrompt: 'Interview the user.',
    model: 'scripted',
    questionSchema: z.object({ id: z.string() }),
    completeSchema: z.object({ summary: z.string() }),
    askQuestion: async (q) => (asked.push(q.id), { questionId: q.id, question: `your ${q.id}?`, answer: q.id === 'name' ? 'Ada' : '36' }),
    onComplete: async (c) => void completed.push(c),
    formatAnswer: (a) => `${a.questionId}=${a.answer}`,
  });
  const ctx = h.createContext();
  assert.deepEqual(await h.run(step, 'start', ctx), { status: 'complete', envelope: { summary: 'Ada, 36' } });
  assert.deepEqual([asked, completed], [['name', 'age'], [{ summary: 'Ada, 36' }]]);
  const inputs = ctx.itemLog.items.filter((i) => i.type === 'message' && i.role === 'user').map((i) => i.content[0].text);
  assert.deepEqual(inputs, ['start', 'name=Ada', 'age=36']);

  const endless = harnessWith([question('a'), question('b')]);
  const capped = interview({ systemPrompt: '', model: 'scripted', questionSchema: z.object({ id: z.string() }), completeSchema: z.object({}), askQuestion: async (q) => ({ questionId: q.id, question: '', answer: 'x' }), onComplete: async () => {}, maxQuestions: 2 });
  assert.deepEqual(await endless.run(capped, 'go'), { status: 'maxQuestions', lastQuestion: { id: 'b' } });
});

test('ralphWiggum: a fresh spawned agent per attempt until the verifier passes, its feedback the next input', async () => {
  const h = harnessWith([say('try 1'), say('try 2'), say('try 3')]);
  const verdicts = [];
  const rw = ralphWiggum({
    model: 'scripted',
    instructions: 'Do it.',
    tools: [],
    verify: async (output) => (verdicts.push(output), output === 'try 2' ? { pass: true } : { pass: false, feedback: 'not yet' }),
  });
  assert.deepEqual([rw.kind, rw.id, rw.steps[0].kind, rw.steps[0].child.id], ['loop', 'ralph-wiggum-loop', 'spawn', 'react-loop']);
  assert.equal(await h.run(rw, 'task'), 'try 2');
  assert.deepEqual(verdicts, ['try 1', 'try 2']);
});

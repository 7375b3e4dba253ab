'use strict';
// Patterns built from the step builders: model-written plans, a structured interview, a retry-with-feedback loop.
const zod = require('zod');
const z = zod.z ?? zod;
const native = require('./native.cjs');
const { NoeticConfigError, callNative } = require('./errors.cjs');
const { step, loop, spawn, fork, until, any, react } = require('./steps.cjs');
const { hydrateWorkflow, textOf } = require('./workflow.cjs');
const { sketch } = require('./sketch.cjs');
const { parseJson } = require('./json.cjs');

const toText = (value) => (typeof value === 'string' ? value : String(value ?? ''));
const toolMapOf = (tools) => new Map((tools ?? []).map((t) => [t.name, t]));
const documentText = (raw) => (typeof raw === 'string' ? raw : textOf(raw, 'The workflow document'));

// A refused document is sent back to the model with the reason; the runtime words each turn's instructions and says
// when to give up (workflow/planner.rs).
function dynamicWorkflow(opts) {
  const model = opts.model;
  const tools = toolMapOf(opts.tools);
  const catalogue = (opts.tools ?? []).map((t) => [`${t.name}`, `${t.description}`]);
  const maxRevisions = sketch(opts.maxRevisions, []);
  return step.run({
    id: 'dynamic-workflow',
    execute: async (input, ctx) => {
      const harness = ctx.harness;
      if (!harness) {
        throw new NoeticConfigError({ code: 'MISSING_HARNESS_CONTEXT', message: 'dynamicWorkflow needs a harness on its context.', hint: 'Run the step through AgentHarness.run().' });
      }
      const executeStep = harness.run.bind(harness);
      const brief = { instructions: sketch(opts.instructions, []), tools: catalogue, maxRevisions, task: `${input}` };
      for (let revision = 0, lastError; ; revision++) {
        const turn = parseJson(callNative(native.plannerTurn, JSON.stringify({ ...brief, revision, lastError })));
        const planner = step.llm({ id: turn.id, model: model ?? turn.model, instructions: turn.instructions });
        const reply = toText(await executeStep(planner, input, ctx));
        const checked = parseJson(native.workflowFromText(reply, opts.maxDepth));
        if (checked.ok) return executeStep(hydrateWorkflow(checked.value, { tools, executeStep }), input, ctx);
        lastError = checked.message;
      }
    },
  });
}

async function parseAndRunWorkflow(opts) {
  const document = parseJson(callNative(native.workflowGiven, documentText(opts.json), opts.maxDepth));
  const executeStep = opts.harness.run.bind(opts.harness);
  const hydrated = hydrateWorkflow(document, { tools: toolMapOf(opts.tools), executeStep });
  return toText(await executeStep(hydrated, opts.input ?? '', opts.ctx));
}

const PlanNodeSchema = z.lazy(() =>
  z.object({
    id: z.string(),
    description: z.string(),
    assignee: z.string(),
    execution: z.enum(['sequential', 'parallel']),
    children: z.array(PlanNodeSchema).optional(),
  }),
);

// Built without recursion, so a deep plan cannot exhaust the stack.
function compilePlan(plan, agents, _constraints, executeStep) {
  const preorder = [];
  for (const pending = [plan]; pending.length > 0; ) {
    const node = pending.pop();
    if (typeof agents[node.assignee] !== 'function') throw new Error(`Unknown agent: ${node.assignee}`);
    preorder.push(node);
    const kids = node.children ?? [];
    for (let i = kids.length - 1; i >= 0; i--) pending.push(kids[i]);
  }
  const steps = new Map();
  // Leaves in plan order (factories may count what they make), then parents in reverse pre-order, after their children.
  for (const node of preorder) if (!node.children?.length) steps.set(node, agents[node.assignee](node.description));
  for (let i = preorder.length - 1; i >= 0; i--) {
    const node = preorder[i];
    if (node.children?.length) steps.set(node, composite(node, node.children.map((c) => steps.get(c)), executeStep));
  }
  return steps.get(plan);
}

function composite(node, children, executeStep) {
  if (node.execution === 'parallel') {
    return fork({ id: `plan-fork-${node.id}`, mode: 'all', paths: () => children, merge: (results) => results[results.length - 1] });
  }
  return {
    kind: 'run',
    id: `plan-seq-${node.id}`,
    execute: async (input, ctx) => {
      let output = input;
      for (const child of children) {
        const childInput = typeof output === 'string' ? output : JSON.stringify(output);
        output = await runStep(child, childInput, ctx, executeStep, `child step kind '${child.kind}'`);
      }
      return output;
    },
  };
}

function runStep(s, input, ctx, executeStep, what) {
  if (executeStep) return executeStep(s, input, ctx);
  if (s.kind === 'run') return s.execute(input, ctx);
  throw new Error(`No executeStep provided and ${what} cannot be executed directly`);
}

// A failure is shown to the planner with the input, up to `maxRevisions` plans in all.
function adaptivePlan(opts) {
  return {
    kind: 'run',
    id: 'adaptive-plan',
    execute: async (input, ctx) => {
      let lastError = null;
      for (let revision = 0; revision < opts.maxRevisions; revision++) {
        const planInput = lastError ? `${input}\n\nPrevious plan failed: ${lastError.message}` : input;
        if (!opts.executeStep && opts.planner.kind !== 'run') throw new Error('Planner must be a run step when no executeStep provided');
        const plan = PlanNodeSchema.parse(await runStep(opts.planner, planInput, ctx, opts.executeStep, 'the planner'));
        try {
          const compiled = compilePlan(plan, opts.agents, opts.constraints, opts.executeStep);
          return await runStep(compiled, input, ctx, opts.executeStep, `compiled plan kind '${compiled.kind}'`);
        } catch (e) {
          lastError = e instanceof Error ? e : new Error(String(e));
          if (revision === opts.maxRevisions - 1) throw lastError;
        }
      }
      throw lastError;
    },
  };
}

const answerLine = (a) => JSON.stringify({ questionId: a.questionId, question: a.question, answer: a.answer, notes: a.notes });

function interview(opts) {
  const format = opts.formatAnswer ?? answerLine;
  const envelope = z.discriminatedUnion('type', [
    z.object({ type: z.literal('question'), data: opts.questionSchema }),
    z.object({ type: z.literal('complete'), data: opts.completeSchema }),
  ]);
  const ask = step.llm({ id: 'interview-llm', model: opts.model, instructions: opts.systemPrompt, output: envelope });
  const turn = step.run({
    id: 'interview-turn',
    execute: async (input, ctx) => {
      const reply = await ctx.harness.run(ask, input, ctx);
      if (reply.type === 'complete') {
        await opts.onComplete(reply.data);
        return { status: 'complete', envelope: reply.data, nextInput: '' };
      }
      const answer = await opts.askQuestion(reply.data);
      return { status: 'inProgress', lastQuestion: reply.data, nextInput: format(answer) };
    },
  });
  const turns = loop({
    id: 'interview-loop',
    steps: [turn],
    until: any(until.verified(async (out) => ({ pass: out?.status === 'complete' })), until.maxSteps(opts.maxQuestions ?? 8)),
    prepareNext: (out) => out.nextInput,
  });
  return step.run({
    id: 'interview',
    execute: async (input, ctx) => {
      const last = await ctx.harness.run(turns, input, ctx);
      return last.status === 'complete' ? { status: 'complete', envelope: last.envelope } : { status: 'maxQuestions', lastQuestion: last.lastQuestion };
    },
  });
}

// Each attempt in a fresh spawned context; the verifier's feedback is the next attempt's input.
function ralphWiggum(opts) {
  const agent = react({ model: opts.model, instructions: opts.instructions, tools: opts.tools, maxSteps: opts.innerMaxSteps ?? 20 });
  return loop({
    id: 'ralph-wiggum-loop',
    steps: [spawn({ id: 'ralph-iteration', child: agent })],
    until: any(until.verified(opts.verify), until.maxSteps(opts.maxIterations ?? 50)),
    prepareNext: (_output, verdict) => (verdict.feedback ? `Previous attempt feedback: ${verdict.feedback}\nContinue working.` : 'Continue working on the task.'),
  });
}

module.exports = { dynamicWorkflow, parseAndRunWorkflow, PlanNodeSchema, compilePlan, adaptivePlan, interview, ralphWiggum };

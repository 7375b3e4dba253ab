'use strict';
// Patterns built from the step builders: plans a model writes (JSON workflows, plan trees), a structured interview,
// and a retry-with-feedback loop. Each is a plain step tree run by the native interpreter; a model's workflow is
// checked and planned natively (workflow.rs) before it is hydrated.
const zod = require('zod');
const z = zod.z ?? zod;
const native = require('./native.cjs');
const { NoeticConfigError, callNative } = require('./errors.cjs');
const { step, loop, spawn, fork, until, any, react } = require('./steps.cjs');
const { hydrateWorkflow, textOf } = require('./workflow.cjs');

const DEFAULT_PLANNER_MODEL = 'openai/gpt-4o';
const DEFAULT_MAX_DEPTH = 5;
const DEFAULT_MAX_REVISIONS = 3;

// What the planner model is asked to write: the workflow language in brief.
const PLANNER_BRIEF = `Plan the task below as a JSON workflow document, then stop. Reply with the JSON alone: no prose, no code fences.

The document is {"version": 1, "root": NODE}, where NODE is one of:
- {"kind": "llm", "id": ID, "instructions": TEXT, "model"?: MODEL, "tools"?: [TOOL NAME, ...]}: a model step
- {"kind": "tool", "id": ID, "toolName": TOOL NAME, "args"?: {...}}: one tool call
- {"kind": "sequence", "id": ID, "steps": [NODE, ...]}: steps in order, each output the next input
- {"kind": "fork", "id": ID, "mode": "all" | "race" | "settle", "paths": [NODE, ...], "merge"?: "last" | "first" | "concat"}: paths side by side
- {"kind": "loop", "id": ID, "body": NODE, "until": PREDICATE}: repeat the body until the predicate stops it
- {"kind": "branch", "id": ID, "routes": [{"match": TEXT, "target": NODE}, ...], "default"?: NODE}: the first route whose text the input contains
- {"kind": "spawn", "id": ID, "child": NODE}: the child in a fresh context

PREDICATE is {"kind": "maxSteps", "n": N}, {"kind": "maxCost", "usd": N}, {"kind": "maxDuration", "ms": N}, {"kind": "noToolCalls"}, {"kind": "outputContains", "marker": TEXT}, {"kind": "outputEquals", "sentinel": TEXT}, {"kind": "converged"}, or {"kind": "any" | "all", "predicates": [PREDICATE, ...]}.
Every id is unique and non-empty.`;

const failed = (message, hint) => new NoeticConfigError({ code: 'WORKFLOW_VALIDATION_FAILED', message, hint });
const toText = (value) => (typeof value === 'string' ? value : String(value ?? ''));
const toolMapOf = (tools) => new Map((tools ?? []).map((t) => [t.name, t]));

// A workflow given as text (a model's reply) or as a value, checked natively against `maxDepth` levels.
function checkedWorkflow(raw, maxDepth) {
  const text = typeof raw === 'string' ? raw : textOf(raw, 'The workflow document');
  return JSON.parse(callNative(native.workflowFromText, text, maxDepth ?? DEFAULT_MAX_DEPTH));
}

// A step in which a model writes a workflow for its input, which is then checked, hydrated and run in the same
// harness; a refused document is sent back to the model with the reason, up to `maxRevisions` times.
function dynamicWorkflow(opts) {
  const model = opts.model ?? DEFAULT_PLANNER_MODEL;
  const maxRevisions = opts.maxRevisions ?? DEFAULT_MAX_REVISIONS;
  const tools = toolMapOf(opts.tools);
  const catalogue = (opts.tools ?? []).map((t) => `- ${t.name}: ${t.description}`).join('\n');
  const giveUp = (detail) =>
    failed(`dynamicWorkflow: no valid workflow after ${maxRevisions} attempts${detail ? `: ${detail}` : ''}.`, 'Give the planner clearer instructions, a more capable model, or more revisions.');
  return step.run({
    id: 'dynamic-workflow',
    execute: async (input, ctx) => {
      const harness = ctx.harness;
      if (!harness) {
        throw new NoeticConfigError({ code: 'MISSING_HARNESS_CONTEXT', message: 'dynamicWorkflow needs a harness on its context.', hint: 'Run the step through AgentHarness.run().' });
      }
      const executeStep = harness.run.bind(harness);
      const brief = [opts.instructions, PLANNER_BRIEF, `Available tools:\n${catalogue}`, `Task: ${input}`].filter(Boolean).join('\n\n');
      let lastError;
      for (let revision = 0; revision < maxRevisions; revision++) {
        const instructions = lastError === undefined ? brief : `${brief}\n\nYour last document was refused: ${lastError}\nWrite a corrected one.`;
        const planner = step.llm({ id: `dynamic-workflow-planner-${revision}`, model, instructions });
        const checked = checkedWorkflow(toText(await executeStep(planner, input, ctx)), opts.maxDepth);
        if (!checked.ok) {
          lastError = checked.message;
          continue;
        }
        return executeStep(hydrateWorkflow(checked.value, { tools, executeStep }), input, ctx);
      }
      throw giveUp(lastError);
    },
  });
}

// Checks a workflow (text or value), hydrates it with `tools`, and runs it through `harness`; its output as text.
async function parseAndRunWorkflow(opts) {
  const checked = checkedWorkflow(opts.json, opts.maxDepth);
  if (!checked.ok) throw failed(`Invalid workflow document: ${checked.message}.`, 'Make the JSON fit WorkflowDocumentSchema (validateWorkflow names every problem).');
  const executeStep = opts.harness.run.bind(opts.harness);
  const hydrated = hydrateWorkflow(checked.value, { tools: toolMapOf(opts.tools), executeStep });
  return toText(await executeStep(hydrated, opts.input ?? '', opts.ctx));
}

// ----- plans ------------------------------------------------------------------------------------------------

const PlanNodeSchema = z.lazy(() =>
  z.object({
    id: z.string(),
    description: z.string(),
    assignee: z.string(),
    execution: z.enum(['sequential', 'parallel']),
    children: z.array(PlanNodeSchema).optional(),
  }),
);

// A plan tree as steps: a leaf is its assignee's step for its description; a parallel node forks its children
// (the last one's output wins), a sequential one runs them in order, each output the next input. Built without
// recursion, so a deep plan cannot exhaust the stack. Every node's assignee must be one of `agents`.
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
  // Leaves in plan order (their factories may count or register what they make), then every other node after
  // its children: the reverse of a pre-order reaches each child before its parent.
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

// A step run through `executeStep`, or directly when it is a run step and there is none.
function runStep(s, input, ctx, executeStep, what) {
  if (executeStep) return executeStep(s, input, ctx);
  if (s.kind === 'run') return s.execute(input, ctx);
  throw new Error(`No executeStep provided and ${what} cannot be executed directly`);
}

// A planner writes a plan, which is compiled and run; a failure is shown to the planner with the input, up to
// `maxRevisions` plans in all.
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

// ----- interview --------------------------------------------------------------------------------------------

const answerLine = (a) => JSON.stringify({ questionId: a.questionId, question: a.question, answer: a.answer, notes: a.notes });

// A model interviews the user: each turn it asks a question (`askQuestion` gets the answer, which becomes the next
// input) or completes (`onComplete`), until it completes or `maxQuestions` turns have passed.
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

// ----- ralph wiggum -----------------------------------------------------------------------------------------

// A react agent run again and again, each time in a fresh spawned context, until `verify` passes its output (or
// `maxIterations`); the verifier's feedback is the next attempt's input.
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

// Workflows, patterns, flows, ask-user and the `/portable` entry under --strict.

import {
  AgentHarness,
  AskUserInputSchema,
  AskUserOutputSchema,
  FlowSchema,
  MergeStrategySchema,
  PlanNodeSchema,
  TIMEOUT_ERROR_PREFIX,
  UntilPredicateSchema,
  WorkflowDocumentSchema,
  WorkflowNodeSchema,
  adaptivePlan,
  compilePlan,
  dynamicWorkflow,
  flowDepth,
  hydrateNode,
  hydrateWorkflow,
  interview,
  parseAndRunWorkflow,
  ralphWiggum,
  step,
  tool,
  validateFlow,
  validateWorkflow,
  walkFlow,
  walkWorkflow,
  workflowDepth,
  type AskUserInput,
  type AskUserOutput,
  type AskUserQuestion,
  type FlowNode,
  type HydrationContext,
  type InterviewResult,
  type MergeStrategy,
  type PlanNode,
  type Step,
  type StepLoop,
  type Tool,
  type UntilPredicate,
  type WorkflowDocument,
  type WorkflowNode,
} from '@noetic-tools/core';
import * as portable from '@noetic-tools/core/portable';
import { z } from 'zod';

const doc: WorkflowDocument = validateWorkflow({ version: 1, root: { kind: 'llm', id: 'a', instructions: 'x' } });
const node: WorkflowNode = doc.root;
const depth: number = workflowDepth(node);
for (const n of walkWorkflow(node)) {
  const id: string = n.id;
  if (n.kind === 'fork') {
    const merge: MergeStrategy | undefined = n.merge;
    void merge;
  }
  void id;
}
const parsedNode: WorkflowNode = WorkflowNodeSchema.parse(node);
const parsedDoc: WorkflowDocument = WorkflowDocumentSchema.parse(doc);
const predicate: UntilPredicate = UntilPredicateSchema.parse({ kind: 'any', predicates: [{ kind: 'maxSteps', n: 2 }] });
const strategy: 'last' | 'first' | 'concat' = MergeStrategySchema.parse('concat');
// @ts-expect-error a node needs its kind's fields
const missing: WorkflowNode = { kind: 'tool', id: 't' };
void [depth, parsedNode, parsedDoc, predicate, strategy, missing];

const echo: Tool = tool({ name: 'echo', description: 'Echoes', input: z.object({ text: z.string() }), output: z.string(), execute: async ({ text }) => text });
const harness = new AgentHarness({ name: 'types', params: {} });
const hctx: HydrationContext = { tools: new Map([['echo', echo]]), executeStep: harness.run.bind(harness) };
const hydrated: Step<Record<string, Record<string, unknown>>, string, string> = hydrateWorkflow(doc, hctx);
const fromNode = hydrateNode(node, { ...hctx, layers: new Map() });
void [hydrated, fromNode];

const dynamic = dynamicWorkflow({ tools: [echo], maxDepth: 3 });
const ran: Promise<string> = parseAndRunWorkflow({ json: '{}', harness, ctx: harness.createContext(), tools: [echo] });
void [dynamic, ran];

const plan: PlanNode = PlanNodeSchema.parse({ id: 'r', description: 'd', assignee: 'w', execution: 'parallel' });
const agents = { w: (prompt: string) => step.run({ id: prompt, execute: async (input: string) => input.length }) };
const compiled: Step<Record<string, Record<string, unknown>>, string, number> = compilePlan<number, number>(plan, agents);
const planned = adaptivePlan<number, number>({
  planner: step.run({ id: 'planner', execute: async (): Promise<PlanNode> => plan }),
  agents,
  maxRevisions: 2,
});
void [compiled, planned];

const asked = interview({
  systemPrompt: 'ask',
  model: 'm',
  questionSchema: z.object({ q: z.string() }),
  completeSchema: z.object({ summary: z.string() }),
  askQuestion: async (q) => ({ questionId: q.q, question: q.q, answer: 'a' }),
  onComplete: async (c) => void c.summary,
});
type Asked = typeof asked extends Step<infer _M, string, infer O> ? O : never;
const result: Asked = { status: 'complete', envelope: { summary: 's' } } satisfies InterviewResult<{ q: string }, { summary: string }>;
void result;
const rw: StepLoop<Record<string, Record<string, unknown>>, string, string> = ralphWiggum({ model: 'm', instructions: 'i', tools: [echo], verify: async () => ({ pass: true }) });
void rw;

const flow: FlowNode = validateFlow({ kind: 'llm', id: 'l', instructions: 'x' });
const flowLevels: number = flowDepth(FlowSchema.parse(flow));
for (const f of walkFlow(flow)) void f.kind;
void flowLevels;

const input: AskUserInput = AskUserInputSchema.parse({});
const question: AskUserQuestion | undefined = input.questions[0];
const multi: boolean | undefined = question?.multiSelect;
const output: AskUserOutput = AskUserOutputSchema.parse({});
const answers: Record<string, string> = output.answers;
const prefix: 'timeout:' = TIMEOUT_ERROR_PREFIX;
void [multi, answers, prefix];

// /portable: the main entry's objects, with their types.
const portableHarness: AgentHarness = new portable.AgentHarness({ name: 'p', params: {} });
const portableStep = portable.step.run({ id: 'p', execute: async (s: string) => s });
const sameSchema: typeof AskUserInputSchema = portable.AskUserInputSchema;
const portableQuestion: portable.AskUserQuestion = { question: 'q?', header: 'h', options: [], multiSelect: false };
// @ts-expect-error patterns are not portable
void portable.react;
void [portableHarness, portableStep, sameSchema, portableQuestion];

// Step builders, tools, until predicates and harness calls.

import { z } from 'zod';
import {
  AgentHarness,
  all,
  any,
  branch,
  fork,
  loop,
  react,
  spawn,
  step,
  tool,
  until,
  type CallModelRequest,
  type Context,
  type ContextMemory,
  type StepSpawn,
  createMessage,
  type LLMResponse,
  type Snapshot,
  type SettleResult,
  type Step,
  type StepForkAll,
  type StepForkRace,
  type StepForkSettle,
  type StepLLM,
  type StepTool,
  type Tool,
  type ToolExecutionContext,
  type Until,
  type Verdict,
} from '@noetic-tools/core';

const search = tool({
  name: 'search',
  description: 'Search the web.',
  input: z.object({ query: z.string(), limit: z.number().optional() }),
  output: z.array(z.string()),
  execute: async ({ query, limit }, toolCtx: ToolExecutionContext) => {
    const cwd: string = toolCtx.ctx.cwdState.cwd;
    return [query, String(limit ?? 10), cwd];
  },
  needsApproval: false,
  memory: { id: 'search-history', init: () => [] as string[], recall: (s: string[]) => s.join('\n') || null },
});
const asTool: Tool = search;
const tools: Tool[] = [search];
void asTool;

const callSearch: StepTool<ContextMemory, { query: string; limit?: number | undefined }, string[]> = step.tool({
  id: 'call-search',
  tool: search,
  args: { limit: 3 },
});
void callSearch;

interface Answer {
  answer: string;
}

const llm: StepLLM<ContextMemory, string, Answer> = step.llm<ContextMemory, string, Answer>({
  id: 'answer',
  model: (ctx) => (ctx.depth > 0 ? 'openai/gpt-4o-mini' : 'openai/gpt-4o'),
  instructions: async () => 'Answer briefly.',
  tools: () => tools,
  output: z.object({ answer: z.string() }),
  params: { temperature: 0, maxTokens: 256 },
  emit: (eventType) => eventType !== 'delta',
});

const react1 = react({ model: 'openai/gpt-4o', tools: [search], maxSteps: 5, maxCost: 0.5 });
void react1;

const stopWhenDone: Until = (snap: Snapshot): Verdict => ({ stop: snap.lastText.includes('DONE') });
const predicate: Until = any(
  until.noToolCalls(),
  until.maxSteps(10),
  all(until.maxCost(1), until.maxDuration(60_000)),
  until.verified(async (output) => ({ pass: output !== null, feedback: 'try again' })),
  until.converged({ threshold: 0.95, embed: async (texts) => texts.map(() => [0, 1]) }),
  until.outputContains('DONE'),
  until.outputEquals('STOP'),
  until.custom(stopWhenDone),
  until.never(),
);

const refine = step.run({
  id: 'refine',
  execute: async (draft: string, ctx: Context) => `${draft} (${ctx.stepCount})`,
  retry: { maxAttempts: 3, backoff: 'exponential', initialDelay: 100, maxDelay: 1_000 },
});

const refineLoop = loop({
  id: 'refine-loop',
  steps: [refine],
  until: predicate,
  maxIterations: 5,
  prepareNext: (output, verdict) => verdict.feedback ?? output,
  onError: (error) => (error.kind === 'llm_rate_limit' ? 'retry' : 'abort'),
});

const isolated = spawn({ id: 'isolated', child: refineLoop, timeout: 30_000 });

// Context strategies: a summary's output is a string, a schema's what it parses.
const summarized = spawn({ id: 'summarized', child: refineLoop, contextIn: 'inherit', contextOut: { strategy: 'summary', prompt: 'Briefly.' } });
const summaryText: StepSpawn<ContextMemory, string, string, string> = summarized;
const typed = spawn({
  id: 'typed',
  child: refineLoop,
  contextIn: { strategy: 'subset', select: (items, state) => items.filter(() => state.keep !== false) },
  contextOut: { strategy: 'schema', schema: z.object({ city: z.string() }) },
});
const typedCity: StepSpawn<ContextMemory, string, { city: string }, string> = typed;
const built = spawn({ id: 'built', child: refineLoop, contextIn: { strategy: 'custom', build: (input, parent) => [createMessage(`${String(input)} @${parent.depth}`, 'user')] } });
// @ts-expect-error an unknown strategy is not a ContextInStrategy
spawn({ id: 'bad', child: refineLoop, contextIn: 'everything' });
void [summaryText, typedCity, built];

// What a test model reads off its request: the step's own fields, and with tools the context, the layers and the
// names it may call.
async function readingModel(request: CallModelRequest): Promise<LLMResponse> {
  const temperature: number | undefined = request.params?.temperature;
  const structured: boolean = request.outputSchema !== undefined;
  const quiet: boolean = request.emit === false;
  let seen = `${temperature}:${structured}:${quiet}`;
  if (request.tools) {
    const contextId: string = request.ctx.id;
    const allowed: string[] | undefined = request.allowedToolNames;
    const layerIds: string[] | undefined = request.layers?.map((layer) => layer.id);
    const first: Tool | undefined = request.tools.find((t) => allowed?.includes(t.name) ?? true);
    const ran: unknown = first ? await first.execute({}, undefined) : undefined;
    seen += `${contextId}:${layerIds?.join()}:${first?.description}:${String(ran)}`;
  } else {
    const none: undefined = request.ctx;
    seen += String(none);
  }
  return {
    items: [{ id: 'r0', type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: seen }] }],
    usage: { inputTokens: 0, outputTokens: 0 },
  };
}
new AgentHarness({ name: 'reading', params: {}, _testCallModel: readingModel });

const harness = new AgentHarness({
  name: 'steps',
  params: { region: 'eu' },
  tools: [search],
  projection: { tokenBudget: 64_000, responseReserve: 2_000, overflow: 'truncate' },
  forceAtomicRecall: true,
  _testCallModel: async (request: CallModelRequest): Promise<LLMResponse> => ({
    items: [
      {
        id: 'r1',
        type: 'message',
        role: 'assistant',
        status: 'completed',
        content: [{ type: 'output_text', text: request.model }],
      },
    ],
    usage: { inputTokens: 1, outputTokens: 1 },
  }),
});

async function main(): Promise<void> {
  const out: string = await harness.run(isolated, 'draft');
  const answer: Answer = await harness.run(llm, 'question');
  const ctx = harness.createContext({ threadId: 't1', state: { n: 1 } });
  const nested = step.run({
    id: 'nested',
    execute: async (input: string, inner: Context) => inner.harness.run(refine, input, inner),
  });
  const viaCtx: string = await harness.run(nested, 'x', ctx);
  const response: LLMResponse = await harness.callModel({
    model: 'openai/gpt-4o',
    items: [],
    instructions: 'hi',
  });
  await harness.callModel({ model: 'm', items: response.items, tools: [search], ctx });
  const region: string = harness.config.params.region;
  void [out, answer, viaCtx, region];
}
void main;

const anyStep: Step<ContextMemory, string, string> = refine;
void anyStep;

// -----------------------------------------------------------------------------
// Negative checks
// -----------------------------------------------------------------------------

async function negatives(): Promise<void> {
  // @ts-expect-error input does not match the step's input type
  await harness.run(refine, 42);
  // @ts-expect-error output type is string, not number
  const n: number = await harness.run(refine, 'x');
  void n;
  // @ts-expect-error tools with ctx require a context
  await harness.callModel({ model: 'm', items: [], tools: [search] });
}
void negatives;

// @ts-expect-error execute must return a promise
step.run({ id: 'sync', execute: (input: string) => input });

// @ts-expect-error loop requires `until`
loop({ id: 'no-until', steps: [refine] });

tool({
  name: 'typed',
  description: 'd',
  input: z.object({ a: z.string() }),
  output: z.number(),
  // @ts-expect-error the result must match the output schema
  execute: async ({ a }) => a,
});

// branch and fork: typed results, merge inputs by mode.
const toNumber = step.run<ContextMemory, string, number>({ id: 'len', execute: async (text) => text.length });
const routed = branch<ContextMemory, string, number>({ id: 'route', route: (text) => (text.length > 3 ? toNumber : null) });
const racing: StepForkRace<ContextMemory, string, number> = fork({ id: 'race', mode: 'race', paths: () => [toNumber, toNumber] });
const summing: StepForkAll<ContextMemory, string, number> = fork({
  id: 'all',
  mode: 'all',
  paths: () => [toNumber],
  merge: (values: number[]) => values.reduce((a, b) => a + b, 0),
});
const settling: StepForkSettle<ContextMemory, string, number> = fork({
  id: 'settle',
  mode: 'settle',
  paths: () => [toNumber],
  merge: (results: SettleResult<number>[]) => results.filter((r) => r.status === 'fulfilled').length,
});
void [routed, racing, summing, settling];
// @ts-expect-error a mode that needs a merge
fork({ id: 'bad', mode: 'all', paths: () => [toNumber] });

// The built-in layers as user code types them (issue 11).

import { AgentHarness, historyWindow, type HistoryWindowConfig, type MemoryLayer, type ProjectHistoryResult } from '@noetic-tools/core';

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
function assertType<T extends true>(_ok?: T): void {}

const config: HistoryWindowConfig = { maxItems: 40 };
const window = historyWindow(config);
const asLayer: MemoryLayer<null> = window;
new AgentHarness({ name: 'typed', params: {}, memory: [asLayer, historyWindow()] });
// Its projectHistory can be called directly, as upstream's tests do.
const projected = window.hooks.projectHistory?.({ items: [], state: null } as never);
assertType<Equal<typeof projected, Promise<ProjectHistoryResult> | undefined>>();
// @ts-expect-error maxItems is a number
historyWindow({ maxItems: '40' });

// durableTaskState's state is typed; staticContent needs its loader.
import { durableTaskState, staticContent, type DurableTaskState } from '@noetic-tools/core';
const tasks = durableTaskState();
const initial: Promise<{ state: DurableTaskState }> | undefined = tasks.hooks.init?.({} as never) as never;
void initial;
assertType<Equal<typeof tasks.id, 'durable-task-state'>>();
const rules = staticContent({ load: async () => 'Be brief.', tag: 'rules', scope: 'thread' });
new AgentHarness({ name: 'typed', params: {}, memory: [tasks, rules] });
// @ts-expect-error load is required
staticContent({ tag: 'rules' });

// planMemory: typed state, config callbacks and provides; PlanPhase is a value and a type.
import {
  memory,
  planMemory,
  PlanPhase,
  react,
  type Context,
  type FlowNode,
  type InferMemory,
  type PlanMemoryConfig,
  type PlanState,
} from '@noetic-tools/core';
const planConfig: PlanMemoryConfig = {
  maxPrdLength: 10_000,
  additionalAllowedTools: ['Deploy'],
  onEnterSession: async () => ({ slug: 'amber' }),
  onExit: async (state: PlanState) => ({ approved: state.prd !== null }),
};
const plan = planMemory(planConfig);
assertType<Equal<typeof plan.id, 'plan'>>();
const phase: PlanPhase = PlanPhase.Executing;
void phase;
const planTree: FlowNode = { kind: 'fork', id: 'f', mode: 'race', paths: [{ kind: 'subagent', id: 's', preset: 'explore', prompt: 'look' }] };
void plan.provides.setPlanTree.execute(planTree, {} as PlanState, {} as never);
const planMem = memory([plan] as const);
react({ model: 'm', memory: planMem });
async function usePlan(ctx: Context<InferMemory<typeof planMem>>) {
  const status = ctx.memory.plan.status;
  assertType<Equal<typeof status.phase, PlanPhase>>();
  const said: string = await ctx.memory.plan.enterPlanMode({ goal: 'g' });
  return said;
}
void usePlan;
// @ts-expect-error action is 'execute' or 'cancel'
void plan.provides.exitPlanMode.execute({ action: 'later' }, {} as PlanState, {} as never);
// @ts-expect-error onExit must resolve to { approved }
planMemory({ onExit: async () => true });

// steering: rules typed as upstream's; the layer's state is the ledger.
import { steering, SteeringAction, type SteeringConfig, type SteeringState } from '@noetic-tools/core';
const steeringConfig: SteeringConfig = {
  rules: [
    { id: 'no-rm', appliesTo: ['beforeToolCall'], predicate: (params) => ('toolName' in params && params.toolName === 'rm' ? { action: SteeringAction.Deny, guidance: 'no' } : { action: SteeringAction.Allow }) },
    { id: 'judge', appliesTo: ['afterModelCall'], llmEval: { mode: 'async', prompt: 'Was that answer honest?' } },
  ],
  maxLedgerEntries: 50,
};
const steer = steering(steeringConfig);
assertType<Equal<typeof steer.id, 'steering'>>();
async function readLedger(state: SteeringState) {
  const result = await steer.hooks.beforeToolCall({ toolName: 't', toolArgs: {}, ctx: {} as never, state });
  const action: SteeringAction = result.decision.action;
  return [action, result.state?.ledger.length];
}
void readLedger;
react({ model: 'm', memory: memory([steer] as const) });
// @ts-expect-error appliesTo names steering hooks only
steering({ rules: [{ id: 'x', appliesTo: ['onStore'] }] });
// temporalMemory: typed extractor, searcher and search tool.
import {
  temporalMemory,
  type FactExtractor,
  type FactSearcher,
  type TemporalFact,
  type TemporalMemoryConfig,
  type TemporalSearchResult,
} from '@noetic-tools/core';
const extract: FactExtractor = async ({ transcript, now }) => [{ ts: now, fact: transcript.slice(0, 20) }];
const search: FactSearcher = async ({ query, facts }) => ({ facts: facts.filter((f: TemporalFact) => f.fact.includes(query)).map((f) => f.fact), fuzzy: true });
const temporalConfig: TemporalMemoryConfig = { now: () => new Date(), extract, search, injectLedger: true, maxFacts: 50 };
const temporal = temporalMemory(temporalConfig);
assertType<Equal<typeof temporal.id, 'temporal'>>();
const temporalMem = memory([temporal] as const);
async function useTemporal(ctx: Context<InferMemory<typeof temporalMem>>) {
  const found = await ctx.memory.temporal.searchMemory({ query: 'Lisbon' });
  assertType<Equal<typeof found, TemporalSearchResult>>();
  const stored = await temporal.hooks.store({} as never);
  const ledger: Record<string, string[]> = stored.state.facts;
  return ledger;
}
void useTemporal;
new AgentHarness({ name: 'typed', params: {}, memory: [temporal, temporalMemory()] });
// @ts-expect-error the extractor must resolve to facts
temporalMemory({ extract: async () => 'facts' });
// @ts-expect-error now is a clock function
temporalMemory({ now: new Date() });


// fileReference's state keeps upstream's Map of tracked files.
import { fileReference, type FileReferenceOptions, type FileReferenceState, type TrackedFile } from '@noetic-tools/core';
const fileRefOptions: FileReferenceOptions = { baseDir: '/repo', maxFileSize: 65_536, allowedExtensions: ['.ts', 'Dockerfile'] };
const files: MemoryLayer<FileReferenceState> = fileReference(fileRefOptions);
new AgentHarness({ name: 'typed', params: {}, memory: [files, fileReference()] });
const tracked: TrackedFile | undefined = ({} as FileReferenceState).files.get('src/a.ts');
void tracked;
// @ts-expect-error followSymlinks is a boolean
fileReference({ followSymlinks: 'yes' });

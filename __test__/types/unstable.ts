// The `@noetic-tools/core/unstable` subpath.

import { AgentHarness, createInMemoryStorage, createMessage, workingMemory, type Context, type Item, type ScopedStorage } from '@noetic-tools/core';
import {
  allocateBudgets,
  assembleView,
  checkBudget,
  createLayerStateStore,
  createScopedStorage,
  type BudgetAllocation,
  type BudgetLimits,
  type LayerStateStore,
} from '@noetic-tools/core/unstable';

const { allocations, historyBudget } = allocateBudgets({
  layers: [workingMemory()],
  totalBudget: 128_000,
  systemPromptTokens: 500,
  responseReserve: 4_000,
});
const first: BudgetAllocation | undefined = allocations[0];
const history: number = historyBudget;
void [first, history];

const view: Item[] = assembleView({
  systemPromptItems: [],
  layerOutputItems: [createMessage('<memory/>', 'developer')],
  historyItems: [createMessage('hello', 'user')],
  policy: { tokenBudget: 1_000, responseReserve: 100, overflow: 'sliding_window', windowSize: 20 },
});
void view;

const limits: BudgetLimits = { maxCost: 1, maxSteps: 10 };
declare const ctx: Context;
checkBudget(ctx, limits);

const states = new Map<string, unknown>();
const store: LayerStateStore = {
  get: <T>(executionId: string, layerId: string) => states.get(`${executionId}/${layerId}`) as T | undefined,
  set: (executionId, layerId, state) => void states.set(`${executionId}/${layerId}`, state),
  cleanup: () => states.clear(),
  diagnostic: (layerId, hook, error) => console.warn(layerId, hook, error),
};
void store;

// @ts-expect-error totalBudget is required
allocateBudgets({ layers: [], systemPromptTokens: 0, responseReserve: 0 });

// A layer's storage view, as its hooks see it.
const scoped: ScopedStorage = createScopedStorage(createInMemoryStorage(), 'notes', 'thread-1');
void scoped.list('sub/').then((keys: string[]) => keys.length);

// A state store of one's own, given to the harness; its mirror failures come back with the layer and the hook.
const ownStore: LayerStateStore = createLayerStateStore((layerId: string, hook: string) => void `${layerId}:${hook}`);
ownStore.set('exec', 'notes', { n: 1 });
const n: { n: number } | undefined = ownStore.get<{ n: number }>('exec', 'notes');
void n;
void createLayerStateStore().flush('exec').then(() => undefined);
new AgentHarness({ name: 'with-store', params: {}, layerStateStore: ownStore });
// @ts-expect-error a store is an object with get, set and cleanup
new AgentHarness({ name: 'bad-store', params: {}, layerStateStore: 'memory' });

// The layer lifecycle through a step's ctx.harness, typed as upstream's ContextHarness.
const layerHarness = new AgentHarness({ name: 'layers', params: {} });
const layerCtx = layerHarness.createContext();
async function lifecycle(ctx: Context<unknown>, layers: import('@noetic-tools/core').MemoryLayer[]): Promise<number> {
  await ctx.harness.initLayers(layers, ctx, createInMemoryStorage());
  const recalled = await ctx.harness.recallLayersAtomic(layers, 'q', ctx, new Map([['a', 10]]));
  const decision = await ctx.harness.beforeToolCall(layers, 'rm', { path: '/' }, ctx);
  const { items, rerenderRequests } = await ctx.harness.runAppendPipeline(layers, [createMessage('x', 'user')], ctx);
  const projected: ReadonlyArray<Item> = await ctx.harness.projectHistory(layers, items, ctx);
  const rerendered = await layerHarness.executeRerender(rerenderRequests, layers, ctx, new Map(), 'q');
  await layerHarness.disposeLayers(layers, ctx);
  return recalled.length + projected.length + rerendered.length + (decision.action === 'deny' ? 1 : 0);
}
void lifecycle(layerCtx, []);

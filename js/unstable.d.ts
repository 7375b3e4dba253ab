// -----------------------------------------------------------------------------
// @noetic-tools/core/unstable: building blocks for framework extenders.
// May change in any minor release.
// -----------------------------------------------------------------------------

import type { Context, Item, LayerStateStore, MemoryLayer, ProjectionPolicy, ScopedStorage, StorageAdapter } from '../index.js';

export type { LayerStateStore } from '../index.js';

// =============================================================================
// Budgets
// =============================================================================

export interface BudgetAllocation {
  layerId: string;
  /** Tokens; may be fractional or Infinity. */
  allocated: number;
}

export interface BudgetLimits {
  /** USD. */
  maxCost?: number;
  maxSteps?: number;
  /** Milliseconds. */
  maxDuration?: number;
}

/**
 * Splits `totalBudget - responseReserve - systemPromptTokens` between the layers
 * (minimums first, then 60% of the rest across layers) and the history.
 * Throws NoeticConfigError `INVALID_BUDGET_INPUT` when a number input is NaN.
 */
export declare function allocateBudgets(opts: {
  layers: readonly MemoryLayer[];
  totalBudget: number;
  systemPromptTokens: number;
  responseReserve: number;
}): { allocations: BudgetAllocation[]; historyBudget: number };

/** Throws NoeticError `budget_exceeded` when the context is past a limit. */
export declare function checkBudget(ctx: Context<unknown>, limits: BudgetLimits): void;

// =============================================================================
// Projection
// =============================================================================

/**
 * System items, then layer output, then history. With a `policy` the view is held to
 * `tokenBudget - responseReserve`: system items always stay, each layer item is kept
 * if it fits, history is kept newest-first up to the first misfit and then stripped
 * of unresolved tool calls.
 */
export declare function assembleView(opts: {
  systemPromptItems: readonly Item[];
  layerOutputItems: readonly Item[];
  historyItems: readonly Item[];
  policy?: ProjectionPolicy;
}): Item[];

/**
 * `storage` confined to `layers/<layerId>/<scopeKey>/`, as a layer's hooks see theirs (its durable state is under the
 * key `state`). `list(keyPrefix)` gives keys relative to that prefix. NoeticConfigError `INVALID_STORAGE` for
 * anything but a StorageAdapter and two strings.
 */
/**
 * Per-(execution, layer) state. After `registerDurable`, every write of that key is mirrored to its target under
 * `state` (`undefined` deletes it), one write in flight per key with later values coalescing, the latest winning;
 * `flush` waits for them. A failed mirror write goes to `diagnostic(layerId, 'persist', error)`. Pass one as the
 * harness's `layerStateStore` to hold its JS layers' state.
 */
export declare function createLayerStateStore(
  diagnostic?: (layerId: string, hook: string, error: unknown) => void,
): Required<LayerStateStore>;

export declare function createScopedStorage(storage: StorageAdapter, layerId: string, scopeKey: string): ScopedStorage;

/** The value itself, typed as `T`: a deliberate unchecked cast at a framework boundary. */
export declare function frameworkCast<T>(value: unknown): T;

/**
 * Points `ctx.cwdState.cwd` at `nextCwd` for a spawn about to snapshot it, leaving its `cd` history alone; the
 * returned function restores both.
 */
export declare function retargetCwdForSpawn(ctx: Context, nextCwd: string): () => void;

'use strict';
// Layer state as JS holds it. The native harness decides when state is written, mirrored durably, disabled and
// forgotten (memory/state.rs); the values of JS layers stay here, where their hooks read them without a crossing.

// The harness's JS layer states, by execution. Plain maps by default; given a `layerStateStore`, that store holds
// them instead, and hears of disabled layers and ended executions (DECISIONS M8).
class LayerStates {
  constructor(store) {
    this.store = store;
    this.maps = new Map();
  }

  // One execution's states, as a Map-like `get(layerId)` / `set(layerId, state)`.
  of(executionId) {
    if (this.store) {
      const store = this.store;
      return { get: (layerId) => store.get(executionId, layerId), set: (layerId, state) => store.set(executionId, layerId, state) };
    }
    let states = this.maps.get(executionId);
    if (!states) this.maps.set(executionId, (states = new Map()));
    return states;
  }

  get(executionId, layerId) {
    return this.store ? this.store.get(executionId, layerId) : this.maps.get(executionId)?.get(layerId);
  }

  disable(executionId, layerId) {
    this.store?.disable?.(executionId, layerId);
  }

  forget(executionId) {
    if (this.store) this.store.cleanup(executionId);
    else this.maps.delete(executionId);
  }
}

// /unstable createLayerStateStore: per-(execution, layer) state with durable write-through. A layer registered as
// durable has every write mirrored to its target under the key `state` (undefined deletes it): one write in flight
// per key at a time, later values coalescing into the next, the latest winning. A failed mirror write is a
// diagnostic (hook 'persist'), never an error of the writer.
function createLayerStateStore(diagnostic) {
  const states = new Map();
  const durables = new Map();
  const disabled = new Map();
  const report = typeof diagnostic === 'function' ? diagnostic : () => {};
  const inner = (map, executionId, make) => {
    let entry = map.get(executionId);
    if (!entry && make) map.set(executionId, (entry = make()));
    return entry;
  };

  async function mirror(entry) {
    while (entry.pending) {
      entry.pending = false;
      const value = entry.latest;
      try {
        await (value === undefined ? entry.target.delete('state') : entry.target.set('state', value));
      } catch (e) {
        report(entry.layerId, 'persist', e);
      }
    }
    entry.writing = null;
  }

  return {
    get: (executionId, layerId) => states.get(executionId)?.get(layerId),
    set(executionId, layerId, state) {
      inner(states, executionId, () => new Map()).set(layerId, state);
      const entry = durables.get(executionId)?.get(layerId);
      if (!entry) return;
      entry.latest = state;
      entry.pending = true;
      entry.writing ??= mirror(entry);
    },
    has: (executionId, layerId) => states.get(executionId)?.has(layerId) ?? false,
    registerDurable(executionId, layerId, target) {
      inner(durables, executionId, () => new Map()).set(layerId, { layerId, target, latest: undefined, pending: false, writing: null });
    },
    async flush(executionId) {
      const entries = durables.get(executionId);
      if (entries) await Promise.all([...entries.values()].map((entry) => entry.writing));
    },
    disable(executionId, layerId) {
      inner(disabled, executionId, () => new Set()).add(layerId);
    },
    isDisabled: (executionId, layerId) => disabled.get(executionId)?.has(layerId) ?? false,
    cleanup(executionId) {
      states.delete(executionId);
      durables.delete(executionId);
      disabled.delete(executionId);
    },
    diagnostic: report,
  };
}

module.exports = { LayerStates, createLayerStateStore };

'use strict';
// JS layers' state values, kept here so hooks read them without a crossing; the native side decides the rest.

// Plain maps by default; a `layerStateStore` holds them instead, and hears of disables and endings (DECISIONS M8).
class LayerStates {
  constructor(store) {
    this.store = store;
    this.maps = new Map();
  }

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

// /unstable: one mirror write in flight per key, later values coalescing; a failed one is a diagnostic, not an error.
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

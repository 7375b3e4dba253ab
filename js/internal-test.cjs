'use strict';
// `@noetic-tools/core/internal/test`: runtime pieces upstream's own tests build directly.
const { ChannelStore } = require('./channels.cjs');
const { ContextImpl: Context, ItemLogImpl: Log } = require('./context.cjs');
const { NoeticConfigError } = require('./errors.cjs');
const { gateOf } = require('./item-schemas.cjs');
const { AgentHarness } = require('./harness.cjs');
const { SpanImpl, NoopSpan } = require('./observability.cjs');

// Contexts given a stand-in harness live in one real harness that routes model calls to the calling context's stand-in.
let standIn;
function standInHarness() {
  if (!standIn) {
    standIn = new AgentHarness({ name: 'internal-test', params: {}, _testCallModel: (request, ctx) => ctx.harness.callModel(request) });
    standIn._runtime.inheritsFaces = true;
  }
  return standIn;
}

function contextFrom(opts) {
  if (typeof opts !== 'object' || opts === null || typeof opts.harness !== 'object' || opts.harness === null) {
    throw new NoeticConfigError({ code: 'INVALID_CONTEXT_OPTIONS', message: 'new ContextImpl(options) needs options.harness.', hint: 'Pass { harness: new AgentHarness(...) } or an object with the harness members a step uses.' });
  }
  const own = opts.harness instanceof AgentHarness;
  const harness = own ? opts.harness : standInHarness();
  const parent = opts.parent ?? undefined;
  if (parent !== undefined && !(parent instanceof Context && parent._rt === harness._runtime)) {
    throw new NoeticConfigError({ code: 'INVALID_CONTEXT_OPTIONS', message: 'new ContextImpl(options): options.parent is not a context of the same harness.', hint: 'Build the parent with the same harness (stand-in harnesses all count as one).' });
  }
  const ctx = harness._createContext(
    { threadId: opts.threadId, resourceId: opts.resourceId, memory: opts.layers, items: opts.items, state: opts.state ?? {} },
    { id: opts.id, parent: parent?.id },
  );
  if (parent !== undefined) ctx._parent = parent;
  if (!own) ctx._face = opts.harness;
  // Upstream's ContextImpl has no channel store unless given one (a loop's inbox reads only a store of ours).
  ctx._store = opts.channelStore ?? null;
  harness._runtime.native.useChannels(ctx.id, ctx._store instanceof ChannelStore ? ctx._store._native : null);
  if (opts.cwdState !== undefined) ctx.cwdState = opts.cwdState;
  if (opts.itemSchemas != null) {
    ctx._itemSchemas = opts.itemSchemas;
    ctx.itemLog._gate = gateOf(opts.itemSchemas, ctx.layers ?? []);
  }
  Object.defineProperties(ctx, {
    span: { value: opts.span ?? new NoopSpan(), enumerable: true },
    unifiedTools: { value: opts.unifiedTools, writable: true, enumerable: true },
    checkpoint: { value: async () => opts.checkpointFn?.() },
  });
  return ctx;
}

// What `new` returns is one of our contexts, so it runs steps and counts as a ContextImpl.
class ContextImpl extends Context {
  constructor(opts) {
    return contextFrom(opts);
  }

  static [Symbol.hasInstance](value) {
    return value instanceof Context;
  }
}

// The log of a context no step runs in.
class ItemLogImpl extends Log {
  constructor(itemSchemas) {
    return contextFrom({ harness: standInHarness(), itemSchemas }).itemLog;
  }

  static [Symbol.hasInstance](value) {
    return value instanceof Log;
  }
}

module.exports = { ChannelStore, ContextImpl, ItemLogImpl, SpanImpl };

'use strict';
// `@noetic-tools/core/internal/test`: runtime pieces upstream's own tests build directly. The channel store is
// the harness's own; SpanImpl is the plain span those tests hand to contexts.
const { ChannelStore } = require('./channels.cjs');
const { ContextImpl: Context, ItemLogImpl: Log } = require('./context.cjs');
const { NoeticConfigError } = require('./errors.cjs');
const { gateOf } = require('./item-schemas.cjs');
const { AgentHarness } = require('./harness.cjs');
const { SpanImpl, NoopSpan } = require('./observability.cjs');

// Upstream's tests hand ContextImpl a stand-in harness (a plain object with a `callModel`). Such contexts live in
// one real harness whose model calls go to the stand-in of the context that makes them.
let standIn;
function standInHarness() {
  if (!standIn) {
    // The runtime hands a stand-in's model the calling context beside the request (which, as upstream's, has no
    // context when it has no tools).
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
  // Upstream's ContextImpl has no channel store unless given one.
  ctx._store = opts.channelStore ?? null;
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

// Upstream's ContextImpl, built from its options object. What `new` returns is one of our contexts: it runs steps
// (`execute(step, input, ctx)`) and counts as a ContextImpl.
class ContextImpl extends Context {
  constructor(opts) {
    return contextFrom(opts);
  }

  static [Symbol.hasInstance](value) {
    return value instanceof Context;
  }
}

// Upstream's ItemLogImpl: a log of its own (that of a context no step runs in).
class ItemLogImpl extends Log {
  constructor(itemSchemas) {
    return contextFrom({ harness: standInHarness(), itemSchemas }).itemLog;
  }

  static [Symbol.hasInstance](value) {
    return value instanceof Log;
  }
}

module.exports = { ChannelStore, ContextImpl, ItemLogImpl, SpanImpl };

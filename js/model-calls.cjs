'use strict';
// Model calls JS answers: a test model's request, built from the natively projected view, and one-off `callModel`.
const { fromNative } = require('./errors.cjs');
const { ownContext } = require('./context.cjs');
const { outputJsonSchema } = require('./memory.cjs');
const { describeTool } = require('./tool-calls.cjs');
const { checkModelRequest } = require('./options.cjs');
const { sketchText } = require('./sketch.cjs');
const { extendedBy, gateOf, admit } = require('./item-schemas.cjs');
const { parseJson } = require('./json.cjs');

// `harness.callModel` and a hook's `ctx.callModel`: a test model is called directly, the harness's own natively.
async function callModelAside(runtime, request) {
  checkModelRequest(request);
  if (runtime.testModel) {
    // As upstream, the reply's items are put to the harness's schemas with the request's layers' and tools'.
    const response = await runtime.testModel(request);
    const schemas = extendedBy(runtime.harness.itemSchemas, [...(request.layers ?? []), ...(request.tools ?? [])]);
    return { ...response, items: schemas.parseMany(response.items) };
  }
  // Tools run in the request's context, round after round, as upstream's loop runs them.
  const tools = Array.isArray(request.tools) && request.tools.length > 0 ? request.tools : undefined;
  const ctx = tools ? ownContext(runtime, request.ctx, 'callModel') : undefined;
  const handles = tools ? runtime.scope() : undefined;
  try {
    const head = JSON.stringify({
      model: request.model,
      instructions: request.instructions,
      params: request.params,
      outputSchema: request.outputSchema ? outputJsonSchema(request.outputSchema) : undefined,
      tools: tools?.map((t) => describeTool(t, handles.keep)),
      context: ctx?.id,
    });
    const items = (request.items ?? []).map((item) => JSON.stringify(item));
    const result = parseJson(await runtime.native.callModelOnce(head, items));
    if (!result.ok) throw fromNative(result.error, () => undefined);
    return { items: result.items, usage: result.usage, ...(result.cost === undefined ? {} : { cost: result.cost }) };
  } finally {
    handles?.release();
  }
}

async function callTestModel(runtime, call) {
  const ctx = runtime.context(call.context);
  // Flat triples: `0, start, end` (a run of the log), `1, key, index` (a kept recalled item), `2, item, 0`.
  const view = call.view;
  let end = 0;
  for (let i = 0; i < view.length; i += 3) if (view[i] === 0 && view[i + 2] > end) end = view[i + 2];
  const log = ctx.itemLog._upTo(end);
  const parts = [];
  for (let i = 0; i < view.length; i += 3) {
    const kind = view[i];
    parts.push(kind === 0 ? log.slice(view[i + 1], view[i + 2]) : [kind === 1 ? runtime.recalled.get(view[i + 1])[view[i + 2]] : view[i + 1]]);
  }
  const items = joined(parts);
  const tools = call.tools.map((t) => modelTool(runtime, t, ctx));
  // A step's call names the context's layers as they are now (a `provide` adds some); a call aside does not.
  const layers = (call.layers ?? ctx._layers.map(({ handle }) => handle)).map((handle) => runtime.handles.get(handle));
  const request = call.aside ? asideRequest(call, items) : stepRequest(runtime, call, items, tools, ctx, layers);
  // The internal-test stand-in harness routes the call by the context that makes it.
  const response = await (runtime.inheritsFaces ? runtime.testModel(request, ctx) : runtime.testModel(request));
  const listed = Array.isArray(response?.items);
  const replied = listed ? response.items : [];
  const checked = admit(gateOf(runtime.harness.itemSchemas, [...layers, ...tools]), replied);
  // Kept until `modelItems` places them, so they stand for themselves; a call aside never goes in the log.
  if (!call.aside) ctx._modelReply = replied;
  // Checked natively (host/model_reply.rs), written field by field: the items are JSON texts already and go in as
  // they are; an absent usage or cost is left out (read as undefined); the reply is sketched only when it has no list
  // of items to send.
  const texts = replied.map((item) => JSON.stringify(item) ?? sketchText(item, [], 0));
  const { usage, cost } = response ?? {};
  let text = `{"ok":true,"checked":${checked}`;
  if (usage !== undefined) text += `,"usage":${sketchText(usage, [], 1)}`;
  if (cost !== undefined) text += `,"cost":${sketchText(cost, [], 0)}`;
  if (!listed) text += `,"shape":${sketchText(response, [], 1)}`;
  return `${text},"items":[${texts.join(',')}]}`;
}

// Upstream's keys in upstream's order; without tools, neither tools nor context.
function stepRequest(runtime, call, items, tools, ctx, layers) {
  const step = call.step === undefined ? undefined : runtime.handles.get(call.step);
  const { model, instructions } = call;
  const [params, outputSchema, emit] = [step?.params, step?.output, step?.emit];
  if (tools.length === 0) return { model, items, instructions, params, outputSchema, emit };
  return { model, items, instructions, tools, params, outputSchema, emit, ctx, layers: layers.length === 0 ? undefined : layers, allowedToolNames: call.allowedToolNames };
}

// The user's own tool, or upstream's tool of a layer's `provides` function (named `layerId/fnName`).
function modelTool(runtime, t, ctx) {
  if (t.kind === 'tool') return runtime.handles.get(t.handle);
  const name = `${t.layerId}/${t.name}`;
  const layer = t.layer == null ? undefined : runtime.handles.get(t.layer);
  const decl = layer?.provides?.[t.name];
  if (decl?.kind !== 'function') return { name };
  const bound = t.context === undefined ? ctx : runtime.context(t.context);
  return { name, description: decl.description, input: decl.input, output: decl.output, execute: (args, _toolCtx) => runtime.callLayerFn(bound, layer, t.name, args) };
}

// As a layer's `ctx.callModel({ model, items, instructions? })` is.
function asideRequest(call, items) {
  return call.instructions === undefined ? { model: call.model, items } : { model: call.model, items, instructions: call.instructions };
}

// Spread into concat in bounded chunks: a view of very many entries would exceed the arguments one call can take.
const JOIN_CHUNK = 4096;
function joined(parts) {
  if (parts.length === 1) return parts[0];
  let items = [];
  for (let i = 0; i < parts.length; i += JOIN_CHUNK) items = items.concat(...parts.slice(i, i + JOIN_CHUNK));
  return items;
}

module.exports = { callModelAside, callTestModel };

'use strict';
// Tools JS runs for the native side: a `step.tool` step, and a model's tool call within an LLM step.
const { messageOf } = require('./errors.cjs');
const { randomId } = require('./ids.cjs');
const { toolInputSchema } = require('./memory.cjs');
const { checkCategory } = require('./item-schemas.cjs');

function describeTool(t, keep) {
  return { name: t.name, description: t.description ?? '', inputSchema: t.input ? toolInputSchema(t.input) : { type: 'object' }, handle: keep(t) };
}

// A generator tool is run to its end; its return value is the step's output.
async function runToolStep(runtime, { tool, args, stepId, context, input }) {
  const t = runtime.handles.get(tool);
  const value = runtime.fromRef(input);
  const extra = args == null ? undefined : runtime.handles.get(args);
  let parsed = extra ? { ...value, ...extra } : value;
  if (typeof t.input?.safeParse === 'function') {
    const checked = t.input.safeParse(parsed);
    if (!checked.success) throw new Error(`Tool input validation failed: ${checked.error.message}`);
    parsed = checked.data;
  }
  // Each yield is a `tool_progress` event on the session's stream (when the step runs in one).
  return drain(await t.execute(parsed, toolContext(runtime, runtime.context(context))), (event) => {
    const data = JSON.stringify({ stepId, toolName: t.name, event });
    if (data !== undefined) runtime.native.frameworkEvent(context, 'tool_progress', data);
  });
}

// A failure is the tool's output (`Error: ...`), as upstream's.
async function runTool(runtime, { tool, arguments: text, context, callId, name }) {
  const ctx = runtime.context(context);
  let args;
  try {
    args = JSON.parse(text);
  } catch {
    // The native loop answers such calls itself; this is for arguments it could not judge.
    return { output: `Error: malformed JSON in tool arguments: ${text}`, isError: true };
  }
  const t = tool.kind === 'layerFn' ? undefined : runtime.handles.get(tool.handle);
  let result;
  let output;
  let error = false;
  try {
    result =
      tool.kind === 'layerFn'
        ? await runtime.callLayerFn(ctx, runtime.handles.get(tool.layer), tool.name, args)
        : await drain(await t.execute(args, toolContext(runtime, ctx)));
    output = result === undefined ? undefined : typeof result === 'string' ? result : JSON.stringify(result);
  } catch (e) {
    error = true;
    result = undefined;
    output = `Error: ${messageOf(e)}`;
  }
  const reply = { output, isError: error };
  const baseItem = () => ({ id: randomId(), status: 'completed', type: 'function_call_output', callId, output });
  // The model is still sent only the output.
  let item;
  if (typeof t?.decorateResultItem === 'function') {
    const callItem = { type: 'function_call', callId, name, arguments: text };
    item = t.decorateResultItem({ baseItem: baseItem(), callItem, args, result, output, error: error || undefined });
    reply.item = JSON.stringify(item);
  }
  // This tool's own schemas, not its siblings', as upstream.
  checkCategory(runtime.harness.itemSchemas, t ? [t] : [], 'toolResults', () => item ?? baseItem());
  return reply;
}

async function drain(result, onYield) {
  if (result === null || typeof result !== 'object' || typeof result[Symbol.asyncIterator] !== 'function') return result;
  const iterator = result[Symbol.asyncIterator]();
  for (;;) {
    const next = await iterator.next();
    if (next.done) return next.value;
    onYield?.(next.value);
  }
}

// Upstream's ToolExecutionContext.
function toolContext(runtime, ctx) {
  const harness = runtime.harness;
  return {
    ctx,
    harness,
    fs: harness.fs,
    shell: harness.shell,
    memory: { get: (layerId) => runtime.layerStateOf(ctx, layerId), set: (layerId, state) => runtime.setLayerStateOf(ctx, layerId, state) },
    assembledView: ctx.itemLog.items,
    lastStepMeta: ctx.lastStepMeta ?? null,
    turnContext: undefined,
  };
}

module.exports = { describeTool, runToolStep, runTool };

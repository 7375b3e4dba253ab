'use strict';
// The requests a native run makes of JS that wait on user code; each resolves to the reply's fields.
const { NoeticConfigError, NoeticErrorImpl, KEEP_IDENTITY, describeValue, revivePayload } = require('./errors.cjs');
const { ZodError } = require('zod');
const { runToolStep, runTool } = require('./tool-calls.cjs');
const { NATIVE, describeLayer } = require('./memory.cjs');
const { describeStep, describeTool } = require('./steps.cjs');
const { readFiles } = require('./file-reads.cjs');
const { dispatch } = require('./detached.cjs');

// As upstream's predicates see it.
function textOfOutput(output) {
  if (typeof output === 'string') return output;
  if (typeof output === 'object' && output !== null && 'text' in output) return String(output.text);
  return output === undefined ? '' : (JSON.stringify(output) ?? '');
}

async function answerRequest(runtime, message) {
  switch (message.op) {
    case 'step': {
      // Called here, or handed to the adapter the runtime chose (R15), which may call it back as its local executor.
      const { call } = message;
      const [fn, input, ctx] = [runtime.handles.get(call.step), runtime.fromRef(call.input), runtime.context(call.context)];
      const run = () => fn(input, ctx);
      if (call.adapter === undefined) return { value: runtime.toRef(await run()) };
      const overrides = { threadId: ctx.threadId, resourceId: ctx.resourceId };
      const handle = dispatch({ adapter: runtime.handles.get(call.adapter), stepId: call.stepId, input, executionId: ctx.id, overrides, run });
      return { value: runtime.toRef(await handle.await()) };
    }
    case 'until': {
      const { call } = message;
      const lastOutput = runtime.fromRef(call.lastOutput);
      const snapshot = {
        stepCount: call.stepCount,
        tokens: call.tokens,
        elapsed: call.elapsedMs,
        cost: call.cost,
        lastOutput,
        lastText: textOfOutput(lastOutput),
        history: call.history.map((ref) => runtime.fromRef(ref)),
        depth: call.depth,
        lastStepMeta: call.lastStepMeta,
      };
      const verdict = await runtime.handles.get(call.predicate)(snapshot);
      return { stop: Boolean(verdict?.stop), reason: verdict?.reason, feedback: verdict?.feedback };
    }
    case 'layerCallback': {
      const fn = runtime.handles.get(message.layer)[NATIVE].callbacks[message.name];
      return { value: (await fn(message.args, message.info && runtime.execContext(message.info))) ?? null };
    }
    case 'readFiles':
      return { outcomes: await readFiles(runtime.harness.fs, message.reads) };
    case 'lazy':
      return resolveLazy(runtime, message.call);
    case 'parseOutput': {
      const { schema: handle, stepId, raw } = message.call;
      const schema = runtime.handles.get(handle);
      let parsed;
      try {
        parsed = JSON.parse(raw);
      } catch (e) {
        throw parseError(stepId, raw, schema, { code: 'custom', message: `Invalid JSON: ${e.message}`, path: [] });
      }
      const checked = schema.safeParse(parsed);
      if (!checked.success) throw parseError(stepId, raw, schema, checked.error);
      return { value: runtime.toRef(checked.data) };
    }
    case 'inbox': {
      // A value the runtime took from the context's store for a loop's inbox. A receive's is awaited, as its promise
      // would be: a rejection other than a cancellation is no message.
      let received = runtime.context(message.call.context).channelStore._took(message.call);
      if (message.call.awaited) received = await Promise.resolve(received).catch((e) => (e?.noeticError?.kind === 'cancelled' ? Promise.reject(e) : null));
      return { message: received === null ? null : String(received) };
    }
    case 'toolStep':
      return { value: runtime.toRef(await runToolStep(runtime, message.call)) };
    case 'route': {
      const { call } = message;
      const chosen = await runtime.handles.get(call.func)(runtime.fromRef(call.input), runtime.context(call.context));
      return { step: chosen === null ? null : describeChosen(runtime, chosen, 'a branch route returned') };
    }
    case 'forkPaths': {
      const { call } = message;
      const paths = await runtime.handles.get(call.func)(runtime.fromRef(call.input), runtime.context(call.context));
      if (!Array.isArray(paths)) {
        throw new NoeticConfigError({ code: 'INVALID_FORK_PATHS', message: `A fork's paths function returned ${describeValue(paths)}; expected an array of steps.`, hint: 'Return the steps to run side by side, e.g. paths: () => [stepA, stepB].' });
      }
      return { paths: paths.map((path, i) => describeChosen(runtime, path, `a fork's paths[${i}] is`)) };
    }
    case 'fn': {
      const { call } = message;
      const lookup = (h) => runtime.handles.get(h);
      const args = call.args.map((a) => (a.t === 'value' ? runtime.fromRef(a.v) : a.t === 'noetic' ? revivePayload(a.v, lookup) : a.v));
      return { value: runtime.toRef(await runtime.handles.get(call.func)(...args, runtime.context(call.context))) };
    }
    case 'merge': {
      const { call } = message;
      const results = call.results.map((r) => {
        switch (r.t) {
          case 'value':
            return runtime.fromRef(r.value);
          case 'fulfilled':
            return { stepId: r.stepId, status: 'fulfilled', value: runtime.fromRef(r.value) };
          default:
            return { stepId: r.stepId, status: 'rejected', error: revivePayload(r.error, (h) => runtime.handles.get(h)) };
        }
      });
      return { value: runtime.toRef(await runtime.handles.get(call.merge)(results, runtime.context(call.context))) };
    }
    case 'heldItems':
      runtime.context(message.call.context).itemLog._flush();
      return {};
    case 'tool':
      return runTool(runtime, message.call);
    case 'storage': {
      const { method, key, value } = message;
      const result = await runtime.storage[method](key, ...(method === 'set' ? [value] : []));
      return { value: result ?? null };
    }
    default:
      throw new Error(`unknown request '${message.op}'`);
  }
}

// Carried back as the very object: its schema and zodError are JS objects.
function parseError(stepId, raw, schema, zodError) {
  const error = zodError instanceof Error ? zodError : new ZodError([zodError]);
  const failure = new NoeticErrorImpl({ kind: 'llm_parse_error', stepId, raw, schema, zodError: error });
  failure[KEEP_IDENTITY] = true;
  return failure;
}

// Its functions are kept until the runs end.
function describeChosen(runtime, chosen, what) {
  if (typeof chosen !== 'object' || chosen === null || typeof chosen.kind !== 'string') {
    throw new NoeticConfigError({ code: 'INVALID_STEP', message: `${what} ${describeValue(chosen)}, not a step.`, hint: 'Return a step built with step.run, step.llm, loop, branch, fork, spawn... (or null from a route to pass the input through).' });
  }
  return describeStep(chosen, (v) => runtime.keepValue(v), describeLayer);
}

// Tools the getters return live as long as the run.
async function resolveLazy(runtime, { step, context, fields }) {
  const s = runtime.handles.get(step);
  const ctx = runtime.context(context);
  const out = {};
  for (const field of fields) out[field] = await s[field](ctx);
  if (out.tools != null && !Array.isArray(out.tools)) {
    throw new TypeError(`step.llm '${s.id}': the tools getter must return an array of tools or undefined`);
  }
  return {
    model: typeof out.model === 'string' ? out.model : null,
    instructions: typeof out.instructions === 'string' ? out.instructions : null,
    tools: out.tools == null ? null : out.tools.map((t) => describeTool(t, (v) => runtime.keepValue(v))),
  };
}

module.exports = { answerRequest };

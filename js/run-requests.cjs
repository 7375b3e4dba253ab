'use strict';
// The requests a native run makes of JS that wait on user code: a step's function, a loop's predicate and
// callbacks, a branch's route, a fork's paths and merge, an LLM step's getters and output schema, a built-in layer's
// callbacks and file reads, a loop's inbox and an `every`'s park, tool steps, and a user storage adapter's calls.
// Each resolves to the reply's fields; the runtime (runtime.cjs) writes the reply.
const { NoeticConfigError, NoeticErrorImpl, KEEP_IDENTITY, describeValue, revivePayload } = require('./errors.cjs');
const { ZodError } = require('zod');
const { runToolStep, runTool } = require('./tool-calls.cjs');
const { NATIVE, describeLayer } = require('./memory.cjs');
const { describeStep, describeTool } = require('./steps.cjs');
const { readFiles } = require('./file-reads.cjs');
const { clearLongTimeout, setLongTimeout } = require('./timers.cjs');

// A loop output's text as predicates see it (upstream's): a string itself, a `text` field, or its JSON.
function textOfOutput(output) {
  if (typeof output === 'string') return output;
  if (typeof output === 'object' && output !== null && 'text' in output) return String(output.text);
  return output === undefined ? '' : (JSON.stringify(output) ?? '');
}

async function answerRequest(runtime, message) {
  switch (message.op) {
    case 'step': {
      const { call } = message;
      const fn = runtime.handles.get(call.step);
      const output = await fn(runtime.fromRef(call.input), runtime.context(call.context));
      return { value: runtime.toRef(output) };
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
      // A built-in layer's user function (a schema, an observer, steering's predicates); `info` when it takes a ctx.
      const fn = runtime.handles.get(message.layer)[NATIVE].callbacks[message.name];
      return { value: (await fn(message.args, message.info && runtime.execContext(message.info))) ?? null };
    }
    case 'readFiles':
      // A built-in layer's reads through the harness's filesystem (one request for all its files).
      return { outcomes: await readFiles(runtime.harness.fs, message.reads) };
    case 'lazy':
      return resolveLazy(runtime, message.call);
    case 'parseOutput': {
      // The reply must be JSON the step's schema accepts; the step's output is what the schema makes of it.
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
      // A loop about to stop reads its inbox: what is there, or (with a park timeout) what comes within it. Only
      // a cancellation of the context is an error; a timeout is no message.
      const { channel, context, parkTimeout } = message.call;
      const ch = runtime.handles.get(channel);
      const ctx = runtime.context(context);
      let received = null;
      if (!(parkTimeout > 0)) received = ctx.tryRecv(ch);
      else {
        try {
          received = await ctx.recv(ch, { timeout: parkTimeout });
        } catch (e) {
          if (e?.noeticError?.kind === 'cancelled') throw e;
        }
      }
      return { message: received === null ? null : String(received) };
    }
    case 'wake': {
      // An `every` parked: the next send on its channel wakes it, or its own time runs out.
      // An abort of its context ends the park natively; the wait here ends with it, or its timer would keep Node
      // alive for the rest of the interval.
      const { channel, timeout, context } = message.call;
      const signal = runtime.context(context)._signal;
      await new Promise((resolve) => {
        const done = () => {
          clearLongTimeout(timer);
          unsubscribe();
          signal.removeEventListener('abort', done);
          resolve();
        };
        const timer = setLongTimeout(done, Math.max(timeout, 0));
        const unsubscribe = runtime.channels.subscribeWake(runtime.handles.get(channel), done);
        if (signal.aborted) done();
        else signal.addEventListener('abort', done, { once: true });
      });
      return {};
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
      // A loop's prepareNext or onError: values, plain JSON or a NoeticError payload, then the context.
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

// `llm_parse_error`, carried back as the very object (its schema and zodError are JS objects).
function parseError(stepId, raw, schema, zodError) {
  const error = zodError instanceof Error ? zodError : new ZodError([zodError]);
  const failure = new NoeticErrorImpl({ kind: 'llm_parse_error', stepId, raw, schema, zodError: error });
  failure[KEEP_IDENTITY] = true;
  return failure;
}

// A step a route or paths function chose at run time, described as the steps of a run are; its functions are kept
// until the runs end. Anything but a step is named.
function describeChosen(runtime, chosen, what) {
  if (typeof chosen !== 'object' || chosen === null || typeof chosen.kind !== 'string') {
    throw new NoeticConfigError({ code: 'INVALID_STEP', message: `${what} ${describeValue(chosen)}, not a step.`, hint: 'Return a step built with step.run, step.llm, loop, branch, fork, spawn... (or null from a route to pass the input through).' });
  }
  return describeStep(chosen, (v) => runtime.keepValue(v), describeLayer);
}

// An LLM step's getter fields, run with the live context. Tools they return live as long as the run.
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

'use strict';
// @noetic-tools/core/inspector: a local page showing what each model call of a harness saw. The runtime checks the
// options, records and serves the page (crates/noetic-runtime/src/harness/inspect/server.rs); JS says which harness,
// gives its layers' names, and keeps the process alive while the server is open, as a server's own handle would.
const liveness = require('./liveness.cjs');
const { NoeticConfigError, rethrowNative } = require('./errors.cjs');
const { sketch } = require('./sketch.cjs');

// The harnesses of open inspectors, held as a node:http server's handle held its own: a page may ask at any time.
const open = new Set();

async function startInspector(harness, opts) {
  const native = harness?._runtime?.native;
  if (native === undefined) {
    throw new NoeticConfigError({
      code: 'INVALID_INSPECTOR_TARGET',
      message: 'startInspector(harness, options): harness is not an AgentHarness.',
      hint: 'Pass the AgentHarness whose model calls you want to see.',
    });
  }
  // The runtime's layers carry no names; the user's layer objects do.
  const names = JSON.stringify((harness._layers ?? []).map((layer) => [layer.id, layer.name ?? layer.id]));
  let url;
  try {
    url = await native.inspectorStart(sketch(opts, []), names);
  } catch (e) {
    rethrowNative(e);
  }
  open.add(harness);
  liveness.hold();
  let closed;
  return { url, close: () => (closed ??= close(native, harness)) };
}

async function close(native, harness) {
  try {
    await native.inspectorClose();
  } finally {
    open.delete(harness);
    liveness.release();
  }
}

module.exports = { startInspector };

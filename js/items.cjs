'use strict';
// Item helpers small enough that a native call would cost more than the work (DECISIONS A3c). The runtime's Rust
// versions give the same results; __test__ checks both against the same vectors.
const { randomId } = require('./ids.cjs');
const { NoeticConfigError } = require('./errors.cjs');

// ⌈UTF-16 length / 4⌉: `length` counts UTF-16 code units, exactly as upstream.
function estimateTokens(text) {
  return Math.ceil(text.length / 4);
}

function createMessage(text, role) {
  if (role !== 'user' && role !== 'developer') {
    throw new NoeticConfigError({
      code: 'INVALID_MESSAGE_ROLE',
      message: `createMessage role must be 'user' or 'developer', got ${JSON.stringify(role)}.`,
      hint: 'Use createMessage(text, "user") or createMessage(text, "developer").',
    });
  }
  return { id: randomId(), status: 'completed', type: 'message', role, content: [{ type: 'input_text', text }] };
}

// Drops calls without an output and outputs without a call, pairing by callId membership only.
function stripUnresolvedToolCalls(items) {
  const calls = new Set();
  const outputs = new Set();
  for (const item of items) {
    if (item.type === 'function_call') calls.add(item.callId);
    else if (item.type === 'function_call_output') outputs.add(item.callId);
  }
  return items.filter((item) => {
    if (item.type === 'function_call') return outputs.has(item.callId);
    if (item.type === 'function_call_output') return calls.has(item.callId);
    return true;
  });
}

function findFunctionCall(items, name) {
  for (const item of items) {
    if (item.type !== 'function_call' || !item.callId || item.name !== name) continue;
    try {
      const args = JSON.parse(item.arguments);
      if (typeof args === 'object' && args !== null && !Array.isArray(args)) return args;
    } catch {
      // Unparsable arguments: keep looking.
    }
  }
  return null;
}

module.exports = { estimateTokens, createMessage, stripUnresolvedToolCalls, findFunctionCall };

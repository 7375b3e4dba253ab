// Steering (issue 10, spec §14): beforeToolCall before each tool call, afterModelCall after each model response.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { AgentHarness, NoeticConfigError, isNoeticError, step, tool } from '../js/index.mjs';

const assistant = (text) => ({ id: `a-${text}`, type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text }] });
const layer = (id, slot, hooks) => ({ id, slot, scope: 'execution', hooks });
const textsOf = (items) => items.filter((i) => i.type === 'message').map((i) => `${i.role}:${i.content[0].text}`);

function toolHarness(layers, calls, opts = {}) {
  const ran = [];
  const mk = (name) => tool({ name, description: name, input: z.object({}).passthrough(), execute: async () => (ran.push(name), `${name} ran`) });
  const script = [{ toolCalls: calls.map((name) => ({ name, arguments: { target: name } })) }, { text: 'done' }];
  const h = new AgentHarness({ name: 's', params: {}, memory: layers, llm: { provider: 'scripted', script }, ...opts });
  const ctx = h.createContext();
  const run = () => h.run(step.llm({ id: 'act', model: 'scripted', tools: ['rm', 'ls', 'cat'].map(mk) }), 'go', ctx);
  const outputs = () => ctx.itemLog.items.filter((i) => i.type === 'function_call_output').map((i) => i.output);
  return { run, outputs, ran, ctx };
}

test('beforeToolCall: a deny or a guide answers for the tool, which does not run; the first deny ends the vote', async () => {
  const seen = [];
  const states = [];
  const policy = layer('policy', 90, {
    beforeToolCall: async ({ toolName, toolArgs, state, signal }) => {
      seen.push(['policy', toolName, toolArgs.target, signal instanceof AbortSignal]);
      const action = { rm: 'deny', cat: 'guide' }[toolName] ?? 'allow';
      return { decision: { action, guidance: action === 'deny' ? 'never delete' : undefined }, state: { votes: (state?.votes ?? 0) + 1 } };
    },
  });
  const later = layer('later', 200, {
    beforeToolCall: async ({ toolName, state }) => {
      seen.push(['later', toolName]);
      states.push(state);
      return { decision: { action: 'allow' } };
    },
  });
  const { run, outputs, ran } = toolHarness([later, policy], ['rm', 'ls', 'cat']);
  assert.equal(await run(), 'done');
  assert.deepEqual(outputs(), ['Tool call denied: never delete', 'ls ran', 'Tool call redirected: undefined']);
  assert.deepEqual(ran, ['ls']);
  // Slot order; after policy's deny of `rm`, the later layer is not asked.
  assert.deepEqual(seen, [['policy', 'rm', 'rm', true], ['policy', 'ls', 'ls', true], ['later', 'ls'], ['policy', 'cat', 'cat', true], ['later', 'cat']]);
  assert.equal(states.length, 2);
});

test('beforeToolCall fails open: a throw, a wrong shape or a timeout is a diagnostic and no vote; a NoeticConfigError propagates', async () => {
  const diagnostics = [];
  const onDiagnostic = (d) => diagnostics.push(`${d.layerId}/${d.hook}`);
  const broken = layer('broken', 90, { beforeToolCall: async () => { throw new Error('no'); } });
  const shapeless = layer('shapeless', 91, { beforeToolCall: async () => ({ decision: { action: 'maybe' } }) });
  const slow = { ...layer('slow', 92, { beforeToolCall: () => new Promise(() => {}) }), timeouts: { beforeToolCall: 20 } };
  const open = toolHarness([broken, shapeless, slow], ['ls'], { onDiagnostic });
  await open.run();
  assert.deepEqual(open.outputs(), ['ls ran']);
  assert.deepEqual(diagnostics, ['broken/beforeToolCall', 'shapeless/beforeToolCall', 'slow/beforeToolCall']);

  const misconfigured = layer('misconfigured', 90, {
    beforeToolCall: async () => { throw new NoeticConfigError({ code: 'BAD_POLICY', message: 'policy file missing', hint: 'add it' }); },
  });
  const closed = toolHarness([misconfigured], ['ls']);
  await assert.rejects(closed.run(), (e) => e instanceof NoeticConfigError && e.code === 'BAD_POLICY');
  assert.deepEqual(closed.ran, []);
});

test('afterModelCall: a guide asks again with the guidance as a developer message, at most three times; every call is counted', async () => {
  const requests = [];
  const _testCallModel = async (request) => {
    requests.push(textsOf(request.items));
    return { items: [assistant(`draft ${requests.length}`)], usage: { inputTokens: 10, outputTokens: 1 }, cost: 0.5 };
  };
  const votes = [];
  const critic = layer('critic', 90, {
    afterModelCall: async ({ response, state }) => {
      votes.push(response.items[0].content[0].text);
      return { decision: { action: 'guide', guidance: 'be brief' }, state: { seen: (state?.seen ?? 0) + 1 } };
    },
  });
  const second = layer('second', 95, { afterModelCall: async () => ({ decision: { action: 'guide', guidance: 'cite sources' } }) });
  const h = new AgentHarness({ name: 's', params: {}, memory: [critic, second], _testCallModel });
  const ctx = h.createContext();
  // The fourth response is taken as it is.
  assert.equal(await h.run(step.llm({ id: 'write', model: 'm' }), 'write', ctx), 'draft 4');
  assert.deepEqual(votes, ['draft 1', 'draft 2', 'draft 3', 'draft 4']);
  assert.deepEqual(requests[1], ['user:write', 'developer:be brief\ncite sources']);
  assert.deepEqual(textsOf(ctx.itemLog.items), ['user:write', 'developer:be brief\ncite sources', 'developer:be brief\ncite sources', 'developer:be brief\ncite sources', 'assistant:draft 4']);
  assert.deepEqual([ctx.tokens.input, ctx.cost], [40, 2]);
});

test('afterModelCall: a deny fails the step with steering_denied; nothing is appended, and the spend still counts', async () => {
  const _testCallModel = async () => ({ items: [assistant('rude answer')], usage: { inputTokens: 7, outputTokens: 3 }, cost: 0.25 });
  const gate = layer('gate', 90, { afterModelCall: async () => ({ decision: { action: 'deny', guidance: 'tone' } }) });
  const h = new AgentHarness({ name: 's', params: {}, memory: [gate], _testCallModel });
  const ctx = h.createContext();
  const error = await h.run(step.llm({ id: 'answer', model: 'm' }), 'hi', ctx).then(() => assert.fail('expected a deny'), (e) => e);
  assert.ok(isNoeticError(error));
  assert.deepEqual(error.noeticError, { kind: 'steering_denied', guidance: 'tone' });
  assert.match(error.message, /Steering denied: tone/);
  assert.deepEqual(textsOf(ctx.itemLog.items), ['user:hi']);
  assert.deepEqual([ctx.tokens.input, ctx.cost], [7, 0.25]);
});

test('a guide without guidance asks again with the default sentence', async () => {
  const requests = [];
  const _testCallModel = async (request) => (requests.push(textsOf(request.items)), { items: [assistant(`r${requests.length}`)] });
  let asked = 0;
  const once = layer('once', 90, { afterModelCall: async () => ({ decision: asked++ === 0 ? { action: 'guide' } : { action: 'allow' } }) });
  const h = new AgentHarness({ name: 's', params: {}, memory: [once], _testCallModel });
  assert.equal(await h.run(step.llm({ id: 'x', model: 'm' }), 'q'), 'r2');
  assert.deepEqual(requests[1], ['user:q', 'developer:Please adjust your response.']);
});

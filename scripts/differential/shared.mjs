// What the differential's programs share: a seeded generator, ways to record what user code sees, and a stand-in
// for OpenRouter's Responses API.
import http from 'node:http';

// A small seeded generator (the same numbers under both implementations).
export function random(seed) {
  let state = seed;
  const next = () => (state = (state * 1103515245 + 12345) % 2147483648) / 2147483648;
  return { next, pick: (list) => list[Math.floor(next() * list.length)] };
}

// An item as one line: its kind, role and text (a message's first part or string content, a call's name and
// arguments, an output's text).
export const itemText = (item) => `${item.type}:${item.role ?? ''}:${item.content?.[0]?.text ?? (typeof item.content === 'string' ? item.content : '')}${item.name ?? ''}${item.arguments ?? ''}${typeof item.output === 'string' ? item.output : ''}`;
export const textsOf = (items) => (items ?? []).map(itemText);
// An error as a program records it: its kind (a NoeticError's, a config error's code, else its name) and message.
export const failureOf = (e) => [e?.noeticError?.kind ?? e?.code ?? e?.name, String(e?.message ?? e).slice(0, 200)];
// What a run of `root` in a fresh context of thread 'thread' gives: its output, or its error as failureOf records it.
export async function runOutcome(harness, root, input) {
  try {
    return ['output', plain(await harness.run(root, input, harness.createContext({ threadId: 'thread' })))];
  } catch (e) {
    return ['error', ...failureOf(e)];
  }
}
export const plain = (value) => (value === undefined ? 'undefined' : JSON.parse(JSON.stringify(value)));
export const answer = (k) => ({ items: [{ type: 'message', id: `a${k}`, role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: `answer ${k}`, annotations: [] }] }], usage: { inputTokens: 10 + k, outputTokens: 5 } });
export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// Generated ids (random on both sides) as one placeholder, and object keys sorted (upstream's SDK rebuilds the
// objects it parses, in its own key order).
export const anonymous = (item) => JSON.parse(JSON.stringify(item).replace(/"(?:[a-z]+[-_])?[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"/g, '"<id>"'));
export const sortedKeys = (value) => (Array.isArray(value) ? value.map(sortedKeys) : value && typeof value === 'object' ? Object.fromEntries(Object.keys(value).sort().map((key) => [key, sortedKeys(value[key])])) : value);

// A stand-in for OpenRouter's Responses API: each POST is answered with `reply(body)`, streamed as server-sent
// events when asked, in the full shape upstream's SDK validates.
export async function openRouterStandIn(reply) {
  const full = (r) => ({
    object: 'response', created_at: 1, completed_at: 2, error: null, frequency_penalty: null, presence_penalty: null, incomplete_details: null,
    instructions: null, metadata: null, model: 'test/model', parallel_tool_calls: true, status: 'completed', temperature: null, top_p: null,
    tool_choice: 'auto', tools: [], ...r, usage: { input_tokens_details: { cached_tokens: 0 }, output_tokens_details: { reasoning_tokens: 0 }, ...r.usage },
  });
  const server = http.createServer((req, res) => {
    let text = '';
    req.on('data', (chunk) => (text += chunk));
    req.on('end', () => {
      const body = JSON.parse(text);
      const response = full(reply(body));
      if (!body.stream) {
        res.writeHead(200, { 'content-type': 'application/json', connection: 'close' });
        return res.end(JSON.stringify(response));
      }
      const events = [{ type: 'response.created', response: { ...response, status: 'in_progress', output: [] } }];
      response.output.forEach((item, index) => {
        events.push({ type: 'response.output_item.added', output_index: index, item });
        for (const part of item.content ?? []) events.push({ type: 'response.output_text.delta', item_id: item.id, output_index: index, content_index: 0, delta: part.text, logprobs: [] });
        events.push({ type: 'response.output_item.done', output_index: index, item });
      });
      events.push({ type: 'response.completed', response });
      res.writeHead(200, { 'content-type': 'text/event-stream', connection: 'close' });
      res.end(events.map((event, i) => `event: ${event.type}\ndata: ${JSON.stringify({ ...event, sequence_number: i })}\n\n`).join(''));
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${server.address().port}/api/v1`, close: () => (server.closeAllConnections?.(), server.close()) };
}

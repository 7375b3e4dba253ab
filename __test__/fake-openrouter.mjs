// A stand-in for OpenRouter's Responses API on 127.0.0.1, shared by the provider tests and the fake prefix-caching
// provider (prefix-cache-server.mjs). Every POST is recorded with its method, URL, headers and parsed body, then
// answered with what `answer(record, n)` returns for the n-th request (1-based):
//   { status?, headers?, body?, delayMs?, stallAfterEvents? }
// A successful reply is streamed as server-sent events when the request asks for a stream (as our provider always
// does); `stallAfterEvents: n` sends the first n events and then nothing, keeping the connection open; `delayMs`
// holds the reply back.
import http from 'node:http';

// The server-sent events OpenRouter streams for `response`: a keep-alive comment, each output item added, its text
// in deltas and done, then the terminal event carrying the response whole.
export function sseOf(response) {
  const events = [{ type: 'response.created', response: { status: 'in_progress', output: [] } }];
  (response.output ?? []).forEach((item, index) => {
    events.push({ type: 'response.output_item.added', output_index: index, item });
    for (const part of item.content ?? []) {
      for (const delta of (part.text ?? '').split(/(?<= )/)) {
        events.push({ type: 'response.output_text.delta', item_id: item.id, output_index: index, delta });
      }
    }
    events.push({ type: 'response.output_item.done', output_index: index, item });
  });
  events.push({ type: `response.${response.status ?? 'completed'}`, response });
  return sseText(events);
}

export const sseText = (events) =>
  ': OPENROUTER PROCESSING\n\n' + events.map((event) => `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`).join('');

export async function fakeResponsesServer(answer) {
  const received = [];
  const timers = new Set();
  const server = http.createServer((req, res) => {
    let text = '';
    req.on('data', (chunk) => (text += chunk));
    req.on('end', () => {
      const body = JSON.parse(text);
      const record = { method: req.method, url: req.url, headers: req.headers, body };
      received.push(record);
      const reply = answer(record, received.length);
      const send = () => {
        const status = reply.status ?? 200;
        if (status !== 200 || !body.stream) {
          res.writeHead(status, { 'content-type': 'application/json', connection: 'close', ...reply.headers });
          return res.end(JSON.stringify(reply.body ?? {}));
        }
        res.writeHead(status, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'close', ...reply.headers });
        const stream = sseOf(reply.body ?? {});
        if (reply.stallAfterEvents === undefined) return res.end(stream);
        res.write(stream.split('\n\n').slice(0, reply.stallAfterEvents + 1).join('\n\n') + '\n\n');
      };
      if (!reply.delayMs) return send();
      const timer = setTimeout(send, reply.delayMs);
      timers.add(timer);
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    received,
    baseUrl: `http://127.0.0.1:${server.address().port}/api/v1`,
    close() {
      for (const timer of timers) clearTimeout(timer);
      server.closeAllConnections?.();
      server.close();
    },
  };
}

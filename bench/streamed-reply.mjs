// A long reply streamed one token (four characters) a delta: one session turn against a local server that speaks
// OpenRouter's Responses API, for replies of 16 KB, 64 KB and 1 MB, with no stream reader and with one item-stream
// reader. Each turn runs in a process of its own; the figures are the median turn time and the median growth of RSS
// over the turn (its sampled peak minus the RSS just before it). `NOETIC_UPSTREAM_PKG=<installed
// upstream core>` puts upstream's figures beside ours.
//
//   node bench/streamed-reply.mjs [runs=3]
import { execFile } from 'node:child_process';
import http from 'node:http';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { median } from './common.mjs';

const SIZES = [16_000, 64_000, 1_000_000];
const DELTA = 4;
const here = path.dirname(fileURLToPath(import.meta.url));

if (process.argv[2] === '--turn') await turn(...process.argv.slice(3));
else await compare(Number(process.argv[2] ?? 3));

// ----- the server: the stream OpenRouter sends, written as it is read -------------------------------------------

// Every event carries what OpenRouter's SDK checks for (upstream's client drops an event that lacks a field).
function* events(chars) {
  const text = 'abcd'.repeat(Math.ceil(chars / 4)).slice(0, chars);
  const response = (status, output, extra = {}) => ({
    id: 'gen-bench', object: 'response', created_at: 1700000000, completed_at: null, model: 'openai/gpt-4o-mini', status, output,
    error: null, incomplete_details: null, instructions: null, metadata: {}, tools: [], tool_choice: 'auto', parallel_tool_calls: true,
    temperature: null, top_p: null, presence_penalty: null, frequency_penalty: null, max_output_tokens: null, max_tool_calls: null,
    previous_response_id: null, reasoning: null, text: { format: { type: 'text' } }, truncation: 'disabled', service_tier: 'auto',
    store: false, background: false, user: null, usage: null, ...extra,
  });
  const part = (t) => ({ type: 'output_text', text: t, annotations: [], logprobs: [] });
  const item = (status, content) => ({ type: 'message', id: 'msg_1', status, role: 'assistant', content });
  const at = { item_id: 'msg_1', output_index: 0, content_index: 0 };
  const done = item('completed', [part(text)]);
  const tokens = Math.ceil(chars / DELTA);
  yield { type: 'response.created', response: response('in_progress', []) };
  yield { type: 'response.in_progress', response: response('in_progress', []) };
  yield { type: 'response.output_item.added', output_index: 0, item: item('in_progress', []) };
  yield { type: 'response.content_part.added', ...at, part: part('') };
  for (let i = 0; i < chars; i += DELTA) yield { type: 'response.output_text.delta', ...at, delta: text.slice(i, i + DELTA), logprobs: [] };
  yield { type: 'response.output_text.done', ...at, text, logprobs: [] };
  yield { type: 'response.content_part.done', ...at, part: part(text) };
  yield { type: 'response.output_item.done', output_index: 0, item: done };
  const usage = {
    input_tokens: 8, input_tokens_details: { cached_tokens: 0 }, output_tokens: tokens, output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: 8 + tokens, cost: 0, is_byok: false,
    cost_details: { upstream_inference_cost: null, upstream_inference_input_cost: 0, upstream_inference_output_cost: 0 },
  };
  yield { type: 'response.completed', response: response('completed', [done], { completed_at: 1700000001, usage }) };
}

async function serve(chars) {
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const source = events(chars);
      let sequence = 0;
      // Written in chunks of about 64 KB, each when the socket has taken the last.
      const pump = () => {
        let chunk = '';
        for (let next = source.next(); ; next = source.next()) {
          if (next.done) return res.end(`${chunk}data: [DONE]\n\n`);
          chunk += `event: ${next.value.type}\ndata: ${JSON.stringify({ ...next.value, sequence_number: sequence++ })}\n\n`;
          if (chunk.length >= 65_536) break;
        }
        if (res.write(chunk)) setImmediate(pump);
        else res.once('drain', pump);
      };
      pump();
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}

// ----- one turn, in a process of its own ------------------------------------------------------------------------

async function turn(pkg, baseUrl, readersText) {
  const { AgentHarness, step, tool } = await import(pkg);
  // Each package with the zod it resolves itself.
  const { z } = await import(pathToFileURL(createRequire(fileURLToPath(pkg)).resolve('zod')).href);
  // Upstream's client always calls openrouter.ai; its requests go to the local server instead.
  const fetch = globalThis.fetch;
  globalThis.fetch = (input, init) => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    if (!url.startsWith('https://openrouter.ai/api/v1')) return fetch(input, init);
    const local = baseUrl + url.slice('https://openrouter.ai/api/v1'.length);
    return input instanceof Request ? fetch(new Request(local, input), init) : fetch(local, init);
  };
  // A tool the model never calls: upstream forwards a provider's events to a session's streams only for a step
  // with tools. Both packages run the same program.
  const noop = tool({ name: 'noop', description: 'Does nothing.', input: z.object({}), output: z.string(), execute: async () => 'ok' });
  const agent = step.llm({ id: 'talk', model: 'openai/gpt-4o-mini', tools: [noop] });
  const harness = new AgentHarness({ name: 'bench', params: {}, initialStep: agent, llm: { provider: 'openrouter', apiKey: 'bench', baseUrl } });
  const readers = Array.from({ length: Number(readersText) }, async () => {
    let snapshots = 0;
    for await (const item of harness.getItemStream({ threadId: 't' })) {
      snapshots++;
      if (item.isComplete && item.type === 'message') break;
    }
    return snapshots;
  });
  globalThis.gc?.();
  const rssBefore = process.memoryUsage().rss;
  // Sampled: a spawned process's maxRSS starts from its parent's. Ours works natively, so the sampler runs while it
  // does; upstream's works in JS, between awaits, so the sampler still gets turns.
  let peak = rssBefore;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 1);
  const started = performance.now();
  await harness.execute('hi', { threadId: 't' });
  const { text } = await harness.getAgentResponse({ threadId: 't' });
  const snapshots = await Promise.all(readers);
  const ms = performance.now() - started;
  clearInterval(sampler);
  peak = Math.max(peak, process.memoryUsage().rss);
  console.log(JSON.stringify({ ms, rssGrowthMB: (peak - rssBefore) / 2 ** 20, chars: text.length, snapshots }));
  process.exit(0);
}

// ----- the comparison -------------------------------------------------------------------------------------------

async function compare(runs) {
  const ours = pathToFileURL(path.join(here, '../js/index.mjs')).href;
  const upstreamDir = process.env.NOETIC_UPSTREAM_PKG;
  const packages = [['ours', ours], ...(upstreamDir ? [['upstream', pathToFileURL(path.join(upstreamDir, 'dist/index.js')).href]] : [])];
  console.log('streamed reply, one token (4 chars) a delta; median of %d turns, each in its own process', runs);
  for (const chars of SIZES) {
    const server = await serve(chars);
    const baseUrl = `http://127.0.0.1:${server.address().port}/api/v1`;
    for (const readers of [0, 1]) {
      const row = {};
      for (const [name, pkg] of packages) {
        const results = [];
        for (let i = 0; i < runs; i++) {
          const out = await runTurn(pkg, baseUrl, readers);
          if (out.chars !== chars || out.snapshots.some((n) => n < 2)) throw new Error(`${name}: a wrong turn: ${JSON.stringify(out)}`);
          results.push(out);
        }
        row[name] = { ms: median(results.map((r) => r.ms)), mb: median(results.map((r) => r.rssGrowthMB)), snapshots: results[0].snapshots };
      }
      const label = `${(chars / 1000).toFixed(0).padStart(5)} KB, ${String(chars / DELTA).padStart(6)} deltas, ${readers} reader${readers === 1 ? ' ' : 's'}`;
      const cell = (r) => `${r.ms.toFixed(0).padStart(6)} ms ${r.mb.toFixed(1).padStart(7)} MB`;
      const ratio = row.upstream ? `   upstream ${cell(row.upstream)}   time ×${(row.upstream.ms / row.ours.ms).toFixed(1)}  RSS ×${(row.upstream.mb / Math.max(row.ours.mb, 0.1)).toFixed(1)}` : '';
      console.log(`${label}: ours ${cell(row.ours)}${ratio}`);
    }
    server.close();
  }
}

// The server runs in this process, so the child's event loop must stay free while it waits: spawned async.
function runTurn(pkg, baseUrl, readers) {
  const args = ['--expose-gc', fileURLToPath(import.meta.url), '--turn', pkg, baseUrl, String(readers)];
  return new Promise((resolve, reject) => {
    execFile(process.execPath, args, { maxBuffer: 1 << 20 }, (error, stdout) => {
      if (error) return reject(error);
      resolve(JSON.parse(stdout.trim().split('\n').pop()));
    });
  });
}

'use strict';
// @noetic-tools/core/inspector: a local page showing what each model call of a harness saw, served over node:http
// (Node and Bun both have it); read-only, on 127.0.0.1 by default, every request carrying the URL's random token.
const http = require('node:http');
const { readFileSync } = require('node:fs');
const { join } = require('node:path');
const native = require('./native.cjs');
const { NoeticConfigError, callNative } = require('./errors.cjs');
const { sketch } = require('./sketch.cjs');
const { withGivenThreadIds } = require('./thread-ids.cjs');

// So that proxies and browsers keep an open feed open.
const HEARTBEAT_MS = 15_000;
// New calls go out at most this often, in one event: a busy agent costs one write per interval, not one per call.
const FEED_MS = 100;
const PAGE_FILES = join(__dirname, 'inspector');

function fail(code, message, hint) {
  return new NoeticConfigError({ code, message, hint });
}

function checkOptions(harness, opts) {
  if (harness?._runtime?.native === undefined) {
    throw fail('INVALID_INSPECTOR_TARGET', 'startInspector(harness, options): harness is not an AgentHarness.', 'Pass the AgentHarness whose model calls you want to see.');
  }
  return callNative(() => native.inspectorOptions(sketch(opts, [])));
}

// Script and style inlined, so that the token never has to travel in a subresource's URL.
let page;
function pageHtml() {
  page ??= readFileSync(join(PAGE_FILES, 'index.html'), 'utf8')
    .replace('/* style.css */', () => readFileSync(join(PAGE_FILES, 'style.css'), 'utf8'))
    .replace('/* app.js */', () => readFileSync(join(PAGE_FILES, 'app.js'), 'utf8'));
  return page;
}

const HEADERS = {
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  // The token is in the page's URL: it must not leave in a Referer.
  'referrer-policy': 'no-referrer',
  'cross-origin-resource-policy': 'same-origin',
};

class Inspector {
  constructor(harness, o) {
    this.harness = harness;
    this.native = harness._runtime.native;
    this.feeds = new Set();
    this.heartbeat = undefined;
    this.options = o;
    this.server = http.createServer((req, res) => this.serve(req, res));
  }

  async listen() {
    const { host, port } = this.options;
    await new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, host, () => {
        this.server.off('error', reject);
        resolve();
      });
    });
    const bound = this.server.address();
    // Which requests are answered is the runtime's to say (inspect/gate.rs), with the token it made.
    this.gate = new native.InspectorGate(bound.address, bound.port);
    this.origin = this.gate.origin;
    this.url = this.gate.url;
  }

  refuse(req, url) {
    const { method, headers } = req;
    return this.gate.refusal(method ?? '', String(headers.host ?? ''), headers.origin, headers['sec-fetch-site'], url.searchParams.get('token') ?? '');
  }

  serve(req, res) {
    let url;
    try {
      url = new URL(req.url, 'http://inspector');
    } catch {
      return this.send(res, 400, 'text/plain', 'Bad request.');
    }
    try {
      const refused = this.refuse(req, url);
      if (refused) return this.send(res, refused[0], 'text/plain', refused[1]);
      switch (url.pathname) {
        case '/':
          return this.send(res, 200, 'text/html', pageHtml(), {
            'content-security-policy': "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
          });
        case '/api/snapshot':
          return this.sendJson(res, this.snapshot());
        case '/api/call': {
          const text = this.native.inspectorCall(Number(url.searchParams.get('id')));
          return text == null ? this.send(res, 404, 'text/plain', 'That call is no longer kept.') : this.sendJson(res, withGivenThreadIds(text));
        }
        case '/api/state':
          return this.layerStates(url.searchParams.get('thread') ?? '', url.searchParams.get('resource')).then(
            (states) => this.sendJson(res, JSON.stringify(states)),
            (e) => this.send(res, 500, 'text/plain', `Reading the layers' states failed: ${e?.message ?? e}`),
          );
        case '/api/events':
          return this.openFeed(req, res);
        default:
          return this.send(res, 404, 'text/plain', 'Not found.');
      }
    } catch (e) {
      return this.send(res, 500, 'text/plain', `The inspector failed: ${e?.message ?? e}`);
    }
  }

  send(res, status, type, body, headers = {}) {
    res.writeHead(status, { ...HEADERS, 'content-type': `${type}; charset=utf-8`, ...headers });
    res.end(body);
  }

  sendJson(res, text) {
    this.send(res, 200, 'application/json', text);
  }

  // With the layers' names, which the native side does not keep.
  snapshot() {
    const names = new Map((this.harness._layers ?? []).map((l) => [l.id, l.name ?? l.id]));
    const layers = JSON.parse(this.native.inspectorLayers('')).map(({ id, slot, scope, recallMode }) => ({ id, name: names.get(id), slot, scope, recallMode }));
    const head = JSON.stringify({ harness: this.harness.config?.name ?? '', layers });
    return `${head.slice(0, -1)},"recorder":${withGivenThreadIds(this.native.inspectorSnapshot())}}`;
  }

  // What the next turn's init reads; ids well-formed as the runtime's keys are (a URL cannot carry a lone surrogate).
  async layerStates(given, givenResource) {
    const storage = this.harness.config.storage;
    const layers = JSON.parse(this.native.inspectorLayers(given.toWellFormed(), givenResource?.toWellFormed()));
    const out = [];
    for (const { id, scope, scopeKey, stateKey } of layers) {
      const state = stateKey === null ? undefined : await storage.get(stateKey);
      out.push({ id, scope, scopeKey, state: state ?? null });
    }
    return out;
  }

  openFeed(req, res) {
    res.writeHead(200, { ...HEADERS, 'content-type': 'text/event-stream; charset=utf-8', connection: 'keep-alive' });
    res.write(': connected\n\n');
    this.feeds.add(res);
    if (this.feeds.size === 1) this.native.inspectorListen(true);
    this.heartbeat ??= setInterval(() => {
      for (const feed of this.feeds) feed.write(': alive\n\n');
    }, HEARTBEAT_MS);
    this.heartbeat.unref?.();
    req.on('close', () => {
      // A feed close() already ended is not ours to stop (a new one may be open by now).
      if (!this.feeds.delete(res) || this.feeds.size > 0) return;
      this.native.inspectorListen(false);
      if (this.heartbeat) clearInterval(this.heartbeat);
      this.heartbeat = undefined;
    });
  }

  // The runtime tells only while a page listens, and again only once the feed has been taken.
  recorded() {
    if (this.feeds.size > 0) this.sending ??= setTimeout(() => this.sendCalls(), FEED_MS);
  }

  sendCalls() {
    this.sending = undefined;
    if (this.feeds.size === 0) return;
    const calls = withGivenThreadIds(this.native.inspectorFeed());
    const event = `event: calls\ndata: ${calls}\n\n`;
    for (const feed of this.feeds) feed.write(event);
  }

  async close() {
    if (this.harness._runtime.inspector === this) this.harness._runtime.inspector = undefined;
    this.native.inspectorOpen(false, 1, 1);
    if (this.heartbeat) clearInterval(this.heartbeat);
    if (this.sending) clearTimeout(this.sending);
    for (const feed of this.feeds) feed.end();
    this.feeds.clear();
    this.server.closeAllConnections?.();
    await new Promise((resolve) => this.server.close(() => resolve()));
  }
}

async function startInspector(harness, opts) {
  const o = checkOptions(harness, opts);
  const runtime = harness._runtime;
  if (runtime.inspector) {
    throw fail('INSPECTOR_ALREADY_OPEN', `An inspector is already open for this harness at ${runtime.inspector.origin}.`, 'Close it first (await inspector.close()), or use the URL it gave.');
  }
  const inspector = new Inspector(harness, o);
  runtime.inspector = inspector;
  try {
    await inspector.listen();
  } catch (e) {
    runtime.inspector = undefined;
    throw fail('INSPECTOR_LISTEN_FAILED', `startInspector could not listen on ${o.host}:${o.port}: ${e?.message ?? e}`, 'Pick another port, or 0 for any free one.');
  }
  inspector.native.inspectorOpen(true, o.turnsPerThread, o.threads);
  let closed;
  return {
    url: inspector.url,
    close: () => (closed ??= inspector.close()),
  };
}

module.exports = { startInspector };

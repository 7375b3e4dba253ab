'use strict';
// @noetic-tools/core/otel: a trace exporter that hands the harness's spans to the OpenTelemetry tracer provider the
// user registered (DECISIONS O1, O2). The runtime names, maps and orders them; this starts each with its parent and times.
const { OtelSpans } = require('./native.cjs');
const { checkArgs } = require('./sketch.cjs');
const { parseJson } = require('./json.cjs');
const { version } = require('../package.json');

function createOtelTraceExporter(options = {}) {
  let api; // An optional peer dependency: when it is missing, the runtime's check says what to install.
  try { api = require('@opentelemetry/api'); } catch {}
  checkArgs('createOtelTraceExporter', [options, api !== undefined]);
  const tracer = () => (options.tracerProvider ?? api.trace.getTracerProvider()).getTracer(options.tracerName ?? '@noetic-tools/core', version);
  const waiting = new OtelSpans(options.captureContent === true);
  return {
    // Read once by each harness as it is built: false (no span recorded) while the tracer is the API's proxy.
    get tracing() {
      return tracer() instanceof api.ProxyTracer ? false : options.captureContent === true ? 'content' : true;
    },
    async export(spans) {
      const plain = JSON.stringify(spans, (_key, value) => (value instanceof Map ? Object.fromEntries(value) : value));
      const started = new Map();
      const otel = tracer();
      for (const s of parseJson(waiting.push(plain))) {
        const parent = s.parent === null ? api.ROOT_CONTEXT : started.get(s.parent);
        const span = otel.startSpan(s.name, { kind: s.kind, startTime: s.startTime, attributes: s.attributes }, parent);
        for (const event of s.events) span.addEvent(event.name, event.attributes, event.time);
        if (s.status) span.setStatus(s.status);
        span.end(s.endTime);
        started.set(s.id, api.trace.setSpan(api.ROOT_CONTEXT, span));
      }
    },
  };
}

module.exports = { createOtelTraceExporter };

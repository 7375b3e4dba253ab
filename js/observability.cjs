'use strict';
// Spans and trace exporters (upstream's), and the memory spans recorded natively for hook calls (DECISIONS D14, D22).
const { randomUUID } = require('node:crypto');

class SpanImpl {
  // `spanId`, beyond upstream's parameters: a span whose id is known already (spanWithIds) makes no id of its own.
  constructor(name, parent = null, traceId, spanId) {
    this.name = name;
    this.traceId = traceId ?? parent?.traceId ?? randomUUID();
    this.spanId = spanId ?? randomUUID();
    this.parentSpanId = parent?.spanId ?? null;
    this.startTime = Date.now();
    this.endTime = undefined;
    this.attributes = new Map();
    this.events = [];
  }

  setAttribute(key, value) {
    this.attributes.set(key, value);
  }

  addEvent(name, attributes) {
    this.events.push({ name, timestamp: Date.now(), attributes });
  }

  end() {
    this.endTime = Date.now();
  }

  get duration() {
    return (this.endTime ?? Date.now()) - this.startTime;
  }
}

// Ids and nothing recorded, as upstream's.
class NoopSpan {
  constructor() {
    this.traceId = randomUUID();
    this.spanId = randomUUID();
    this.parentSpanId = null;
  }
  setAttribute() {}
  addEvent() {}
  end() {}
}

class NoopExporter {
  async export(_spans) {}
}

class InMemoryExporter {
  constructor() {
    this.spans = [];
  }

  async export(spans) {
    for (const span of spans) if (span instanceof SpanImpl) this.spans.push(span);
  }

  clear() {
    this.spans.length = 0;
  }

  getSpansByName(name) {
    return this.spans.filter((s) => s.name === name);
  }

  getChildSpans(parentSpanId) {
    return this.spans.filter((s) => s.parentSpanId === parentSpanId);
  }

  getTraceTree(traceId) {
    return this.spans.filter((s) => s.traceId === traceId);
  }
}

const GenAI = Object.freeze({
  SYSTEM: 'gen_ai.system',
  REQUEST_MODEL: 'gen_ai.request.model',
  USAGE_INPUT_TOKENS: 'gen_ai.usage.input_tokens',
  USAGE_OUTPUT_TOKENS: 'gen_ai.usage.output_tokens',
  COST: 'gen_ai.cost',
});

const ToolAttr = Object.freeze({
  NAME: 'tool.name',
  NEEDS_APPROVAL: 'tool.needs_approval',
});

// An exporter may say it records nothing (`tracing: false`) or wants prompts and completions too (`'content'`, O1).
const isTracing = (exporter) => exporter != null && !(exporter instanceof NoopExporter) && (exporter.tracing ?? true);

function spanWithIds(name, { traceId, spanId, parentSpanId }) {
  const span = new SpanImpl(name, null, traceId, spanId);
  span.parentSpanId = parentSpanId;
  return span;
}

// A span the runtime timed (an execution, a step, a model or tool call: O1, O2), with its attributes named already;
// an execution's carries what user code gave `ctx.span` by then (`own`: its context's span, of the same id).
function runSpan(record, own) {
  const attributes = new Map([...(own?.attributes ?? []), ...Object.entries(record.attributes)]);
  return Object.assign(spanWithIds(record.name, record), { startTime: record.startTime, endTime: record.endTime, attributes, events: [...(own?.events ?? [])] });
}

// The figures as attributes too, for exporters that read only those.
function memorySpan(record, own) {
  if (record.spanId !== undefined) return runSpan(record, own);
  const span = spanWithIds(`memory.${record.hook}`, { traceId: record.traceId, spanId: randomUUID(), parentSpanId: record.context });
  span.startTime = record.startTime;
  span.endTime = record.startTime + record.durationMs;
  const memory = { layerId: record.layerId, hook: record.hook, durationMs: record.durationMs, status: record.status };
  span.setAttribute('memory.layer_id', record.layerId);
  span.setAttribute('memory.hook', record.hook);
  span.setAttribute('memory.status', record.status);
  span.setAttribute('memory.duration_ms', record.durationMs);
  if (record.budget) {
    memory.budget = { ...record.budget };
    span.setAttribute('memory.budget.allocated', record.budget.allocated);
    span.setAttribute('memory.budget.used', record.budget.used);
    span.setAttribute('memory.budget.yielded', record.budget.yielded);
  }
  if (record.itemCount !== undefined) {
    memory.itemCount = record.itemCount;
    span.setAttribute('memory.item_count', record.itemCount);
  }
  if (record.error !== undefined) {
    memory.error = { message: record.error };
    span.setAttribute('error.message', record.error);
  }
  for (const [key, value] of Object.entries(record.attributes ?? {})) span.setAttribute(key, value);
  span.memory = memory;
  return span;
}

module.exports = { SpanImpl, NoopSpan, NoopExporter, InMemoryExporter, GenAI, ToolAttr, isTracing, spanWithIds, memorySpan };

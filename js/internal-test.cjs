'use strict';
// `@noetic-tools/core/internal/test`: runtime pieces upstream's own tests build directly. The channel store is
// the harness's own; SpanImpl is the plain span those tests hand to contexts.
const { randomUUID } = require('node:crypto');
const { ChannelStore } = require('./channels.cjs');

class SpanImpl {
  constructor(name, parent = null, traceId) {
    this.name = name;
    this.traceId = traceId ?? parent?.traceId ?? randomUUID();
    this.spanId = randomUUID();
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

module.exports = { ChannelStore, SpanImpl };

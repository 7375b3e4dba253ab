// `/internal/test`'s hand-built contexts type as contexts, with writable counters.
import { execute, step, type Context } from '@noetic-tools/core';
import { ChannelStore, ContextImpl, ItemLogImpl } from '@noetic-tools/core/internal/test';

const ctx = new ContextImpl({ harness: { callModel: async () => ({ items: [] }) }, channelStore: new ChannelStore() });
ctx.cost = 1;
ctx.stepCount = 2;
ctx.tokens.input = 3;
const asContext: Context = ctx;
const child = new ContextImpl({ harness: {}, parent: asContext });
const depth: number = child.depth;
const ran: Promise<number> = execute(step.run({ id: 'n', execute: async (s: string) => s.length }), 'abc', ctx);
const log = new ItemLogImpl();
log.append({ type: 'message', role: 'user', id: 'm', status: 'completed', content: [{ type: 'input_text', text: 'hi' }] });
// @ts-expect-error the public Context keeps its counters read-only
asContext.cost = 2;
void [depth, ran, ctx.checkpoint()];

// Traces: the exporters, the context's span and the hook spans' records are typed.
import { AgentHarness as TracedHarness, InMemoryExporter, GenAI, ToolAttr, type MemoryTraceSpan } from '@noetic-tools/core';
const traceExporter = new InMemoryExporter();
const traced = new TracedHarness({ name: 'traced', params: {}, traceExporter });
const rootSpan = traced.createSpan('root', null);
rootSpan.setAttribute(GenAI.REQUEST_MODEL, 'm');
rootSpan.setAttribute(ToolAttr.NAME, 'search');
const hookRecords: Array<MemoryTraceSpan | undefined> = traceExporter.getTraceTree(rootSpan.traceId).map((s) => s.memory);
void hookRecords;

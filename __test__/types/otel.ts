// The OpenTelemetry subpath's types: what createOtelTraceExporter takes, and that it is a trace exporter.
import { AgentHarness } from '@noetic-tools/core';
import { createOtelTraceExporter, type OtelTraceExporter, type OtelTraceExporterOptions } from '@noetic-tools/core/otel';

const options: OtelTraceExporterOptions = { captureContent: true, tracerName: 'shop', tracerProvider: { getTracer: () => ({}) } };
const exporter: OtelTraceExporter = createOtelTraceExporter(options);
const tracing: boolean | 'content' = exporter.tracing;
new AgentHarness({ name: 'traced', params: {}, traceExporter: createOtelTraceExporter() });
// @ts-expect-error captureContent is a boolean
createOtelTraceExporter({ captureContent: 'yes' });
export { tracing };

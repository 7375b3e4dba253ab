// -----------------------------------------------------------------------------
// @noetic-tools/core/otel: the harness's spans as OpenTelemetry spans, sent to the tracer provider you registered.
// Needs `@opentelemetry/api` (an optional peer dependency).
// -----------------------------------------------------------------------------

import type { TraceExporter } from '../index.js';

export interface OtelTraceExporterOptions {
  /**
   * Put prompts and completions on model-call spans (`gen_ai.system_instructions`, `gen_ai.input.messages`,
   * `gen_ai.output.messages`). Off by default, as the GenAI semantic conventions advise: they may hold personal data.
   */
  captureContent?: boolean;
  /** The provider to use instead of the globally registered one (`trace.getTracerProvider()`). */
  tracerProvider?: { getTracer(name: string, version?: string): unknown };
  /** The tracer's name (default `@noetic-tools/core`). */
  tracerName?: string;
}

export interface OtelTraceExporter extends TraceExporter {
  /**
   * Read by a harness once, when it is built: false while no tracer provider is registered (the harness then records
   * no spans at all), `'content'` when prompts and completions are captured, true otherwise.
   */
  readonly tracing: boolean | 'content';
}

/**
 * A trace exporter for the harness's `traceExporter` option: each execution, step, model call, tool call and
 * memory-hook call becomes an OpenTelemetry span, named and attributed by the GenAI semantic conventions where they
 * apply (`noetic.*` otherwise). Register your tracer provider before building the harness.
 * @throws NoeticConfigError `OTEL_API_MISSING` when `@opentelemetry/api` cannot be loaded, `INVALID_OTEL_OPTIONS`
 * for options it cannot use.
 */
export declare function createOtelTraceExporter(options?: OtelTraceExporterOptions): OtelTraceExporter;

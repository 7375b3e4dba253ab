// ESM entry of @noetic-tools/core/otel.
import otel from './otel.cjs';

export const { createOtelTraceExporter } = otel;

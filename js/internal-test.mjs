// ESM entry of `@noetic-tools/core/internal/test`: the same objects as the CommonJS one.
import internal from './internal-test.cjs';

export const { ChannelStore, ContextImpl, ItemLogImpl, SpanImpl } = internal;

// `@noetic-tools/core/internal/test`: runtime pieces for tests that build them directly.
import type { Channel, ChannelHandle, ExternalChannel } from '../index.js';

/** The harness's channel store: value, queue (back-pressured) and topic channels, keyed by name. */
export declare class ChannelStore {
  constructor();
  send<T>(channel: Channel<T>, value: T, opts?: { timeout?: number; signal?: AbortSignal }): Promise<void>;
  recv<T>(channel: Channel<T>, timeout?: number, signal?: AbortSignal): Promise<T>;
  tryRecv<T>(channel: Channel<T>): T | null;
  /** A one-shot callback on the next send; returns the unsubscribe. */
  subscribeWake<T>(channel: Channel<T>, callback: () => void): () => void;
  sendExternal<T>(channel: Channel<T>, value: T): void;
  getHandle<T>(channel: ExternalChannel<T>, executionId: string): ChannelHandle<T>;
  closeExecution(executionId: string): void;
}

/** A trace span: attributes, events, start and end. */
export declare class SpanImpl {
  constructor(name: string, parent?: SpanImpl | null, traceId?: string);
  readonly name: string;
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId: string | null;
  readonly startTime: number;
  endTime: number | undefined;
  readonly attributes: Map<string, unknown>;
  readonly events: Array<{ name: string; timestamp: number; attributes?: Record<string, unknown> }>;
  setAttribute(key: string, value: unknown): void;
  addEvent(name: string, attributes?: Record<string, unknown>): void;
  end(): void;
  readonly duration: number;
}

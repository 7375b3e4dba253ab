// `@noetic-tools/core/internal/test`: runtime pieces for tests that build them directly.
import type {
  Channel,
  ChannelHandle,
  Context,
  CwdState,
  ExternalChannel,
  Item,
  ItemLog,
  ItemSchemaRegistry,
  MemoryLayer,
  Span,
  StepMeta,
  TokenUsage,
  Tool,
} from '../index.js';

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

/** What upstream's ContextImpl is built from. `harness` is an AgentHarness or a stand-in with the members steps use. */
export interface ContextImplOptions {
  harness: object;
  parent?: Context;
  items?: Item[];
  state?: unknown;
  threadId?: string;
  resourceId?: string;
  span?: Span;
  channelStore?: ChannelStore;
  checkpointFn?: () => Promise<void>;
  layers?: MemoryLayer[];
  unifiedTools?: ReadonlyArray<Tool>;
  itemSchemas?: ItemSchemaRegistry;
  cwdState?: CwdState;
  id?: string;
}

/** A context built by hand, as upstream's tests do: `execute(step, input, ctx)` runs steps in it. */
export declare class ContextImpl implements Context {
  constructor(opts: ContextImplOptions);
  readonly id: string;
  stepCount: number;
  tokens: TokenUsage;
  cost: number;
  readonly elapsed: number;
  state: unknown;
  readonly parent: Context | null;
  readonly depth: number;
  readonly span: Span;
  readonly threadId: string;
  readonly resourceId?: string;
  readonly itemLog: ItemLog;
  lastStepMeta: StepMeta | null;
  readonly lastLayerUsage?: Context['lastLayerUsage'];
  readonly harness: Context['harness'];
  readonly fs: Context['fs'];
  readonly shell: Context['shell'];
  readonly subprocess: Context['subprocess'];
  cwdState: CwdState;
  readonly layers?: MemoryLayer[];
  readonly memory: Context['memory'];
  unifiedTools?: ReadonlyArray<Tool>;
  readonly itemSchemas?: ItemSchemaRegistry;
  recv<T>(channel: Channel<T>, opts?: { timeout?: number }): Promise<T>;
  send<T>(channel: Channel<T>, value: T): Promise<void>;
  tryRecv<T>(channel: Channel<T>): T | null;
  /** Calls the `checkpointFn` it was given, if any. */
  checkpoint(): Promise<void>;
  complete<T>(value: T): void;
  readonly completed: boolean;
  readonly completionValue: unknown;
  readonly aborted: boolean;
  readonly abortReason?: string;
  abort(reason?: string): void;
}

/** An item log of its own: appends are checked against `itemSchemas` (the default registry when omitted). */
export declare class ItemLogImpl implements ItemLog {
  constructor(itemSchemas?: ItemSchemaRegistry);
  readonly items: ReadonlyArray<Item>;
  append(item: Item): void;
}

// Programs import upstream's `@noetic-tools/types` beside this package, so its types and ours must fit each other both
// ways. Upstream's types package is not on npm and CI has no copy of it, so this file restates, in its own words, the
// declarations of upstream's where ours used to differ (most come from the OpenRouter SDK that upstream's item types
// alias), and checks ours against them both ways. The full comparison, every shared name against upstream's own
// declarations, is ./upstream/mix.ts, run by scripts/check-upstream-types.mjs where a checkout of upstream exists
// (DECISIONS X1).

import type {
  ContextHarness,
  DetachedHandle,
  FileSearchItem,
  FunctionCallItem,
  FunctionCallOutputItem,
  HarnessResponse,
  ImageGenerationItem,
  InputMessageItem,
  Item,
  LayerHandle,
  LedgerEntryKind,
  LLMResponse,
  MemoryConfig,
  MemoryHooks,
  MemoryLayer,
  MemoryTraceSpan,
  MessageItem,
  OutputTextPart,
  ReasoningItem,
  RecallResult,
  ReturnParams,
  ReturnResult,
  ServerToolItem,
  SteeringAction,
  StoreParams,
  StoreResult,
  CompleteParams,
  SubprocessStopResult,
  ToolExecutionContext,
  WebSearchItem,
} from '@noetic-tools/core';
import { AgentHarness, memory, workingMemory } from '@noetic-tools/core';

/** Compiles only when `A` (ours) is assignable to `B` (upstream's) and `B` to `A`; each way reports its own error. */
declare function both<A, B>(checks: { toUp: (ours: A) => B; toOurs: (up: B) => A }): void;
/** Compiles only when `A` is assignable to `B`. */
declare function fits<A, B>(toB: (a: A) => B): void;
const id = <T>(x: T): T => x;

// ----- the SDK's shapes, as upstream's item types carry them -----------------------
// The SDK's enums are open: the values it knows, or any other string marked with a brand only the SDK can name.
declare const sdkBrand: unique symbol;
type SdkOpen<Known extends string> = Known | (string & { readonly [sdkBrand]: 'unrecognized' });
// A union member the SDK did not recognize keeps its raw JSON beside a fixed discriminant.
type SdkUnknown = { type: 'UNKNOWN' } & { raw: unknown; isUnknown: true };

type UpAnnotation =
  | { type: 'file_citation'; fileId: string; filename: string; index: number }
  | {
      type: 'url_citation';
      url: string;
      title: string;
      startIndex: number;
      endIndex: number;
      content?: string | undefined;
    }
  | { type: 'file_path'; fileId: string; index: number }
  | SdkUnknown;
type UpLogprob = { token: string; logprob: number; bytes: number[] };
type UpOutputText = {
  type: 'output_text';
  text: string;
  annotations?: UpAnnotation[] | undefined;
  logprobs?: Array<UpLogprob & { topLogprobs: UpLogprob[] }> | undefined;
};
type UpMessage = {
  id: string;
  type: 'message';
  role: 'assistant';
  status?: 'completed' | 'incomplete' | 'in_progress' | undefined;
  phase?: 'commentary' | 'final_answer' | null | undefined;
  content: Array<UpOutputText | { type: 'refusal'; refusal: string } | SdkUnknown>;
};
type UpFunctionCall = {
  type: 'function_call';
  id?: string | undefined;
  callId: string;
  name: string;
  arguments: string;
  namespace?: string | undefined;
  status?: 'completed' | 'incomplete' | 'in_progress' | undefined;
};
type UpReasoning = {
  type: 'reasoning';
  id: string;
  summary: Array<{ type: 'summary_text'; text: string }>;
  content?: Array<{ type: 'reasoning_text'; text: string }> | null | undefined;
  encryptedContent?: string | null | undefined;
  signature?: string | null | undefined;
  status?: 'completed' | 'incomplete' | 'in_progress' | undefined;
  format?: SdkOpen<'unknown' | 'openai-responses-v1' | 'anthropic-claude-v1'> | null | undefined;
};
type WebSearchStatus = SdkOpen<'completed' | 'searching' | 'in_progress' | 'failed'>;
type UpWebSearch = {
  type: 'web_search_call';
  id: string;
  status: WebSearchStatus;
  action?:
    | {
        type: 'search';
        query: string;
        queries?: string[] | undefined;
        sources?: Array<{ type: 'url'; url: string }> | undefined;
      }
    | { type: 'open_page'; url?: string | null | undefined }
    | { type: 'find_in_page'; pattern: string; url: string }
    | SdkUnknown
    | undefined;
};
// Upstream's file search item takes the SDK's web search status: no 'incomplete', any other string admitted.
type UpFileSearch = { type: 'file_search_call'; id: string; queries: string[]; status: WebSearchStatus };
type UpImageGeneration = {
  type: 'image_generation_call';
  id: string;
  result?: string | null | undefined;
  status: SdkOpen<'in_progress' | 'completed' | 'generating' | 'failed'>;
};
// The framework's own items (input messages, tool outputs) and server tool items are declared alike in both packages.
type UpItem =
  | UpMessage
  | UpFunctionCall
  | UpReasoning
  | UpWebSearch
  | UpFileSearch
  | UpImageGeneration
  | ServerToolItem
  | InputMessageItem
  | FunctionCallOutputItem;

both<MessageItem, UpMessage>({ toUp: id, toOurs: id });
both<OutputTextPart, UpOutputText>({ toUp: id, toOurs: id });
both<FunctionCallItem, UpFunctionCall>({ toUp: id, toOurs: id });
both<ReasoningItem, UpReasoning>({ toUp: id, toOurs: id });
both<WebSearchItem, UpWebSearch>({ toUp: id, toOurs: id });
both<FileSearchItem, UpFileSearch>({ toUp: id, toOurs: id });
both<ImageGenerationItem, UpImageGeneration>({ toUp: id, toOurs: id });
both<Item, UpItem>({ toUp: id, toOurs: id });

// Where items pass through this package's composite types (tools, contexts, layers, responses), they are `Item`.
both<ToolExecutionContext['assembledView'][number], UpItem>({ toUp: id, toOurs: id });
both<Awaited<ReturnType<ContextHarness['previewRequestItems']>>[number], UpItem>({ toUp: id, toOurs: id });
both<RecallResult['items'][number], UpItem>({ toUp: id, toOurs: id });
both<HarnessResponse['items'][number], UpItem>({ toUp: id, toOurs: id });
both<LLMResponse['items'][number], UpItem>({ toUp: id, toOurs: id });

// ----- the rest of upstream's own declarations where ours differed -----------------
// `@openrouter/agent`'s TurnContext, on upstream's ToolExecutionContext.
type UpTurnContext = {
  numberOfTurns: number;
  toolCall?: {
    type: 'function_call';
    id: string;
    callId: string;
    name: string;
    arguments: string;
    namespace?: string | undefined;
    status?: SdkOpen<'in_progress' | 'completed' | 'incomplete'> | undefined;
  };
  turnRequest?: { input: unknown; model?: string; stream?: boolean; [key: string]: unknown };
};
both<ToolExecutionContext['turnContext'], UpTurnContext | undefined>({ toUp: id, toOurs: id });

// Upstream declares its SteeringAction and LedgerEntryKind constants with `string` members, so both types are `string`.
both<SteeringAction, string>({ toUp: id, toOurs: id });
both<LedgerEntryKind, string>({ toUp: id, toOurs: id });

// Upstream's detached handle has no done, metadata or stop.
type UpDetachedHandle<O> = {
  readonly id: string;
  readonly status: 'running' | 'completed' | 'failed';
  readonly result: O | undefined;
  readonly error: string | undefined;
  await(timeout?: number): Promise<O>;
};
both<DetachedHandle<number>, UpDetachedHandle<number>>({ toUp: id, toOurs: id });
// This package's own handles have them.
declare const harness: AgentHarness;
const handle = harness.detachedSpawn({ kind: 'run', id: 'x', execute: async (n: number) => n }, 1, harness.createContext());
const stopped: Promise<SubprocessStopResult> = handle.stop('why');
const done: boolean = handle.done;
void [stopped, done];

// Upstream's store, onReturn and onComplete hooks resolve to a result or `undefined` (not `void`).
type Sx = { n: number };
both<
  MemoryHooks<Sx>['store'],
  ((params: StoreParams<Sx>) => Promise<StoreResult<Sx> | undefined>) | undefined
>({ toUp: id, toOurs: id });
both<
  MemoryHooks<Sx>['onReturn'],
  ((params: ReturnParams<Sx>) => Promise<ReturnResult<Sx> | undefined>) | undefined
>({ toUp: id, toOurs: id });
both<
  MemoryHooks<Sx>['onComplete'],
  ((params: CompleteParams<Sx>) => Promise<undefined | { state: Sx }>) | undefined
>({ toUp: id, toOurs: id });

// Upstream's default MemoryConfig: its layers (typed `MemoryLayer`, whose `provides` names no entry) provide nothing.
type UpDefaultMemoryConfig = {
  readonly layers: readonly MemoryLayer[];
  readonly _shape: { [layerId: string]: Record<string, never> };
};
both<MemoryConfig, UpDefaultMemoryConfig>({ toUp: id, toOurs: id });
both<LayerHandle<MemoryLayer<Sx>>, Record<string, never>>({ toUp: id, toOurs: id });
// ...and still, as D25 has it, any config fits ours.
const typed = memory([workingMemory()]);
const asDefault: MemoryConfig = typed;
void asDefault;

// Upstream's trace span names seven hooks; ours reports every hook a harness runs, so only upstream's fits ours.
type UpMemoryTraceSpan = {
  layerId: string;
  hook: 'init' | 'recall' | 'store' | 'onSpawn' | 'onReturn' | 'onComplete' | 'dispose';
  durationMs: number;
  status: 'ok' | 'error' | 'timeout' | 'skipped';
  budget?: { allocated: number; used: number; yielded: number };
  itemCount?: number;
  error?: { message: string; stack?: string };
};
fits<UpMemoryTraceSpan, MemoryTraceSpan>(id);
// @ts-expect-error ours also names onItemAppend, projectHistory, beforeToolCall and afterModelCall
fits<MemoryTraceSpan, UpMemoryTraceSpan>(id);

// Every declaration that upstream's `@noetic-tools/types` 1.0.0 exports and this package exports too, checked both
// ways: a value typed with ours fits where upstream's type is expected, and one typed with upstream's fits where ours
// is, so that programs importing both packages (upstream's layer and tool packages are typed against
// `@noetic-tools/types`) compile under `tsc --strict`.
//
// Upstream's types package is not on npm, so this file needs a checkout of it and is not part of
// `tsc -p __test__/types`: `node scripts/check-upstream-types.mjs <upstream>/packages/types` (or with
// NOETIC_UPSTREAM_TYPES set) compiles it against that checkout and fails when a name both packages export is not
// compared here. `../upstream-shapes.ts` restates the parts of upstream's types where ours used to differ, and runs in
// CI. DECISIONS.md X1 lists the differences that remain, each asserted below with `@ts-expect-error`.

import type { z } from 'zod';
import * as Ours from '@noetic-tools/core';
import * as OursUnstable from '@noetic-tools/core/unstable';
import * as Up from '@noetic-tools/types';

/** Compiles only when `A` (ours) is assignable to `B` (upstream's) and `B` to `A`; each way reports its own error. */
declare function both<A, B>(checks: { toUp: (ours: A) => B; toOurs: (up: B) => A }): void;
/** Compiles only when `A` is assignable to `B`. */
declare function fits<A, B>(toB: (a: A) => B): void;
const id = <T>(x: T): T => x;

// Type arguments for the generic declarations.
type S = { count: number };
type M = { notes: { count: number; add: (args: { text: string }) => Promise<void> } };
type P = { user: string };
type X = { items: readonly [z.ZodObject<{ type: z.ZodLiteral<'vendor:thing'>; n: z.ZodNumber }>] };
type I = z.ZodObject<{ query: z.ZodString }>;
type O = z.ZodNumber;
/** A layer object literal's type, within both packages' `MemoryLayer`. */
type NotesLayer = {
  readonly id: 'notes';
  slot: number;
  scope: 'thread';
  hooks: {};
  provides: { count: Ours.LayerDataDecl<number, S>; add: Ours.LayerFunctionDecl<{ text: string }, void, S> };
};

// ----- items -----------------------------------------------------------------
both<Ours.Item, Up.Item>({ toUp: id, toOurs: id });
both<Ours.OutputItem, Up.OutputItem>({ toUp: id, toOurs: id });
both<Ours.MessageItem, Up.MessageItem>({ toUp: id, toOurs: id });
both<Ours.FunctionCallItem, Up.FunctionCallItem>({ toUp: id, toOurs: id });
both<Ours.ReasoningItem, Up.ReasoningItem>({ toUp: id, toOurs: id });
both<Ours.WebSearchItem, Up.WebSearchItem>({ toUp: id, toOurs: id });
both<Ours.FileSearchItem, Up.FileSearchItem>({ toUp: id, toOurs: id });
both<Ours.ImageGenerationItem, Up.ImageGenerationItem>({ toUp: id, toOurs: id });
both<Ours.ServerToolItem, Up.ServerToolItem>({ toUp: id, toOurs: id });
both<Ours.InputMessageItem, Up.InputMessageItem>({ toUp: id, toOurs: id });
both<Ours.FunctionCallOutputItem, Up.FunctionCallOutputItem>({ toUp: id, toOurs: id });
both<Ours.ItemBase, Up.ItemBase>({ toUp: id, toOurs: id });
both<Ours.ExtensionItem, Up.ExtensionItem>({ toUp: id, toOurs: id });
both<Ours.DeveloperMessageExtensionItem, Up.DeveloperMessageExtensionItem>({ toUp: id, toOurs: id });
both<Ours.ToolCallExtensionItem, Up.ToolCallExtensionItem>({ toUp: id, toOurs: id });
both<Ours.ToolResultExtensionItem, Up.ToolResultExtensionItem>({ toUp: id, toOurs: id });
both<Ours.ExecuteInput, Up.ExecuteInput>({ toUp: id, toOurs: id });
both<Ours.StreamingItem, Up.StreamingItem>({ toUp: id, toOurs: id });
both<Ours.ContentPart, Up.ContentPart>({ toUp: id, toOurs: id });
both<Ours.InputContentPart, Up.InputContentPart>({ toUp: id, toOurs: id });
both<Ours.InputTextPart, Up.InputTextPart>({ toUp: id, toOurs: id });
both<Ours.InputImagePart, Up.InputImagePart>({ toUp: id, toOurs: id });
both<Ours.InputFilePart, Up.InputFilePart>({ toUp: id, toOurs: id });
both<Ours.OutputTextPart, Up.OutputTextPart>({ toUp: id, toOurs: id });
both<Ours.RefusalPart, Up.RefusalPart>({ toUp: id, toOurs: id });
both<Ours.ReasoningTextPart, Up.ReasoningTextPart>({ toUp: id, toOurs: id });
both<Ours.SummaryTextPart, Up.SummaryTextPart>({ toUp: id, toOurs: id });
both<Ours.ItemSchemaExtensions, Up.ItemSchemaExtensions>({ toUp: id, toOurs: id });
both<Ours.ExtendedItem<undefined>, Up.ExtendedItem<undefined>>({ toUp: id, toOurs: id });
both<Ours.ExtendedItem<X>, Up.ExtendedItem<X>>({ toUp: id, toOurs: id });
both<Ours.InferExtendedItem<X>, Up.InferExtendedItem<X>>({ toUp: id, toOurs: id });
both<Ours.ItemSchemaRegistry, Up.ItemSchemaRegistry>({ toUp: id, toOurs: id });
both<typeof Ours.ItemSchemaRegistry, typeof Up.ItemSchemaRegistry>({ toUp: id, toOurs: id });
both<typeof Ours.ItemSchema, typeof Up.ItemSchema>({ toUp: id, toOurs: id });
both<typeof Ours.defaultItemSchemaRegistry, typeof Up.defaultItemSchemaRegistry>({ toUp: id, toOurs: id });
both<typeof Ours.createMessage, typeof Up.createMessage>({ toUp: id, toOurs: id });
both<typeof Ours.estimateTokens, typeof Up.estimateTokens>({ toUp: id, toOurs: id });

// ----- tools -----------------------------------------------------------------
both<Ours.Tool, Up.Tool>({ toUp: id, toOurs: id });
both<Ours.Tool<I, O>, Up.Tool<I, O>>({ toUp: id, toOurs: id });
both<Ours.ToolExecutionContext, Up.ToolExecutionContext>({ toUp: id, toOurs: id });
both<Ours.ToolMemory, Up.ToolMemory>({ toUp: id, toOurs: id });
both<Ours.ToolMemoryDeclaration, Up.ToolMemoryDeclaration>({ toUp: id, toOurs: id });
both<Ours.ToolMemoryDeclaration<S>, Up.ToolMemoryDeclaration<S>>({ toUp: id, toOurs: id });

// ----- context and harness ---------------------------------------------------
both<Ours.Context, Up.Context>({ toUp: id, toOurs: id });
both<Ours.Context<M, S>, Up.Context<M, S>>({ toUp: id, toOurs: id });
both<Ours.ContextHarness, Up.ContextHarness>({ toUp: id, toOurs: id });
both<Ours.ContextMemory, Up.ContextMemory>({ toUp: id, toOurs: id });
both<Ours.CwdState, Up.CwdState>({ toUp: id, toOurs: id });
both<Ours.ItemLog, Up.ItemLog>({ toUp: id, toOurs: id });
both<Ours.LastLayerUsage, Up.LastLayerUsage>({ toUp: id, toOurs: id });
both<Ours.LayerUsageEntry, Up.LayerUsageEntry>({ toUp: id, toOurs: id });
both<Ours.AgentHarnessContract, Up.AgentHarnessContract>({ toUp: id, toOurs: id });
both<Ours.AgentHarnessContract<P>, Up.AgentHarnessContract<P>>({ toUp: id, toOurs: id });
both<Ours.AgentConfig, Up.AgentConfig>({ toUp: id, toOurs: id });
both<Ours.AgentConfig<P>, Up.AgentConfig<P>>({ toUp: id, toOurs: id });
both<Ours.AgentHooks, Up.AgentHooks>({ toUp: id, toOurs: id });
both<Ours.CallModelRequest, Up.CallModelRequest>({ toUp: id, toOurs: id });
both<Ours.ExecuteOptions, Up.ExecuteOptions>({ toUp: id, toOurs: id });
both<Ours.DeliveryMode, Up.DeliveryMode>({ toUp: id, toOurs: id });
both<Ours.HarnessStatus, Up.HarnessStatus>({ toUp: id, toOurs: id });
both<Ours.SessionScope, Up.SessionScope>({ toUp: id, toOurs: id });
both<Ours.HarnessResponse, Up.HarnessResponse>({ toUp: id, toOurs: id });
both<Ours.StreamEvent, Up.StreamEvent>({ toUp: id, toOurs: id });
both<Ours.SdkStreamEvent, Up.SdkStreamEvent>({ toUp: id, toOurs: id });
both<Ours.FrameworkStreamEvent, Up.FrameworkStreamEvent>({ toUp: id, toOurs: id });
both<Ours.RecallLayerOutput, Up.RecallLayerOutput>({ toUp: id, toOurs: id });
both<Ours.RerenderRequest, Up.RerenderRequest>({ toUp: id, toOurs: id });
both<Ours.AppendPipelineResult, Up.AppendPipelineResult>({ toUp: id, toOurs: id });
both<Ours.LLMResponse, Up.LLMResponse>({ toUp: id, toOurs: id });
both<Ours.LlmProviderConfig, Up.LlmProviderConfig>({ toUp: id, toOurs: id });
both<Ours.ModelParams, Up.ModelParams>({ toUp: id, toOurs: id });
both<Ours.RetryPolicy, Up.RetryPolicy>({ toUp: id, toOurs: id });
both<Ours.StepMeta, Up.StepMeta>({ toUp: id, toOurs: id });
both<Ours.TokenUsage, Up.TokenUsage>({ toUp: id, toOurs: id });
both<Ours.DetachedHandle<string>, Up.DetachedHandle<string>>({ toUp: id, toOurs: id });
both<Ours.DetachedStatus, Up.DetachedStatus>({ toUp: id, toOurs: id });
both<typeof Ours.DetachedStatus, typeof Up.DetachedStatus>({ toUp: id, toOurs: id });
both<Ours.Channel<string>, Up.Channel<string>>({ toUp: id, toOurs: id });
both<Ours.ExternalChannel<string>, Up.ExternalChannel<string>>({ toUp: id, toOurs: id });
both<Ours.ChannelHandle<string>, Up.ChannelHandle<string>>({ toUp: id, toOurs: id });
both<Ours.Span, Up.Span>({ toUp: id, toOurs: id });
both<Ours.TraceExporter, Up.TraceExporter>({ toUp: id, toOurs: id });
both<Ours.FsAdapter, Up.FsAdapter>({ toUp: id, toOurs: id });
both<Ours.FsStats, Up.FsStats>({ toUp: id, toOurs: id });
both<Ours.ShellAdapter, Up.ShellAdapter>({ toUp: id, toOurs: id });
both<Ours.ShellExecOptions, Up.ShellExecOptions>({ toUp: id, toOurs: id });
both<Ours.ShellExecResult, Up.ShellExecResult>({ toUp: id, toOurs: id });
both<Ours.SubprocessAdapter, Up.SubprocessAdapter>({ toUp: id, toOurs: id });
both<Ours.SubprocessHandle, Up.SubprocessHandle>({ toUp: id, toOurs: id });
both<Ours.SubprocessHandleMetadata, Up.SubprocessHandleMetadata>({ toUp: id, toOurs: id });
both<Ours.SubprocessRequest, Up.SubprocessRequest>({ toUp: id, toOurs: id });
both<Ours.ProcessSubprocessRequest, Up.ProcessSubprocessRequest>({ toUp: id, toOurs: id });
both<Ours.StepSubprocessRequest, Up.StepSubprocessRequest>({ toUp: id, toOurs: id });
both<Ours.StepSubprocessOverrides, Up.StepSubprocessOverrides>({ toUp: id, toOurs: id });
both<Ours.SubprocessStatus, Up.SubprocessStatus>({ toUp: id, toOurs: id });
both<Ours.SubprocessStopResult, Up.SubprocessStopResult>({ toUp: id, toOurs: id });
both<Ours.SubprocessControlResult, Up.SubprocessControlResult>({ toUp: id, toOurs: id });
both<Ours.SerializedError, Up.SerializedError>({ toUp: id, toOurs: id });
both<typeof Ours.TIMEOUT_ERROR_PREFIX, typeof Up.TIMEOUT_ERROR_PREFIX>({ toUp: id, toOurs: id });

// ----- memory layers ---------------------------------------------------------
both<Ours.MemoryLayer, Up.MemoryLayer>({ toUp: id, toOurs: id });
both<Ours.MemoryLayer<S>, Up.MemoryLayer<S>>({ toUp: id, toOurs: id });
both<Ours.MemoryHooks, Up.MemoryHooks>({ toUp: id, toOurs: id });
both<Ours.MemoryHooks<S>, Up.MemoryHooks<S>>({ toUp: id, toOurs: id });
both<Ours.MemoryConfig, Up.MemoryConfig>({ toUp: id, toOurs: id });
both<Ours.MemoryConfig<readonly [NotesLayer]>, Up.MemoryConfig<readonly [NotesLayer]>>({ toUp: id, toOurs: id });
both<Ours.InferMemoryShape<readonly [NotesLayer]>, Up.InferMemoryShape<readonly [NotesLayer]>>({ toUp: id, toOurs: id });
both<Ours.InferMemoryShape<readonly Ours.MemoryLayer[]>, Up.InferMemoryShape<readonly Up.MemoryLayer[]>>({ toUp: id, toOurs: id });
both<Ours.InferMemory<{ _shape: M }>, Up.InferMemory<{ _shape: M }>>({ toUp: id, toOurs: id });
both<Ours.LayerHandle<NotesLayer>, Up.LayerHandle<NotesLayer>>({ toUp: id, toOurs: id });
both<Ours.LayerHandle<Ours.MemoryLayer<S>>, Up.LayerHandle<Up.MemoryLayer<S>>>({ toUp: id, toOurs: id });
both<Ours.LayerProvides, Up.LayerProvides>({ toUp: id, toOurs: id });
both<Ours.LayerDataDecl, Up.LayerDataDecl>({ toUp: id, toOurs: id });
both<Ours.LayerDataDecl<number, S>, Up.LayerDataDecl<number, S>>({ toUp: id, toOurs: id });
both<Ours.LayerFunctionDecl, Up.LayerFunctionDecl>({ toUp: id, toOurs: id });
both<Ours.LayerFunctionDecl<string, number, S>, Up.LayerFunctionDecl<string, number, S>>({ toUp: id, toOurs: id });
both<Ours.LayerTimeouts, Up.LayerTimeouts>({ toUp: id, toOurs: id });
both<Ours.BudgetConfig, Up.BudgetConfig>({ toUp: id, toOurs: id });
both<Ours.MemoryScope, Up.MemoryScope>({ toUp: id, toOurs: id });
both<Ours.ExecutionContext, Up.ExecutionContext>({ toUp: id, toOurs: id });
both<Ours.ExecutionOutcome, Up.ExecutionOutcome>({ toUp: id, toOurs: id });
both<Ours.MemoryCallModelRequest, Up.MemoryCallModelRequest>({ toUp: id, toOurs: id });
both<Ours.ProjectionPolicy, Up.ProjectionPolicy>({ toUp: id, toOurs: id });
both<Ours.StorageAdapter, Up.StorageAdapter>({ toUp: id, toOurs: id });
both<Ours.ScopedStorage, Up.ScopedStorage>({ toUp: id, toOurs: id });
both<Ours.InitParams, Up.InitParams>({ toUp: id, toOurs: id });
both<Ours.InitResult<S>, Up.InitResult<S>>({ toUp: id, toOurs: id });
both<Ours.RecallParams<S>, Up.RecallParams<S>>({ toUp: id, toOurs: id });
both<Ours.RecallResult, Up.RecallResult>({ toUp: id, toOurs: id });
both<Ours.RecallResult<S>, Up.RecallResult<S>>({ toUp: id, toOurs: id });
both<Ours.StoreParams<S>, Up.StoreParams<S>>({ toUp: id, toOurs: id });
both<Ours.StoreResult<S>, Up.StoreResult<S>>({ toUp: id, toOurs: id });
both<Ours.SpawnParams<S>, Up.SpawnParams<S>>({ toUp: id, toOurs: id });
both<Ours.SpawnResult<S>, Up.SpawnResult<S>>({ toUp: id, toOurs: id });
both<Ours.ReturnParams<S>, Up.ReturnParams<S>>({ toUp: id, toOurs: id });
both<Ours.ReturnResult<S>, Up.ReturnResult<S>>({ toUp: id, toOurs: id });
both<Ours.CompleteParams<S>, Up.CompleteParams<S>>({ toUp: id, toOurs: id });
both<Ours.DisposeParams<S>, Up.DisposeParams<S>>({ toUp: id, toOurs: id });
both<Ours.OnItemAppendParams<S>, Up.OnItemAppendParams<S>>({ toUp: id, toOurs: id });
both<Ours.OnItemAppendResult<S>, Up.OnItemAppendResult<S>>({ toUp: id, toOurs: id });
both<Ours.ProjectHistoryParams<S>, Up.ProjectHistoryParams<S>>({ toUp: id, toOurs: id });
both<Ours.ProjectHistoryResult, Up.ProjectHistoryResult>({ toUp: id, toOurs: id });
both<Ours.RerenderScope, Up.RerenderScope>({ toUp: id, toOurs: id });
both<typeof Ours.Slot, typeof Up.Slot>({ toUp: id, toOurs: id });

// ----- steering ----------------------------------------------------------------
both<Ours.SteeringAction, Up.SteeringAction>({ toUp: id, toOurs: id });
both<Ours.SteeringDecision, Up.SteeringDecision>({ toUp: id, toOurs: id });
both<Ours.SteeringRule, Up.SteeringRule>({ toUp: id, toOurs: id });
both<Ours.SteeringConfig, Up.SteeringConfig>({ toUp: id, toOurs: id });
both<Ours.SteeringState, Up.SteeringState>({ toUp: id, toOurs: id });
both<Ours.LedgerEntry, Up.LedgerEntry>({ toUp: id, toOurs: id });
both<Ours.LedgerEntryKind, Up.LedgerEntryKind>({ toUp: id, toOurs: id });
both<Ours.BeforeToolCallParams, Up.BeforeToolCallParams>({ toUp: id, toOurs: id });
both<Ours.BeforeToolCallParams<S>, Up.BeforeToolCallParams<S>>({ toUp: id, toOurs: id });
both<Ours.BeforeToolCallResult, Up.BeforeToolCallResult>({ toUp: id, toOurs: id });
both<Ours.BeforeToolCallResult<S>, Up.BeforeToolCallResult<S>>({ toUp: id, toOurs: id });
both<Ours.AfterModelCallParams, Up.AfterModelCallParams>({ toUp: id, toOurs: id });
both<Ours.AfterModelCallParams<S>, Up.AfterModelCallParams<S>>({ toUp: id, toOurs: id });
both<Ours.AfterModelCallResult, Up.AfterModelCallResult>({ toUp: id, toOurs: id });
both<Ours.AfterModelCallResult<S>, Up.AfterModelCallResult<S>>({ toUp: id, toOurs: id });
// Upstream declares these constants' members as `string`s; ours keep their literal values. A constant is read, not
// handed around, so only ours standing in for upstream's matters (the types they name fit both ways, above).
fits<typeof Ours.SteeringAction, typeof Up.SteeringAction>(id);
fits<typeof Ours.LedgerEntryKind, typeof Up.LedgerEntryKind>(id);
// @ts-expect-error upstream's constant's members are plain strings
fits<typeof Up.SteeringAction, typeof Ours.SteeringAction>(id);
// @ts-expect-error upstream's constant's members are plain strings
fits<typeof Up.LedgerEntryKind, typeof Ours.LedgerEntryKind>(id);

// ----- steps -------------------------------------------------------------------
both<Ours.Step, Up.Step>({ toUp: id, toOurs: id });
both<Ours.Step<M, string, number>, Up.Step<M, string, number>>({ toUp: id, toOurs: id });
both<Ours.StepRun, Up.StepRun>({ toUp: id, toOurs: id });
both<Ours.StepRun<M, string, number>, Up.StepRun<M, string, number>>({ toUp: id, toOurs: id });
both<Ours.StepLLM, Up.StepLLM>({ toUp: id, toOurs: id });
both<Ours.StepLLM<M, string, number>, Up.StepLLM<M, string, number>>({ toUp: id, toOurs: id });
both<Ours.StepTool, Up.StepTool>({ toUp: id, toOurs: id });
both<Ours.StepTool<M, string, number>, Up.StepTool<M, string, number>>({ toUp: id, toOurs: id });
both<Ours.StepBranch, Up.StepBranch>({ toUp: id, toOurs: id });
both<Ours.StepBranch<M, string, number>, Up.StepBranch<M, string, number>>({ toUp: id, toOurs: id });
both<Ours.StepFork, Up.StepFork>({ toUp: id, toOurs: id });
both<Ours.StepFork<M, string, number>, Up.StepFork<M, string, number>>({ toUp: id, toOurs: id });
both<Ours.StepForkRace<M, string, number>, Up.StepForkRace<M, string, number>>({ toUp: id, toOurs: id });
both<Ours.StepForkAll<M, string, number>, Up.StepForkAll<M, string, number>>({ toUp: id, toOurs: id });
both<Ours.StepForkSettle<M, string, number>, Up.StepForkSettle<M, string, number>>({ toUp: id, toOurs: id });
both<Ours.StepSpawn, Up.StepSpawn>({ toUp: id, toOurs: id });
both<Ours.StepSpawn<M, string, number>, Up.StepSpawn<M, string, number>>({ toUp: id, toOurs: id });
both<Ours.StepProvide, Up.StepProvide>({ toUp: id, toOurs: id });
both<Ours.StepProvide<M, string, number>, Up.StepProvide<M, string, number>>({ toUp: id, toOurs: id });
both<Ours.StepLoop, Up.StepLoop>({ toUp: id, toOurs: id });
both<Ours.StepLoop<M, string, number>, Up.StepLoop<M, string, number>>({ toUp: id, toOurs: id });
both<Ours.StepEvery, Up.StepEvery>({ toUp: id, toOurs: id });
both<Ours.StepEvery<M, string, number>, Up.StepEvery<M, string, number>>({ toUp: id, toOurs: id });
both<Ours.ExecuteStepFn, Up.ExecuteStepFn>({ toUp: id, toOurs: id });
both<Ours.Lazy<string>, Up.Lazy<string>>({ toUp: id, toOurs: id });
both<Ours.Lazy<string, M>, Up.Lazy<string, M>>({ toUp: id, toOurs: id });
both<Ours.Snapshot, Up.Snapshot>({ toUp: id, toOurs: id });
both<Ours.Verdict, Up.Verdict>({ toUp: id, toOurs: id });
both<Ours.Until, Up.Until>({ toUp: id, toOurs: id });
both<Ours.SettleResult<string>, Up.SettleResult<string>>({ toUp: id, toOurs: id });
both<Ours.EveryErrorPolicy, Up.EveryErrorPolicy>({ toUp: id, toOurs: id });

// ----- errors --------------------------------------------------------------------
both<Ours.NoeticError, Up.NoeticError>({ toUp: id, toOurs: id });
both<Ours.NoeticErrorImpl, Up.NoeticErrorImpl>({ toUp: id, toOurs: id });
both<typeof Ours.NoeticErrorImpl, typeof Up.NoeticErrorImpl>({ toUp: id, toOurs: id });
both<Ours.NoeticConfigError, Up.NoeticConfigError>({ toUp: id, toOurs: id });
both<typeof Ours.NoeticConfigError, typeof Up.NoeticConfigError>({ toUp: id, toOurs: id });
both<typeof Ours.isNoeticError, typeof Up.isNoeticError>({ toUp: id, toOurs: id });
both<typeof Ours.isNoeticConfigError, typeof Up.isNoeticConfigError>({ toUp: id, toOurs: id });

// ----- observability ---------------------------------------------------------------
// Ours reports every hook a harness runs; upstream's type names its first seven.
fits<Up.MemoryTraceSpan, Ours.MemoryTraceSpan>(id);
// @ts-expect-error ours also names onItemAppend, projectHistory, beforeToolCall and afterModelCall
fits<Ours.MemoryTraceSpan, Up.MemoryTraceSpan>(id);

// ----- /unstable ---------------------------------------------------------------------
both<typeof OursUnstable.frameworkCast, typeof Up.frameworkCast>({ toUp: id, toOurs: id });

// ----- what this package makes, where upstream's types are expected -------------------
declare const harness: Ours.AgentHarness<P>;
fits<typeof harness, Up.AgentHarnessContract<P>>(id);
fits<Ours.Context, Up.Context>(id);
fits<ReturnType<typeof Ours.tool<I, O>>, Up.Tool<I, O>>(id);
fits<ReturnType<typeof Ours.react>, Up.Step<Up.ContextMemory, string, string>>(id);
fits<ReturnType<typeof Ours.workingMemory>, Up.MemoryLayer<Ours.WorkingMemoryState>>(id);
fits<ReturnType<typeof Ours.observationalMemory>, Up.MemoryLayer>(id);
fits<ReturnType<typeof Ours.historyWindow>, Up.MemoryLayer>(id);
fits<ReturnType<typeof Ours.durableTaskState>, Up.MemoryLayer>(id);
fits<ReturnType<typeof Ours.fileReference>, Up.MemoryLayer>(id);
fits<ReturnType<typeof Ours.staticContent>, Up.MemoryLayer>(id);
fits<ReturnType<typeof Ours.planMemory>, Up.MemoryLayer>(id);
fits<ReturnType<typeof Ours.steering>, Up.MemoryLayer>(id);
fits<ReturnType<typeof Ours.temporalMemory>, Up.MemoryLayer>(id);
fits<ReturnType<typeof Ours.toolMemoryLayer>, Up.MemoryLayer[]>(id);
// And upstream-typed values where this package's functions take them.
declare const upLayer: Up.MemoryLayer<S>;
declare const upTool: Up.Tool<I, O>;
declare const upStep: Up.Step<Up.ContextMemory, string, string>;
declare const upItems: Up.Item[];
declare const upCtx: Up.Context;
Ours.memory([upLayer]);
Ours.react({ model: 'm', tools: [upTool], memory: [upLayer] });
void harness.run(upStep, 'input', upCtx);
void harness.execute(upItems);
harness.createContext({ items: upItems, memory: [upLayer], parent: upCtx });

// ESM entry of @noetic-tools/core/portable.
import portable from './portable.cjs';

export const {
  AgentHarness, step, tool, toolWithGenerator, loop, branch, fork, spawn, layerData, layerFn, until, all, any, Slot,
  createInMemoryFsAdapter, createInMemoryShellAdapter, createInMemorySubprocessAdapter, createInMemoryStorage,
  durableTaskState, historyWindow, observationalMemory, planMemory, temporalMemory, toolMemoryLayer, workingMemory,
  AskUserAnnotationSchema, AskUserInputSchema, AskUserOptionSchema, AskUserOutputSchema, AskUserQuestionSchema,
} = portable;

// -----------------------------------------------------------------------------
// @noetic-tools/core/portable: the subset of the main entry that runs anywhere. The same objects as the main
// entry's, so their types are its.
// -----------------------------------------------------------------------------

export {
  AgentHarness, step, tool, toolWithGenerator, loop, branch, fork, spawn, layerData, layerFn, until, all, any, Slot,
  createInMemoryFsAdapter, createInMemoryShellAdapter, createInMemorySubprocessAdapter, createInMemoryStorage,
  durableTaskState, historyWindow, observationalMemory, planMemory, temporalMemory, toolMemoryLayer, workingMemory,
  AskUserAnnotationSchema, AskUserInputSchema, AskUserOptionSchema, AskUserOutputSchema, AskUserQuestionSchema,
} from '../index.js';
export type { AskUserAnnotation, AskUserInput, AskUserOption, AskUserOutput, AskUserQuestion } from '../index.js';

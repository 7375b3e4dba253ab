'use strict';
// @noetic-tools/core/portable: the subset of the main entry that runs anywhere (no channels, schedulers,
// conditions, patterns or durable runtime): the same objects as the main entry's.
const core = require('./index.cjs');

const PORTABLE = [
  'AgentHarness', 'step', 'tool', 'toolWithGenerator', 'loop', 'branch', 'fork', 'spawn', 'layerData', 'layerFn',
  'until', 'all', 'any', 'Slot', 'createInMemoryFsAdapter', 'createInMemoryShellAdapter',
  'createInMemorySubprocessAdapter', 'createInMemoryStorage', 'durableTaskState', 'historyWindow',
  'observationalMemory', 'planMemory', 'temporalMemory', 'toolMemoryLayer', 'workingMemory',
  'AskUserAnnotationSchema', 'AskUserInputSchema', 'AskUserOptionSchema', 'AskUserOutputSchema', 'AskUserQuestionSchema',
];

module.exports = Object.fromEntries(PORTABLE.map((name) => [name, core[name]]));

'use strict';
// The public main entry of @noetic-tools/core.
const errors = require('./errors.cjs');
const items = require('./items.cjs');
const memory = require('./memory.cjs');
const steps = require('./steps.cjs');
const harness = require('./harness.cjs');
const adapters = require('./adapters.cjs');
const itemSchemas = require('./item-schemas.cjs');
const conditions = require('./conditions.cjs');
const channels = require('./channels.cjs');
const cwd = require('./cwd.cjs');
const { createOpenRouterEmbed } = require('./embed.cjs');
const observability = require('./observability.cjs');

module.exports = {
  NoeticConfigError: errors.NoeticConfigError,
  NoeticErrorImpl: errors.NoeticErrorImpl,
  isNoeticError: errors.isNoeticError,
  isNoeticConfigError: errors.isNoeticConfigError,
  estimateTokens: items.estimateTokens,
  createMessage: items.createMessage,
  stripUnresolvedToolCalls: items.stripUnresolvedToolCalls,
  findFunctionCall: items.findFunctionCall,
  ItemSchema: itemSchemas.ItemSchema,
  ItemSchemaRegistry: itemSchemas.ItemSchemaRegistry,
  defaultItemSchemaRegistry: itemSchemas.defaultItemSchemaRegistry,
  Slot: memory.Slot,
  SteeringAction: memory.SteeringAction,
  LedgerEntryKind: memory.LedgerEntryKind,
  memory: memory.memory,
  layerData: memory.layerData,
  layerFn: memory.layerFn,
  workingMemory: memory.workingMemory,
  observationalMemory: memory.observationalMemory,
  historyWindow: memory.historyWindow,
  durableTaskState: memory.durableTaskState,
  staticContent: memory.staticContent,
  planMemory: memory.planMemory,
  fileReference: memory.fileReference,
  PlanPhase: memory.PlanPhase,
  steering: memory.steering,
  temporalMemory: memory.temporalMemory,
  toolMemoryLayer: memory.toolMemoryLayer,
  getToolCwd: cwd.getToolCwd,
  setToolCwd: cwd.setToolCwd,
  snapshotCwdState: cwd.snapshotCwdState,
  step: steps.step,
  tool: steps.tool,
  toolWithGenerator: steps.toolWithGenerator,
  loop: steps.loop,
  spawn: steps.spawn,
  branch: steps.branch,
  provide: steps.provide,
  registerStep: steps.registerStep,
  lookupStep: steps.lookupStep,
  getRegistry: steps.getRegistry,
  execute: harness.execute,
  fork: steps.fork,
  every: steps.every,
  until: steps.until,
  any: steps.any,
  all: steps.all,
  react: steps.react,
  cosineSimilarity: conditions.cosineSimilarity,
  when: conditions.when,
  otherwise: conditions.otherwise,
  semanticRoute: conditions.semanticRoute,
  semanticSwitch: conditions.semanticSwitch,
  embeddingMatch: conditions.embeddingMatch,
  anyCondition: conditions.anyCondition,
  allCondition: conditions.allCondition,
  aiCondition: conditions.aiCondition,
  channel: channels.channel,
  createOpenRouterEmbed,
  AgentHarness: harness.AgentHarness,
  createInMemoryStorage: harness.createInMemoryStorage,
  createSqliteStorage: harness.createSqliteStorage,
  createInMemorySubprocessAdapter: require('./subprocess.cjs').createInMemorySubprocessAdapter,
  serializeError: require('./subprocess.cjs').serializeError,
  seedFromItems: require('./session.cjs').seedFromItems,
  createInMemoryFsAdapter: adapters.createInMemoryFsAdapter,
  createInMemoryShellAdapter: adapters.createInMemoryShellAdapter,
  NoopExporter: observability.NoopExporter,
  InMemoryExporter: observability.InMemoryExporter,
  GenAI: observability.GenAI,
  ToolAttr: observability.ToolAttr,
};

'use strict';
// The public main entry of @noetic-tools/core.
const errors = require('./errors.cjs');
const items = require('./items.cjs');
const memory = require('./memory.cjs');
const builtins = require('./builtin-layers.cjs');
const steps = require('./steps.cjs');
const harness = require('./harness.cjs');
const adapters = require('./adapters.cjs');
const itemSchemas = require('./item-schemas.cjs');
const conditions = require('./conditions.cjs');
const channels = require('./channels.cjs');
const cwd = require('./cwd.cjs');
const { createOpenRouterEmbed } = require('./embed.cjs');
const observability = require('./observability.cjs');
const workflow = require('./workflow.cjs');
const patterns = require('./patterns.cjs');
const askUser = require('./ask-user.cjs');
const checkpoints = require('./checkpoint.cjs');
const durable = require('./durable.cjs');

// Modules spread whole, less the names they export for the package's own use (module.test.mjs holds this list to
// the ESM entry's); from the others, their public names.
const { describeStep, describeTool, PREDICATE, ...publicSteps } = steps;
const { textOf, ...publicWorkflow } = workflow;
const { checkpoint, restore, ...publicCheckpoints } = checkpoints;
module.exports = {
  ...items,
  ...builtins,
  ...publicSteps,
  ...harness,
  ...conditions,
  ...publicWorkflow,
  ...patterns,
  ...askUser,
  ...publicCheckpoints,
  ...durable,
  NoeticConfigError: errors.NoeticConfigError,
  NoeticErrorImpl: errors.NoeticErrorImpl,
  isNoeticError: errors.isNoeticError,
  isNoeticConfigError: errors.isNoeticConfigError,
  ItemSchema: itemSchemas.ItemSchema,
  ItemSchemaRegistry: itemSchemas.ItemSchemaRegistry,
  defaultItemSchemaRegistry: itemSchemas.defaultItemSchemaRegistry,
  Slot: memory.Slot,
  SteeringAction: memory.SteeringAction,
  LedgerEntryKind: memory.LedgerEntryKind,
  DetachedStatus: require('./detached.cjs').DetachedStatus,
  memory: memory.memory,
  layerData: memory.layerData,
  layerFn: memory.layerFn,
  getToolCwd: cwd.getToolCwd,
  setToolCwd: cwd.setToolCwd,
  snapshotCwdState: cwd.snapshotCwdState,
  channel: channels.channel,
  createOpenRouterEmbed,
  createInMemorySubprocessAdapter: require('./subprocess.cjs').createInMemorySubprocessAdapter,
  serializeError: require('./subprocess.cjs').serializeError,
  seedFromItems: require('./session.cjs').seedFromItems,
  createInMemoryFsAdapter: adapters.createInMemoryFsAdapter,
  createInMemoryShellAdapter: adapters.createInMemoryShellAdapter,
  NoopExporter: observability.NoopExporter,
  InMemoryExporter: observability.InMemoryExporter,
  GenAI: observability.GenAI,
  ToolAttr: observability.ToolAttr,
  TIMEOUT_ERROR_PREFIX: adapters.TIMEOUT_ERROR_PREFIX,
};

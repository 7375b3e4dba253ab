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

// The modules whose every export is public are spread whole; the others' public names are picked.
module.exports = {
  ...builtins,
  ...conditions,
  ...patterns,
  ...askUser,
  ...durable,
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
  DetachedStatus: require('./detached.cjs').DetachedStatus,
  memory: memory.memory,
  layerData: memory.layerData,
  layerFn: memory.layerFn,
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
  channel: channels.channel,
  createOpenRouterEmbed,
  AgentHarness: harness.AgentHarness,
  createInMemoryStorage: harness.createInMemoryStorage,
  createSqliteStorage: harness.createSqliteStorage,
  createPostgresStorage: harness.createPostgresStorage,
  createInMemorySubprocessAdapter: require('./subprocess.cjs').createInMemorySubprocessAdapter,
  serializeError: require('./subprocess.cjs').serializeError,
  seedFromItems: require('./session.cjs').seedFromItems,
  createInMemoryFsAdapter: adapters.createInMemoryFsAdapter,
  createInMemoryShellAdapter: adapters.createInMemoryShellAdapter,
  NoopExporter: observability.NoopExporter,
  InMemoryExporter: observability.InMemoryExporter,
  GenAI: observability.GenAI,
  ToolAttr: observability.ToolAttr,
  // Workflows, patterns, ask-user (issue 12).
  MergeStrategySchema: workflow.MergeStrategySchema,
  UntilPredicateSchema: workflow.UntilPredicateSchema,
  WorkflowNodeSchema: workflow.WorkflowNodeSchema,
  WorkflowDocumentSchema: workflow.WorkflowDocumentSchema,
  validateWorkflow: workflow.validateWorkflow,
  walkWorkflow: workflow.walkWorkflow,
  workflowDepth: workflow.workflowDepth,
  hydrateNode: workflow.hydrateNode,
  hydrateWorkflow: workflow.hydrateWorkflow,
  FlowSchema: workflow.FlowSchema,
  validateFlow: workflow.validateFlow,
  walkFlow: workflow.walkFlow,
  flowDepth: workflow.flowDepth,
  TIMEOUT_ERROR_PREFIX: adapters.TIMEOUT_ERROR_PREFIX,
  // Durable execution (issue 12).
  CheckpointSchemaVersion: checkpoints.CheckpointSchemaVersion,
  CheckpointSnapshotSchema: checkpoints.CheckpointSnapshotSchema,
  CwdSnapshotSchema: checkpoints.CwdSnapshotSchema,
  FrontierFrameSchema: checkpoints.FrontierFrameSchema,
  ItemLogSnapshotSchema: checkpoints.ItemLogSnapshotSchema,
  PendingAskUserSnapshotSchema: checkpoints.PendingAskUserSnapshotSchema,
  CheckpointKeys: checkpoints.CheckpointKeys,
  createCheckpointStore: checkpoints.createCheckpointStore,
};

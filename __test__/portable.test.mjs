// The `/portable` entry (issue 12): upstream's 30 values, the very objects of the main entry, in ESM and CommonJS;
// and the ask-user schemas it carries.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import * as main from '../js/index.mjs';
import * as portable from '../js/portable.mjs';
import { AskUserInputSchema, AskUserOutputSchema, AskUserQuestionSchema, TIMEOUT_ERROR_PREFIX } from '../js/index.mjs';

const require = createRequire(import.meta.url);

const PORTABLE = [
  'AgentHarness', 'step', 'tool', 'toolWithGenerator', 'loop', 'branch', 'fork', 'spawn', 'layerData', 'layerFn', 'until', 'all', 'any', 'Slot',
  'createInMemoryFsAdapter', 'createInMemoryShellAdapter', 'createInMemorySubprocessAdapter', 'createInMemoryStorage', 'durableTaskState',
  'historyWindow', 'observationalMemory', 'planMemory', 'temporalMemory', 'toolMemoryLayer', 'workingMemory', 'AskUserAnnotationSchema',
  'AskUserInputSchema', 'AskUserOptionSchema', 'AskUserOutputSchema', 'AskUserQuestionSchema',
];

test('/portable exports exactly upstream’s 30 values, the same objects as the main entry, from ESM and CommonJS', () => {
  const cjs = require('../js/portable.cjs');
  assert.deepEqual(Object.keys(portable).sort(), [...PORTABLE].sort());
  assert.deepEqual(Object.keys(cjs).sort(), [...PORTABLE].sort());
  for (const name of PORTABLE) {
    assert.notEqual(main[name], undefined, name);
    assert.equal(portable[name], main[name], name);
    assert.equal(cjs[name], main[name], name);
  }
  for (const absent of ['react', 'channel', 'every', 'provide', 'execute', 'steering', 'NoeticConfigError', 'WorkflowDocumentSchema']) {
    assert.equal(absent in portable, false, absent);
  }
  const pkg = require('../package.json');
  assert.deepEqual(pkg.exports['./portable'], { types: './js/portable.d.ts', import: './js/portable.mjs', require: './js/portable.cjs' });
});

test('ask-user schemas: two to four options, a header of at most 12 characters, unique question texts, multiSelect off by default', () => {
  const options = [{ label: 'Yes', description: 'Go ahead' }, { label: 'No', description: 'Stop' }];
  const question = { question: 'Proceed?', header: 'Confirm', options };
  assert.equal(AskUserQuestionSchema.parse(question).multiSelect, false);
  assert.equal(AskUserQuestionSchema.safeParse({ ...question, header: 'A header too long' }).success, false);
  assert.equal(AskUserQuestionSchema.safeParse({ ...question, options: options.slice(0, 1) }).success, false);
  assert.equal(AskUserInputSchema.safeParse({ questions: [question, { ...question, header: 'Again' }] }).success, false, 'duplicate texts collapse answers');
  assert.equal(AskUserInputSchema.safeParse({ questions: [question, { ...question, question: 'Really?' }] }).success, true);
  assert.equal(AskUserInputSchema.safeParse({ questions: [] }).success, false);
  const output = AskUserOutputSchema.parse({ answers: { 'Proceed?': 'Yes' }, annotations: { 'Proceed?': { notes: 'quickly' } } });
  assert.deepEqual(output.annotations, { 'Proceed?': { notes: 'quickly' } });
  assert.equal(TIMEOUT_ERROR_PREFIX, 'timeout:');
});

// ItemSchemaRegistry on its own: the structural check, schemas as gates, strictness, categories, extend.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { z } from 'zod';
import { ItemSchema, ItemSchemaRegistry, NoeticErrorImpl, createMessage, defaultItemSchemaRegistry, isNoeticError } from '../js/index.mjs';
import { Ticket, assistant, isMismatch, ticket } from './helpers.mjs';

test('ItemSchema admits any object whose type is a non-empty string, and nothing else', () => {
  const odd = { type: 'anything:at-all', extra: [1, 2] };
  assert.equal(ItemSchema.parse(odd), odd);
  assert.equal(ItemSchema.safeParse(createMessage('x', 'user')).success, true);
  for (const bad of [null, undefined, 7, 'message', [], {}, { type: '' }, { type: 3 }, { kind: 'message' }]) {
    assert.equal(ItemSchema.safeParse(bad).success, false, JSON.stringify(bad));
  }
  assert.throws(() => ItemSchema.parse({ type: '' }), /non-empty string/);
});

test('a schema is a gate: the very value given is returned, fields the schema does not declare included', () => {
  const stripping = z.object({ type: z.literal('acme:ticket') }).transform(() => ({ type: 'acme:ticket', replaced: true }));
  const registry = new ItemSchemaRegistry({ items: [stripping] });
  const given = ticket('t1', { owner: 'ops' });
  const parsed = registry.parse(given);
  assert.equal(parsed, given);
  assert.deepEqual(parsed, { id: 't1', type: 'acme:ticket', priority: 2, owner: 'ops' });
  assert.equal(registry.parseWithCategory(given, 'items'), given);
});

test('strict registries reject unknown types no schema admits; non-strict ones admit them', () => {
  const strict = new ItemSchemaRegistry({ items: [Ticket] });
  assert.equal(strict.strictUnknownExtensions, true);
  assert.throws(() => strict.parse({ type: 'acme:incident' }), isMismatch({ category: 'items', itemType: 'acme:incident' }, "Item type 'acme:incident'"));
  // The right type with the wrong shape is not admitted either.
  assert.throws(() => strict.parse({ type: 'acme:ticket', priority: 'high' }), isMismatch({ category: 'items', itemType: 'acme:ticket' }));
  const error = (() => {
    try {
      defaultItemSchemaRegistry.parse({ type: 'acme:ticket' });
    } catch (e) {
      return e;
    }
  })();
  assert.ok(error instanceof NoeticErrorImpl && error instanceof Error);
  assert.equal(error.name, 'NoeticError');

  const lenient = new ItemSchemaRegistry({ items: [Ticket] }, { strictUnknownExtensions: false });
  const unknown = { type: 'acme:incident' };
  assert.equal(lenient.parse(unknown), unknown);
  // The structural check applies whatever the strictness.
  assert.throws(() => lenient.parse({ type: '' }), (e) => e.name === 'ZodError' || e.constructor.name === 'ZodError');
});

test('known types and openrouter: types pass a strict registry whatever its schemas say', () => {
  const rejectsAll = z.never();
  const registry = new ItemSchemaRegistry({ items: [rejectsAll], developerMessages: [rejectsAll], toolCalls: [rejectsAll], toolResults: [rejectsAll] });
  const known = [
    createMessage('hi', 'developer'),
    assistant('hello'),
    { type: 'function_call', callId: 'c', name: 'f', arguments: '{}' },
    { type: 'function_call_output', callId: 'c', output: 'ok' },
    { type: 'reasoning', summary: [] },
    { type: 'web_search_call' },
    { type: 'file_search_call' },
    { type: 'image_generation_call' },
    { type: 'openrouter:web_fetch' },
  ];
  assert.deepEqual(registry.parseMany(known), known);
  assert.deepEqual(defaultItemSchemaRegistry.parseMany(new Set(known)), known, 'parseMany takes any iterable');
});

test('a schema is consulted only for the categories an item belongs to', () => {
  const anything = z.object({ type: z.string() });
  // developerMessages, toolCalls and toolResults hold known shapes only, so their schemas never admit a new type.
  for (const category of ['developerMessages', 'toolCalls', 'toolResults']) {
    const registry = new ItemSchemaRegistry({ [category]: [anything] });
    assert.throws(() => registry.parse({ type: 'acme:ticket', role: 'developer' }), isMismatch({ category: 'items', itemType: 'acme:ticket' }), category);
  }
  // parse consults developerMessages schemas for a developer message (seen through a side effect of the schema).
  const seen = [];
  const watching = z.custom((value) => (seen.push(value.role), true));
  const registry = new ItemSchemaRegistry({ developerMessages: [watching] });
  registry.parse(createMessage('dev', 'developer'));
  registry.parse(createMessage('user', 'user'));
  assert.deepEqual(seen, ['developer']);
});

test('parseWithCategory: the category decides when it has schemas, and falls back to parse when it has none', () => {
  const Decorated = z.object({ type: z.literal('function_call_output'), callId: z.string(), reviewedBy: z.string() });
  const registry = new ItemSchemaRegistry({ toolResults: [Decorated] });
  const plain = { type: 'function_call_output', callId: 'c1', output: 'ok' };
  const reviewed = { ...plain, reviewedBy: 'ana' };
  assert.equal(registry.parseWithCategory(reviewed, 'toolResults'), reviewed);
  // A known type the category's schemas reject is a mismatch naming the category, without an itemType.
  assert.throws(() => registry.parseWithCategory(plain, 'toolResults'), isMismatch({ category: 'toolResults' }, 'toolResults extension schema'));
  // A schema of the category admits even a type parse would reject; the structural check still applies.
  const loose = new ItemSchemaRegistry({ developerMessages: [z.any()] });
  const odd = { type: 'acme:note' };
  assert.equal(loose.parseWithCategory(odd, 'developerMessages'), odd);
  assert.throws(() => loose.parseWithCategory({ type: '' }, 'developerMessages'), (e) => !isNoeticError(e));
  // No schemas for the category: exactly parse.
  assert.equal(registry.parseWithCategory(plain, 'items'), plain);
  assert.throws(() => registry.parseWithCategory({ type: 'acme:note' }, 'toolCalls'), isMismatch({ category: 'items', itemType: 'acme:note' }));
});

test('extend: the same registry when given nothing to add, otherwise a new one that keeps the strictness', () => {
  const base = new ItemSchemaRegistry(undefined, { strictUnknownExtensions: false });
  assert.equal(base.extend(), base);
  assert.equal(base.extend({}), base);
  assert.equal(base.extend({ items: [], toolResults: [] }), base);
  const extended = base.extend({ items: [Ticket] });
  assert.notEqual(extended, base);
  assert.equal(extended.strictUnknownExtensions, false);
  assert.deepEqual(base.extensions, { items: [], developerMessages: [], toolCalls: [], toolResults: [] });
  assert.deepEqual(extended.extensions.items, [Ticket]);
  // Schemas are appended after the registry's own, and the caller's arrays are copied, not kept.
  const Other = z.object({ type: z.literal('acme:other') });
  const lists = { items: [Other] };
  const both = new ItemSchemaRegistry({ items: [Ticket] }).extend(lists);
  lists.items.push(z.any());
  assert.deepEqual(both.extensions.items, [Ticket, Other]);
  assert.equal(both.strictUnknownExtensions, true);
  assert.throws(() => both.parse({ type: 'acme:third' }), isMismatch({ category: 'items', itemType: 'acme:third' }));
});

test('defaultItemSchemaRegistry is strict with no schemas, and the exports are the same objects in CommonJS', () => {
  assert.equal(defaultItemSchemaRegistry.strictUnknownExtensions, true);
  assert.deepEqual(defaultItemSchemaRegistry.extensions, { items: [], developerMessages: [], toolCalls: [], toolResults: [] });
  const cjs = createRequire(import.meta.url)('../js/index.cjs');
  assert.equal(cjs.ItemSchema, ItemSchema);
  assert.equal(cjs.ItemSchemaRegistry, ItemSchemaRegistry);
  assert.equal(cjs.defaultItemSchemaRegistry, defaultItemSchemaRegistry);
  assert.ok(new cjs.ItemSchemaRegistry() instanceof ItemSchemaRegistry);
});

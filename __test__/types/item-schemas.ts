// Item schemas: the registry class, the structural schema and the harness's registry.

import { z } from 'zod';
import {
  AgentHarness,
  ItemSchema,
  ItemSchemaRegistry,
  defaultItemSchemaRegistry,
  type Item,
  type ItemSchemaCategory,
  type ItemSchemaExtensions,
} from '@noetic-tools/core';

const Ticket = z.object({ type: z.literal('acme:ticket'), priority: z.number() });
const extensions: ItemSchemaExtensions = { items: [Ticket] };

const registry: ItemSchemaRegistry = new ItemSchemaRegistry(extensions, { strictUnknownExtensions: false });
const strictness: boolean = registry.strictUnknownExtensions;
const extended: ItemSchemaRegistry = defaultItemSchemaRegistry.extend({ toolResults: [Ticket] }).extend();
const one: Item = extended.parse({ type: 'message' });
const many: Item[] = registry.parseMany(new Set<unknown>([{ type: 'acme:ticket', priority: 1 }]));
const category: ItemSchemaCategory = 'developerMessages';
const checked: Item = registry.parseWithCategory(one, category);
const structural: Item = ItemSchema.parse({ type: 'x' });
new ItemSchemaRegistry();

const harness = new AgentHarness({ name: 'h', params: {}, itemSchemas: extensions, strictItemSchemas: true });
const fromHarness: ItemSchemaRegistry = harness.itemSchemas;
const withLayers: ItemSchemaRegistry | undefined = harness.createContext().itemSchemas;

// @ts-expect-error: the category must be one of the four
registry.parseWithCategory(one, 'messages');
// @ts-expect-error: the registry is read-only
registry.strictUnknownExtensions = true;

export { strictness, many, checked, structural, fromHarness, withLayers };

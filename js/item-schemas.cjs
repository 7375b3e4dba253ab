'use strict';
// Item schemas (spec §1.3): users' zod schemas, so JS; gates, returning an accepted item as given, never parsed.
// Consulted only where the native decision could differ (`gateOf`): a strict registry with `items` schemas.
const zod = require('zod');
const { NoeticErrorImpl } = require('./errors.cjs');

const z = zod.z ?? zod;
const CATEGORIES = ['items', 'developerMessages', 'toolCalls', 'toolResults'];
const BASE_TYPES = new Set([
  'message',
  'function_call',
  'function_call_output',
  'reasoning',
  'web_search_call',
  'file_search_call',
  'image_generation_call',
]);

const isKnownBaseType = (type) => BASE_TYPES.has(type) || type.startsWith('openrouter:');

const isItemLike = (value) => typeof value === 'object' && value !== null && typeof value.type === 'string' && value.type.length > 0;

const ItemSchema = z.custom(isItemLike, { message: 'Expected an Item object with a non-empty string "type" discriminant.' });

// Always fresh arrays, so a registry never shares the caller's.
function mergeExtensions(a, b) {
  const merged = {};
  for (const category of CATEGORIES) merged[category] = [...(a?.[category] ?? []), ...(b?.[category] ?? [])];
  return merged;
}

const hasSchemas = (extensions) => CATEGORIES.some((category) => extensions[category]?.length > 0);

function categoriesOf(value) {
  if (value.type === 'message' && value.role === 'developer') return ['items', 'developerMessages'];
  if (value.type === 'function_call') return ['items', 'toolCalls'];
  if (value.type === 'function_call_output') return ['items', 'toolResults'];
  return ['items'];
}

const accepts = (schemas, value) => schemas.some((schema) => schema.safeParse(value).success);

class ItemSchemaRegistry {
  constructor(extensions, opts) {
    this.extensions = mergeExtensions(undefined, extensions);
    this.strictUnknownExtensions = opts?.strictUnknownExtensions ?? true;
  }

  extend(extensions) {
    if (!extensions || !hasSchemas(extensions)) return this;
    return new ItemSchemaRegistry(mergeExtensions(this.extensions, extensions), { strictUnknownExtensions: this.strictUnknownExtensions });
  }

  parse(value) {
    const item = ItemSchema.parse(value);
    for (const category of categoriesOf(item)) {
      if (accepts(this.extensions[category], value)) return item;
    }
    if (this.strictUnknownExtensions && !isKnownBaseType(item.type)) {
      throw new NoeticErrorImpl({ kind: 'item_schema_mismatch', category: 'items', itemType: item.type });
    }
    return item;
  }

  parseMany(values) {
    return Array.from(values, (value) => this.parse(value));
  }

  parseWithCategory(value, category) {
    const schemas = this.extensions[category] ?? [];
    if (schemas.length === 0) return this.parse(value);
    if (accepts(schemas, value)) return ItemSchema.parse(value);
    throw new NoeticErrorImpl({ kind: 'item_schema_mismatch', category });
  }
}

const defaultItemSchemaRegistry = new ItemSchemaRegistry(undefined, { strictUnknownExtensions: true });

function extendedBy(base, owners) {
  let merged;
  for (const owner of owners) {
    if (owner?.itemSchemas != null) merged = mergeExtensions(merged, owner.itemSchemas);
  }
  return merged === undefined ? base : base.extend(merged);
}

// Undefined, allocating nothing, unless it may decide an item differently from the native check.
function gateOf(base, owners) {
  if (!base.strictUnknownExtensions) return undefined;
  if (base.extensions.items.length === 0 && !owners.some((owner) => owner?.itemSchemas?.items?.length > 0)) return undefined;
  return extendedBy(base, owners);
}

// Only when some are registered for `category`: otherwise `parse` admits the known types such items have.
function checkCategory(base, owners, category, item) {
  if (base.extensions[category].length === 0 && !owners.some((owner) => owner?.itemSchemas?.[category]?.length > 0)) return;
  extendedBy(base, owners).parseWithCategory(item(), category);
}

// True when it checked: the native side then admits their types as they are. Known types pass whatever the schemas say.
function admit(gate, items, where) {
  if (gate === undefined) return false;
  items.forEach((item, i) => {
    if (!isItemLike(item) || isKnownBaseType(item.type)) return;
    try {
      gate.parse(item);
    } catch (e) {
      if (where === undefined || !(e instanceof NoeticErrorImpl)) throw e;
      throw new NoeticErrorImpl(e.noeticError, `${where(i)}: ${e.message}`);
    }
  });
  return true;
}

module.exports = {
  isKnownBaseType,
  isItemLike,
  ItemSchema,
  ItemSchemaRegistry,
  defaultItemSchemaRegistry,
  extendedBy,
  gateOf,
  admit,
  checkCategory,
};

'use strict';
// Item schemas (spec §1.3): the structural check every item passes, and the registry of extension schemas that
// admit items of other types. Extension schemas are users' zod schemas, so this is JS. They are gates: an item a
// schema accepts is returned as it was given, never as the schema's parsed output.
//
// The native runtime makes the strict registry's decision on its own for every item it takes in (a known type is
// admitted, another is `item_schema_mismatch`, or anything is admitted when the harness is not strict). The
// registry only needs consulting where that decision could differ: a strict registry with `items` schemas, for an
// item of an unknown type. `gateOf` says when that is, so that a harness without extension schemas does no work here.
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

// Every category's list, `a`'s schemas first. Always four fresh arrays, so a registry never shares the caller's.
function mergeExtensions(a, b) {
  const merged = {};
  for (const category of CATEGORIES) merged[category] = [...(a?.[category] ?? []), ...(b?.[category] ?? [])];
  return merged;
}

const hasSchemas = (extensions) => CATEGORIES.some((category) => extensions[category]?.length > 0);

// The categories whose schemas may admit `value`: every item is in `items`; some known shapes are in one more.
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

  // A registry with `extensions`' schemas after this one's; this very registry when they add none.
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

  // Only `category`'s schemas decide, whatever the type; with none registered this is `parse`.
  parseWithCategory(value, category) {
    const schemas = this.extensions[category] ?? [];
    if (schemas.length === 0) return this.parse(value);
    if (accepts(schemas, value)) return ItemSchema.parse(value);
    throw new NoeticErrorImpl({ kind: 'item_schema_mismatch', category });
  }
}

const defaultItemSchemaRegistry = new ItemSchemaRegistry(undefined, { strictUnknownExtensions: true });

// `base` extended with the `itemSchemas` of `owners` (layers, then tools), in their order; `base` itself when
// they have none.
function extendedBy(base, owners) {
  let merged;
  for (const owner of owners) {
    if (owner?.itemSchemas != null) merged = mergeExtensions(merged, owner.itemSchemas);
  }
  return merged === undefined ? base : base.extend(merged);
}

// `extendedBy(base, owners)` when it may decide an item differently from the native check (it is strict and has
// `items` schemas); otherwise undefined, having allocated nothing.
function gateOf(base, owners) {
  if (!base.strictUnknownExtensions) return undefined;
  if (base.extensions.items.length === 0 && !owners.some((owner) => owner?.itemSchemas?.items?.length > 0)) return undefined;
  return extendedBy(base, owners);
}

// A `category` check of `item()` under `base` and `owners`' schemas, made only when some are registered for that
// category: without them the check is `parse`, which admits the known types such items have.
function checkCategory(base, owners, category, item) {
  if (base.extensions[category].length === 0 && !owners.some((owner) => owner?.itemSchemas?.[category]?.length > 0)) return;
  extendedBy(base, owners).parseWithCategory(item(), category);
}

// Puts `items` to `gate` (from `gateOf`) and says whether it did: the native side then admits their types as they
// are. Only items of unknown types are put to it, since the registry admits a known type whatever its schemas say.
// `where(i)` prefixes the message of a rejection with which item it was.
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
  CATEGORIES,
  extendedBy,
  gateOf,
  admit,
  checkCategory,
};

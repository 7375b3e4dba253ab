// schemas: ItemSchemaRegistry on random values: the default registry and registries extended with zod schemas per
// category (items, developerMessages, toolCalls, toolResults), strict or not; parse, parseMany and
// parseWithCategory on items of every known type, extension types, `openrouter:` types, and values that are no item
// (no type, an empty type, null, a number, an array). Whether each is accepted (and as the very object) or the
// error's name, kind and category; plus createMessage's shape and isNoeticError / isNoeticConfigError on the errors.
import { createRequire } from 'node:module';
import path from 'node:path';

export async function schemas(api, { next, pick }) {
  const { ItemSchemaRegistry, defaultItemSchemaRegistry, createMessage, isNoeticError, isNoeticConfigError } = api;
  const { z } = createRequire(path.join(process.env.NOETIC_UPSTREAM_PKG, 'package.json'))('zod');
  const lines = [];
  const values = () => pick([
    createMessage('hello', 'user'),
    createMessage('note', 'developer'),
    { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'hi' }] },
    { type: 'function_call', callId: 'c1', name: 'add', arguments: '{}' },
    { type: 'function_call_output', callId: 'c1', output: 'ok' },
    { type: 'reasoning', summary: [] },
    { type: 'web_search_call', id: 'w1' },
    { type: 'openrouter:annotation', data: 1 },
    { type: 'custom_note', text: 'mine', priority: 2 },
    { type: 'custom_note', text: 7 },
    { type: 'widget' },
    { type: '' },
    { text: 'no type' },
    null,
    42,
    [{ type: 'message' }],
  ]);
  const extension = () => pick([
    undefined,
    { items: [z.object({ type: z.literal('custom_note'), text: z.string() })] },
    { developerMessages: [z.object({ type: z.literal('message'), role: z.literal('developer'), content: z.string() })] },
    { toolCalls: [z.object({ type: z.literal('function_call'), name: z.enum(['add']) })] },
    { toolResults: [z.object({ type: z.literal('function_call_output'), output: z.string().min(3) })] },
  ]);
  const failure = (e) => [e?.name ?? typeof e, e?.noeticError?.kind ?? e?.code ?? null, e?.noeticError?.category ?? null, e?.noeticError?.itemType ?? null, isNoeticError(e), isNoeticConfigError(e)];
  for (let round = 0; round < 5; round++) {
    const strict = pick([undefined, true, false]);
    const ext = extension();
    let registry = pick(['default', 'new', 'extended']);
    registry = registry === 'default' ? defaultItemSchemaRegistry : registry === 'new' ? new ItemSchemaRegistry(ext, strict === undefined ? undefined : { strictUnknownExtensions: strict }) : defaultItemSchemaRegistry.extend(ext);
    for (let i = 0; i < 4; i++) {
      const value = values();
      const how = pick(['parse', 'parse', 'parseMany', 'parseWithCategory']);
      try {
        let out;
        if (how === 'parse') out = registry.parse(value);
        else if (how === 'parseMany') out = registry.parseMany([value, createMessage('x', 'user')])[0];
        else out = registry.parseWithCategory(value, pick(['items', 'developerMessages', 'toolCalls', 'toolResults']));
        lines.push(JSON.stringify([round, how, 'accepted', out === value, JSON.stringify(out) === JSON.stringify(value)]));
      } catch (e) {
        lines.push(JSON.stringify([round, how, 'refused', ...failure(e)]));
      }
    }
  }
  const message = createMessage(pick(['text', '']), pick(['user', 'developer']));
  lines.push(JSON.stringify(['createMessage', Object.keys(message).sort(), message.type, message.role, message.status, message.content, typeof message.id]));
  return lines;
}

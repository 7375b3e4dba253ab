// Item union narrowing, content parts and the message utilities.

import {
  createMessage,
  estimateTokens,
  findFunctionCall,
  stripUnresolvedToolCalls,
  type ContentPart,
  type ExecuteInput,
  type ExtendedItem,
  type FunctionCallItem,
  type FunctionCallOutputItem,
  type InputMessageItem,
  type Item,
  type ItemLog,
  type MessageItem,
  type OutputTextPart,
  type ReasoningItem,
  type StreamingItem,
} from '@noetic-tools/core';
import { z } from 'zod';

function assistantText(items: ReadonlyArray<Item>): string[] {
  const out: string[] = [];
  for (const item of items) {
    if (item.type === 'message' && item.role === 'assistant') {
      const msg: MessageItem = item;
      for (const part of msg.content) {
        if (part.type === 'output_text') {
          const text: string = part.text;
          out.push(text);
        } else if (part.type === 'refusal') {
          const refusal: string = part.refusal;
          out.push(`[refused] ${refusal}`);
        } else {
          // A part the provider's SDK did not recognize, as upstream types it.
          const unknownPart: { isUnknown: true; raw: unknown } = part;
          void unknownPart;
        }
      }
    }
  }
  return out;
}
void assistantText;

function describe(item: Item): string {
  switch (item.type) {
    case 'message':
      if (item.role === 'assistant') return `assistant:${item.content.length}`;
      // Input messages: user, system or developer, with input parts.
      for (const part of item.content) {
        if (part.type === 'input_text') return `${item.role}:${part.text}`;
        if (part.type === 'input_image') return `${item.role}:image:${part.imageUrl}`;
      }
      return item.status;
    case 'function_call': {
      const call: FunctionCallItem = item;
      return `${call.name}(${call.arguments}) #${call.callId}`;
    }
    case 'function_call_output': {
      const out: FunctionCallOutputItem = item;
      return `${out.callId} -> ${out.output}`;
    }
    case 'reasoning': {
      const r: ReasoningItem = item;
      return r.summary.map((s) => s.text).join(' ');
    }
    case 'web_search_call':
    case 'file_search_call':
    case 'image_generation_call':
      return item.id;
    default: {
      // Vendor-namespaced server tool items remain.
      const vendor: `${string}:${string}` = item.type;
      return vendor;
    }
  }
}
void describe;

// Content parts across roles.
const parts: ContentPart[] = [
  { type: 'output_text', text: 'hi', annotations: [{ type: 'url_citation', url: 'https://x', title: 'X', startIndex: 0, endIndex: 2 }] },
  { type: 'refusal', refusal: 'no' },
  { type: 'input_text', text: 'hello' },
  { type: 'input_image', imageUrl: 'data:', detail: 'low' },
  { type: 'input_file', fileId: null, filename: 'a.txt' },
];
const firstText = parts.find((p): p is OutputTextPart => p.type === 'output_text');
void firstText;

// Item literals, as tests and fixtures write them.
const user: InputMessageItem = createMessage('hello', 'user');
const assistant: MessageItem = {
  id: 'm1',
  type: 'message',
  role: 'assistant',
  status: 'completed',
  content: [{ type: 'output_text', text: 'hi' }],
};
const call: FunctionCallItem = { id: 'c1', type: 'function_call', callId: 'x', name: 't', arguments: '{}' };
const output: FunctionCallOutputItem = {
  id: 'o1',
  type: 'function_call_output',
  status: 'completed',
  callId: 'x',
  output: 'ok',
};
const vendor: Item = { type: 'openrouter:datetime', id: 'v1', result: '2025-01-01' };
const history: Item[] = [user, assistant, call, output, vendor];

const kept: Item[] = stripUnresolvedToolCalls(history);
const args: Record<string, unknown> | null = findFunctionCall(kept, 't');
const tokens: number = estimateTokens(JSON.stringify(kept));
void [args, tokens];

const inputs: ExecuteInput[] = ['text', user, history];
void inputs;

const log: ItemLog = { items: history, append: () => {} };
void log.items[0]?.type;

const streamed: StreamingItem = { ...assistant, isComplete: false };
void streamed;

// Extension schemas widen the item type.
const annotation = z.object({ type: z.literal('noetic:annotation'), note: z.string() });
type WithAnnotation = ExtendedItem<{ items: [typeof annotation] }>;
const extended: WithAnnotation = { type: 'noetic:annotation', note: 'n' };
void extended;

// -----------------------------------------------------------------------------
// Negative checks
// -----------------------------------------------------------------------------

function negatives(item: Item): void {
  // @ts-expect-error `role` is not on every item
  void item.role;
  if (item.type === 'message' && item.role === 'assistant') {
    // @ts-expect-error assistant messages carry output parts, not input parts
    const p: 'input_text' = item.content[0]!.type;
    void p;
  }
  if (item.type === 'function_call_output') {
    // @ts-expect-error outputs have no name
    void item.name;
  }
}
void negatives;

// @ts-expect-error only user and developer messages can be created
createMessage('x', 'assistant');

// @ts-expect-error an item type without a namespace is not a known item
const unknownItem: Item = { type: 'mystery', id: 'z' };
void unknownItem;

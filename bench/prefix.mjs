// The arithmetic of a repeated request start (issue 55), shared by bench/prefix-cache.mjs and the fake prefix-caching
// provider the tests use (__test__/fixtures/prefix-cache-server.mjs), so that the figure the benchmark reports and
// the cached tokens the fake server bills are counted the same way.
//
// A request is read as a prompt-caching provider reads it: the tools, then the instructions, then the input items in
// order, each as the JSON the wire carries, one per line. The repeated start of a request is the longest run of
// characters at its start equal to the previous request's; what a provider bills as cached is that run counted in
// whole blocks of tokens, tokens estimated as characters / 4 (as `estimateTokens` does).

// The text a provider would cache on, from a Responses API body (or the same shape built from a model request).
export function promptText({ tools, instructions, input }) {
  const lines = [];
  if (tools?.length) lines.push(JSON.stringify(tools));
  lines.push(instructions ?? '');
  for (const item of input ?? []) lines.push(JSON.stringify(item));
  return lines.join('\n');
}

// How many characters `a` and `b` share at their start.
export function sharedStart(a, b) {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  return i;
}

// Tokens in `chars` characters, rounded up as `estimateTokens` rounds.
export const tokensOf = (chars) => Math.ceil(chars / 4);

// The tokens a prefix-caching provider serves from cache when `sharedChars` characters repeat: whole `block`s of
// the repeated start's tokens (rounded down, a partial block is not cached), none below `minTokens`.
export function cachedTokens(sharedChars, { block = 128, minTokens = 0 } = {}) {
  const blocks = Math.floor(Math.floor(sharedChars / 4) / block) * block;
  return blocks >= minTokens ? blocks : 0;
}

// A model request's items (as the log holds them, camelCase) in the shape the OpenRouter provider sends them
// (crates/noetic-runtime/src/provider/wire.rs): system messages join the instructions, every message goes as
// `{ role, content }` with its text parts joined, other items as they are. Enough for messages-only threads.
export function wireRequest({ instructions, items }) {
  const textOf = (content) => (typeof content === 'string' ? content : (content ?? []).map((part) => part.text ?? '').join(''));
  const system = [];
  const input = [];
  for (const item of items) {
    if (item.type === 'message' && item.role === 'system') system.push(textOf(item.content));
    else if (item.type === 'message') input.push({ role: item.role, content: textOf(item.content) });
    else input.push(item);
  }
  const parts = [instructions, system.length ? system.join('\n\n') : undefined].filter((part) => part);
  return { instructions: parts.length ? parts.join('\n\n') : undefined, input };
}

// The `q` quantile of a list of numbers (the element at floor(q * n) of it sorted).
export function quantile(xs, q) {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

export const mean = (xs) => xs.reduce((sum, x) => sum + x, 0) / xs.length;

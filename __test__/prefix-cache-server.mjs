// A fake prefix-caching provider for the tests (issue 55): OpenRouter's Responses API (fake-openrouter.mjs) whose
// usage says how much of each request a provider that caches repeated starts would serve from cache.
//
// Per conversation key (the request's `prompt_cache_key`, else its `user`, else one conversation for the server),
// the server keeps the text of the previous request (bench/prefix.mjs's `promptText`: tools, instructions, input
// items as JSON lines) and counts the characters the new request repeats of its start; the cached tokens are those
// characters in whole blocks (`block` tokens, default 128, tokens = characters / 4), none below `minTokens`. With
// `reports: true` (the default) they go where OpenAI and OpenRouter put them, `usage.input_tokens_details.
// cached_tokens`; with `reports: false` the usage has no details at all (a provider that never reports caching).
//
// Every request is recorded in `requests`: its key, body and headers, its prompt text and length, the characters
// it shared with the previous one, the input and cached tokens counted, and every `cache_control` directive found
// anywhere in the body (with its path), so that tests can assert what was asked of the cache.
import { fakeResponsesServer } from './fake-openrouter.mjs';
import { cachedTokens, promptText, sharedStart, tokensOf } from '../bench/prefix.mjs';

// Every `cache_control` in `value` with the path to it (`input.3.content.0`); `[]` for the body's own.
export function cacheDirectives(value, path = []) {
  if (!value || typeof value !== 'object') return [];
  const found = [];
  for (const [key, inner] of Object.entries(value)) {
    if (key === 'cache_control') found.push({ path: path.join('.'), directive: inner });
    else found.push(...cacheDirectives(inner, [...path, key]));
  }
  return found;
}

export async function prefixCacheServer({ reports = true, block = 128, minTokens = 0, reply = (n) => `answer ${n}` } = {}) {
  const previous = new Map();
  const requests = [];
  const fake = await fakeResponsesServer(({ body, headers }, n) => {
    const key = body.prompt_cache_key ?? body.user ?? '';
    const prompt = promptText(body);
    const sharedChars = previous.has(key) ? sharedStart(previous.get(key), prompt) : 0;
    previous.set(key, prompt);
    const counted = { inputTokens: tokensOf(prompt.length), cachedTokens: cachedTokens(sharedChars, { block, minTokens }) };
    requests.push({ key, body, headers, prompt, chars: prompt.length, sharedChars, ...counted, cacheControl: cacheDirectives(body) });
    const text = reply(n);
    const usage = { input_tokens: counted.inputTokens, output_tokens: tokensOf(text.length), total_tokens: counted.inputTokens + tokensOf(text.length) };
    if (reports) usage.input_tokens_details = { cached_tokens: counted.cachedTokens };
    const message = { type: 'message', id: `msg_${n}`, status: 'completed', role: 'assistant', content: [{ type: 'output_text', text, annotations: [] }] };
    return { body: { id: `resp_${n}`, status: 'completed', output: [message], usage } };
  });
  return { ...fake, requests };
}

'use strict';
// `createOpenRouterEmbed(apiKey, model?)`: an EmbedFn whose HTTP call runs natively (OPENROUTER_BASE_URL, as the
// provider reads it, points it elsewhere).
const { NoeticConfigError, callNative } = require('./errors.cjs');
const native = require('./native.cjs');

function createOpenRouterEmbed(apiKey, embeddingModel) {
  if (!apiKey) {
    throw new NoeticConfigError({
      code: 'MISSING_API_KEY',
      message: 'createOpenRouterEmbed() requires an OpenRouter API key.',
      hint: 'Pass the key explicitly, e.g. createOpenRouterEmbed(process.env.OPENROUTER_API_KEY).',
    });
  }
  const embedder = callNative(() => new native.NativeEmbedder(String(apiKey), embeddingModel, process.env.OPENROUTER_BASE_URL));
  return (texts) => embedder.embed(Array.from(texts, String));
}

module.exports = { createOpenRouterEmbed };

'use strict';
// Conditions for routing; `cosineSimilarity` stays in JS: one comparison costs less than a crossing (DECISIONS A3c, G6).
const { createMessage } = require('./items.cjs');

function cosineSimilarity(a, b) {
  if (a.length !== b.length) throw new Error(`Dimension mismatch: ${a.length} vs ${b.length}`);
  let dot = 0;
  let normA = 0;
  let normB = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i] * b[i];
    normA += a[i] * a[i];
    normB += b[i] * b[i];
  }
  const magnitude = Math.sqrt(normA * normB);
  return magnitude === 0 ? 0 : dot / magnitude;
}

const textOf = (input) => (typeof input === 'string' ? input : JSON.stringify(input));
const labelKey = (label) => `embed:${encodeURIComponent(label)}`;

// From the storage cache when given (embedding only the missing ones), else embedded once and kept.
function labelVectors(embed, labels, cache) {
  let kept = null;
  return async () => {
    if (cache) {
      const keys = labels.map(labelKey);
      const stored = await Promise.all(keys.map((key) => cache.get(key)));
      const missing = stored.flatMap((vector, i) => (vector ? [] : [i]));
      if (missing.length > 0) {
        const fresh = (await embed(missing.map((i) => labels[i]))).map((vector) => Array.from(vector));
        await Promise.all(missing.map((i, j) => cache.set(keys[i], fresh[j])));
        missing.forEach((i, j) => (stored[i] = fresh[j]));
      }
      return stored;
    }
    kept ??= await embed(labels);
    return kept;
  };
}

const when = (condition, step) => ({ kind: 'when', condition, step });
const otherwise = (step) => ({ kind: 'otherwise', step });

function semanticRoute(...clauses) {
  return async (input, ctx) => {
    for (const clause of clauses) {
      if (clause.kind === 'otherwise' || (await clause.condition(input, ctx))) return clause.step;
    }
    return null;
  };
}

function semanticSwitch(opts) {
  const threshold = opts.threshold ?? 0.7;
  const cases = Array.isArray(opts.cases)
    ? opts.cases.map((c) => ({ labels: Array.isArray(c.labels) ? c.labels : [c.labels], step: c.step }))
    : Object.entries(opts.cases).map(([label, step]) => ({ labels: [label], step }));
  const labels = cases.flatMap((c) => c.labels);
  const caseOf = cases.flatMap((c, i) => c.labels.map(() => i));
  const vectors = labelVectors(opts.embed, labels, opts.cache);
  return async (input) => {
    const [inputVector] = await opts.embed([textOf(input)]);
    const known = await vectors();
    let best = Number.NEGATIVE_INFINITY;
    let bestCase = -1;
    known.forEach((vector, i) => {
      const score = cosineSimilarity(inputVector, vector);
      if (score > best) {
        best = score;
        bestCase = caseOf[i];
      }
    });
    if (best < threshold) return opts.default ?? null;
    return cases[bestCase].step;
  };
}

function embeddingMatch(embedOrOpts, label, threshold) {
  if (typeof embedOrOpts === 'function') {
    const embed = embedOrOpts;
    if (label === undefined || threshold === undefined) throw new Error('embeddingMatch: label and threshold are required in simple form');
    let labelVector = null;
    return async (input) => {
      if (!labelVector) {
        // The first call embeds the input and the label together.
        const [inputVector, vector] = await embed([textOf(input), label]);
        labelVector = vector;
        return cosineSimilarity(inputVector, vector) >= threshold;
      }
      const [inputVector] = await embed([textOf(input)]);
      return cosineSimilarity(inputVector, labelVector) >= threshold;
    };
  }
  const opts = embedOrOpts;
  const vectors = labelVectors(opts.embed, opts.labels, opts.cache);
  return async (input) => {
    const [inputVector] = await opts.embed([textOf(input)]);
    const close = (vector) => cosineSimilarity(inputVector, vector) >= opts.threshold;
    const known = await vectors();
    return (opts.match ?? 'any') === 'any' ? known.some(close) : known.every(close);
  };
}

function anyCondition(...conditions) {
  return async (input, ctx) => {
    for (const condition of conditions) if (await condition(input, ctx)) return true;
    return false;
  };
}

function allCondition(...conditions) {
  return async (input, ctx) => {
    for (const condition of conditions) if (!(await condition(input, ctx))) return false;
    return true;
  };
}

// Anything but `{"answer": true|false}` is no; its usage counts in the context's.
function aiCondition(opts) {
  return async (input, ctx) => {
    const question = `You are a boolean classifier. Given the user's input, answer the following question with JSON: {"answer": true} or {"answer": false}.\n\nQuestion: ${opts.prompt}`;
    const response = await ctx.harness.callModel({
      model: opts.model,
      items: [createMessage(question, 'developer'), createMessage(textOf(input), 'user')],
      params: { temperature: 0 },
    });
    ctx._trackUsage?.(response);
    const answer = response.items.findLast((item) => item.type === 'message' && item.role === 'assistant');
    const text = (Array.isArray(answer?.content) ? answer.content : []).filter((part) => part.type === 'output_text').map((part) => part.text).join('');
    try {
      const parsed = JSON.parse(text);
      return typeof parsed?.answer === 'boolean' ? parsed.answer : false;
    } catch {
      return false;
    }
  };
}

module.exports = { cosineSimilarity, when, otherwise, semanticRoute, semanticSwitch, embeddingMatch, anyCondition, allCondition, aiCondition };

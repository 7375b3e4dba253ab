'use strict';
// Conditions for routing: clauses a `semanticRoute` tries in order, embedding matches, their combinators and an
// LLM yes/no. They run user code (embedders, a model) and return JS steps, so they are JS; `cosineSimilarity`
// stays in JS too (DECISIONS A3c, G6): one comparison costs less than a crossing.
const { createMessage } = require('./items.cjs');

// The cosine of the angle between two vectors of one dimension; 0 when either has no length.
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

// The labels' vectors: from the storage cache when given (embedding only the missing ones, then storing them),
// else embedded once and kept.
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

// A route: the step of the first clause whose condition holds (an `otherwise` always does), else null.
function semanticRoute(...clauses) {
  return async (input, ctx) => {
    for (const clause of clauses) {
      if (clause.kind === 'otherwise' || (await clause.condition(input, ctx))) return clause.step;
    }
    return null;
  };
}

// A route by meaning: the case whose label embeds closest to the input, if close enough (`threshold`, 0.7 by
// default), else `default` or null. `cases` maps labels to steps, or lists `{ labels, step }`.
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

// Whether the input is close in meaning to a label: `embeddingMatch(embed, label, threshold)`, or
// `embeddingMatch({ embed, labels, threshold, match: 'any' | 'all', cache })`.
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

// An LLM's yes or no on `prompt` about the input: the model answers `{"answer": true|false}`; anything else is no.
// Its usage counts in the context's.
function aiCondition(opts) {
  return async (input, ctx) => {
    const question = `You are a boolean classifier. Given the user's input, answer the following question with JSON: {"answer": true} or {"answer": false}.\n\nQuestion: ${opts.prompt}`;
    const response = await ctx.harness.callModel({
      model: opts.model,
      items: [createMessage(question, 'developer'), createMessage(textOf(input), 'user')],
      params: { temperature: 0 },
    });
    ctx._trackUsage?.(response);
    // The text of the last assistant message.
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

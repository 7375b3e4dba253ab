'use strict';
// Conditions and their math. `cosineSimilarity` stays in JS (DECISIONS A3c): one comparison costs less than a
// crossing would.

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

module.exports = { cosineSimilarity };

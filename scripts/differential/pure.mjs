// pure: the exported functions that compute without running anything, on random inputs: allocateBudgets (layer
// budgets of every form, total and reserves including 0 and Infinity), assembleView (with and without a policy,
// every overflow kind, a window), stripUnresolvedToolCalls and findFunctionCall on item lists with paired and
// orphan calls, historyWindow's projectHistory, estimateTokens, cosineSimilarity; each result or error by name.
// Some inputs are hostile: negative and fractional numbers, Infinity, empty lists, strings with astral characters.
// Left out, as a decided difference: assembleView's windowSize under truncate or summarize (founding D10: only
// sliding_window keeps to a window).
export async function pure(api, { next, pick }) {
  const core = api;
  const unstable = api.__unstable;
  const { allocateBudgets, assembleView } = unstable;
  const lines = [];
  const record = (what, run) => {
    try {
      lines.push(JSON.stringify([what, run()]));
    } catch (e) {
      lines.push(JSON.stringify([what, 'threw', e?.code ?? e?.name, String(e?.message ?? e).slice(0, 120)]));
    }
  };
  const num = () => pick([0, 1, 7, 40, 100, 250, 1000, 4000, 0.5, Infinity, -5]);
  const text = () => pick(['hi', 'a longer sentence of words', '😀 astral', 'x'.repeat(pick([10, 200, 900])), '']);
  const item = (i, calls) => {
    switch (pick(['user', 'assistant', 'system', 'developer', 'call', 'output', 'output', 'reasoning'])) {
      case 'call': {
        const id = `c${i}`;
        calls.push(id);
        return { type: 'function_call', id: `fc${i}`, callId: id, name: pick(['add', 'echo']), arguments: pick(['{"a":1}', '[]', 'not json', '{}']), status: 'completed' };
      }
      case 'output':
        return { type: 'function_call_output', id: `fo${i}`, callId: calls.length && next() < 0.7 ? pick(calls) : `orphan${i}`, output: text() };
      case 'reasoning':
        return { type: 'reasoning', id: `r${i}`, summary: [{ type: 'summary_text', text: text() }] };
      default: {
        const role = pick(['user', 'assistant', 'system', 'developer']);
        return { type: 'message', id: `m${i}`, role, status: 'completed', content: [{ type: role === 'assistant' ? 'output_text' : 'input_text', text: text() }] };
      }
    }
  };
  const items = (n) => {
    const calls = [];
    return Array.from({ length: n }, (_, i) => item(i, calls));
  };
  const ids = (list) => list.map((it) => it.id);
  for (let round = 0; round < 6; round++) {
    const layers = Array.from({ length: Math.floor(next() * 4) }, (_, i) => ({ id: `l${i}`, slot: 10 * i, scope: 'execution', budget: pick([num(), { min: num(), max: num() }, { min: 5, max: Infinity }, undefined]), hooks: {} }));
    record('allocateBudgets', () => {
      const out = allocateBudgets({ layers, totalBudget: num(), systemPromptTokens: pick([0, 10, 300]), responseReserve: pick([0, 100, 4000]) });
      return [out.allocations.map((a) => [a.layerId, a.min, a.max, a.allocated]), out.historyBudget];
    });
    const system = items(Math.floor(next() * 2)).map((it, i) => ({ type: 'message', id: `s${round}${i}`, role: 'system', status: 'completed', content: [{ type: 'input_text', text: text() }] }));
    const layerItems = items(Math.floor(next() * 3));
    const history = items(Math.floor(next() * 12));
    // A window only with sliding_window: under truncate and summarize it does not apply here (founding D10).
    const overflow = pick(['truncate', 'sliding_window', 'summarize']);
    const policy = pick([undefined, { tokenBudget: num(), responseReserve: pick([0, 50, 500]), overflow, ...(overflow === 'sliding_window' && next() < 0.6 ? { windowSize: pick([0, 1, 3, 8]) } : {}) }]);
    record('assembleView', () => [policy ?? null, ids(system), ids(layerItems), ids(history), ids(assembleView({ systemPromptItems: system, layerOutputItems: layerItems, historyItems: history, policy }))]);
    record('strip', () => ids(core.stripUnresolvedToolCalls(history)));
    record('findFunctionCall', () => core.findFunctionCall(history, pick(['add', 'echo', 'none']))?.id ?? null);
    const layer = core.historyWindow({ maxItems: pick([2, 3, 5, 40]) });
    lines.push(JSON.stringify(['projectHistory', ids((await layer.hooks.projectHistory({ items: history, state: undefined, ctx: {} }))?.items ?? [])]));
    record('estimateTokens', () => [core.estimateTokens(text()), core.estimateTokens(JSON.stringify(history))]);
    const dims = pick([1, 3, 8]);
    const vec = () => Array.from({ length: dims }, () => pick([0, 1, -1, 0.5, 3, 1e-9]));
    record('cosineSimilarity', () => core.cosineSimilarity(vec(), next() < 0.1 ? [1] : vec()));
  }
  return lines;
}

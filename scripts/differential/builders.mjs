// builders: each step builder and tool() given options with one of the defects upstream's builders check (an id
// missing, empty or blank, the function or step it cannot run without missing, an every interval or jitter that is
// negative or not finite), or none: what is thrown (its name, code, message and hint), or the kind of what is built
// (and, for an LLM step, what running it gives).

const fn = () => async (x) => x;

const model = async () => ({ items: [{ type: 'message', id: 'a', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'ok', annotations: [] }] }], usage: { inputTokens: 1, outputTokens: 1 } });

async function ranLlm(AgentHarness, llm) {
  try {
    const harness = new AgentHarness({ name: 'b', params: {}, _testCallModel: model });
    return ['ok', await harness.run(llm, 'hi', harness.createContext())];
  } catch (e) {
    return ['threw', e?.name, e?.code, e?.message, e?.hint];
  }
}

export async function builders({ AgentHarness, step, tool, loop, spawn, branch, fork, provide, every, until }, { next, pick }) {
  const body = () => step.run({ id: 'body', execute: fn() });
  const BUILDERS = {
    'step.run': [(o) => step.run(o), () => ({ execute: fn() }), ['execute']],
    'step.llm': [(o) => step.llm(o), () => ({ model: pick(['m', () => 'm']) }), ['model']],
    'step.tool': [(o) => step.tool(o), () => ({ tool: tool({ name: 't', description: 'd', execute: fn() }) }), ['tool']],
    loop: [(o) => loop(o), () => ({ steps: [body()], until: until.maxSteps(2) }), ['steps', 'until']],
    spawn: [(o) => spawn(o), () => ({ child: body() }), ['child']],
    branch: [(o) => branch(o), () => ({ route: () => null }), ['route']],
    fork: [(o) => fork(o), () => ({ mode: pick(['all', 'settle']), paths: () => [], merge: (r) => r }), ['merge']],
    provide: [(o) => provide(o), () => ({ child: body(), memory: [] }), ['child']],
    every: [(o) => every(o), () => ({ step: body(), ms: pick([0, 5, 1000]) }), ['step', 'ms', 'jitter']],
  };
  const lines = [];
  for (let i = 0; i < 24; i++) {
    const name = pick([...Object.keys(BUILDERS), 'tool']);
    let build;
    let opts;
    let fields;
    if (name === 'tool') {
      build = (o) => tool(o);
      opts = { name: 'echo', description: 'd', execute: fn() };
      fields = ['name', 'execute'];
    } else {
      const [make, defaults, needed] = BUILDERS[name];
      build = make;
      opts = { id: `s${i}`, ...defaults() };
      fields = ['id', ...needed];
    }
    const defect = pick(['none', 'missing', 'empty', 'blank', 'negative', 'not finite']);
    const field = pick(fields);
    if (defect === 'missing') delete opts[field];
    else if (['empty', 'blank'].includes(defect) && ['id', 'name', 'model'].includes(field)) opts[field] = defect === 'empty' ? '' : '  ';
    else if (defect === 'negative' && ['ms', 'jitter'].includes(field)) opts[field] = -1 - Math.floor(next() * 5);
    else if (defect === 'not finite' && ['ms', 'jitter'].includes(field)) opts[field] = pick([NaN, Infinity, -Infinity]);
    try {
      const built = build(opts);
      lines.push([i, name, defect, field, 'built', built.kind ?? typeof built.execute]);
      // An LLM step built without a model fails when it runs, as one whose getter answers none.
      if (built.kind === 'llm') lines.push([i, 'ran', await ranLlm(AgentHarness, built)]);
    } catch (e) {
      lines.push([i, name, defect, field, 'threw', e?.name, e?.code, e?.message, e?.hint]);
    }
  }
  return lines.map((line) => JSON.stringify(line));
}

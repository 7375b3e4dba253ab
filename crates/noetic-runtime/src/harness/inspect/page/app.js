'use strict';
// The inspector's page: one snapshot at load, then the live feed of model calls (server-sent events). Everything the
// harness recorded is shown as text (textContent), never as markup.
(() => {
  const token = new URLSearchParams(location.search).get('token') ?? '';
  const api = (path, params = {}) => `${path}?${new URLSearchParams({ ...params, token })}`;
  const PALETTE = ['#e07a5f', '#81b29a', '#f2cc8f', '#3d5a80', '#c06c84', '#6c5b7b', '#f67280', '#355c7d', '#99b898', '#e84a5f', '#2a9d8f', '#e9c46a'];

  const model = { harness: '', layers: [], limits: { turnsPerThread: 20, threads: 200 }, threads: new Map() };
  let selectedThread = null;
  // The turn the user clicked; none follows the newest as turns arrive.
  let selectedTurn = null;
  const opened = new Map(); // call id -> its whole record, once fetched

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs ?? {})) {
      if (value === undefined || value === null || value === false) continue;
      if (key === 'class') node.className = value;
      else if (key === 'style') Object.assign(node.style, value);
      else if (key.startsWith('on')) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? '' : String(value));
    }
    for (const child of children.flat()) {
      if (child === undefined || child === null || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  const fmt = (n) => (n === null || n === undefined ? '—' : Number.isFinite(n) ? Math.round(n * 10) / 10 : String(n));
  const ms = (n) => `${n < 10 ? n.toFixed(2) : Math.round(n)} ms`;
  const layerInfo = (id) => model.layers.find((l) => l.id === id) ?? { id, name: id };
  const colour = (id) => {
    const i = model.layers.findIndex((l) => l.id === id);
    return PALETTE[(i < 0 ? id.length : i) % PALETTE.length];
  };

  const seen = new Set();
  // Files summaries of calls into their thread and turn, keeping what the recorder keeps. The feed opens before the
  // snapshot is read, so a call may come twice: once is enough.
  function addCalls(calls) {
    for (const call of calls) {
      if (seen.has(call.id)) continue;
      seen.add(call.id);
      let thread = model.threads.get(call.threadId);
      if (!thread) {
        thread = { threadId: call.threadId, turns: [] };
        model.threads.set(call.threadId, thread);
      }
      let turn = thread.turns.find((t) => t.turn === call.turn);
      if (!turn) {
        turn = { turn: call.turn, startedAt: call.at, calls: [] };
        thread.turns.push(turn);
        if (thread.turns.length > model.limits.turnsPerThread) thread.turns.shift();
      }
      turn.calls.push(call);
      turn.calls.sort((a, b) => a.id - b.id);
      thread.turns.sort((a, b) => a.startedAt - b.startedAt);
      thread.last = Math.max(thread.last ?? 0, call.at);
    }
  }

  async function load() {
    const response = await fetch(api('/api/snapshot'));
    if (!response.ok) throw new Error(await response.text());
    const snapshot = await response.json();
    model.harness = snapshot.harness;
    model.layers = snapshot.layers;
    model.limits = snapshot.recorder.limits;
    for (const thread of snapshot.recorder.threads.slice().reverse()) {
      for (const turn of thread.turns) addCalls(turn.calls);
    }
    document.getElementById('harness').textContent = model.harness ? `· ${model.harness}` : '';
    render();
  }

  function listen() {
    const live = document.getElementById('live');
    const events = new EventSource(api('/api/events'));
    events.addEventListener('open', () => {
      live.textContent = 'live';
      live.classList.remove('off');
    });
    events.addEventListener('error', () => {
      live.textContent = 'reconnecting';
      live.classList.add('off');
    });
    events.addEventListener('calls', (event) => {
      addCalls(JSON.parse(event.data));
      render();
    });
  }

  function render() {
    const nav = document.getElementById('threads');
    const threads = [...model.threads.values()].sort((a, b) => b.last - a.last);
    if (threads.length === 0) return;
    if (selectedThread === null || !model.threads.has(selectedThread)) selectedThread = threads[0].threadId;
    nav.replaceChildren(
      ...threads.map((t) => {
        const calls = t.turns.reduce((n, turn) => n + turn.calls.length, 0);
        return el('button', { class: t.threadId === selectedThread ? 'selected' : '', 'data-thread': t.threadId, onclick: () => select(t.threadId) },
          t.threadId, el('small', {}, `${t.turns.length} turn${t.turns.length === 1 ? '' : 's'} · ${calls} model call${calls === 1 ? '' : 's'}`));
      }),
    );
    renderThread(model.threads.get(selectedThread));
  }

  function select(threadId) {
    selectedThread = threadId;
    selectedTurn = null;
    render();
  }

  // The window of one call as parts of its token budget: system, tools, each layer, history, the response reserve.
  function parts(call) {
    const w = call.window;
    const out = [{ key: 'system', label: 'system prompt', tokens: w.systemTokens, colour: 'var(--system)' }, { key: 'tools', label: 'tools', tokens: w.toolsTokens, colour: 'var(--tools)' }];
    for (const layer of call.layers) {
      if (layer.used) out.push({ key: layer.id, label: layerInfo(layer.id).name, tokens: layer.used, colour: colour(layer.id) });
    }
    out.push({ key: 'history', label: 'history', tokens: w.historyTokens, colour: 'var(--history)' });
    out.push({ key: 'reserve', label: 'response reserve', tokens: w.responseReserve, colour: 'var(--reserve)' });
    return out;
  }

  function renderThread(thread) {
    const section = document.getElementById('thread');
    const turns = thread.turns;
    const turn = turns.find((t) => t.turn === selectedTurn) ?? turns.at(-1);
    const budgetOf = (call) => Math.max(call.window.tokenBudget, 1);
    const columns = turns.flatMap((t, ti) =>
      t.calls.map((call) =>
        el('div', { class: `col${t === turn ? ' selected' : ''}`, title: `turn ${ti + 1}, ${call.stepId}`, 'data-turn': ti + 1, onclick: () => { selectedTurn = t === turns.at(-1) ? null : t.turn; render(); } },
          parts(call).map((p) => el('span', { title: `${p.label}: ${fmt(p.tokens)} tokens`, style: { height: `${(100 * p.tokens) / budgetOf(call)}%`, background: p.colour } }))),
      ),
    );
    const legend = el('div', { class: 'legend' },
      [['system prompt', 'var(--system)'], ['tools', 'var(--tools)'], ...model.layers.map((l) => [l.name, colour(l.id)]), ['history', 'var(--history)'], ['response reserve', 'var(--reserve)']].map(([label, c]) => el('span', {}, el('i', { style: { background: c } }), label)));
    const index = turns.indexOf(turn);
    section.replaceChildren(
      el('h2', {}, `Thread ${thread.threadId}`),
      el('h3', {}, 'Window over the turns kept (each column a model call, against its token budget)'),
      el('div', { class: 'turns', 'data-testid': 'turns' }, columns),
      legend,
      el('h2', { 'data-testid': 'turn-title' }, `Turn ${index + 1} of ${turns.length}`, el('span', { class: 'note' }, `  · ${new Date(turn.startedAt).toLocaleTimeString()}`)),
      ...turn.calls.map(renderCall),
      renderStates(thread.threadId),
    );
  }

  function renderCall(call) {
    const budget = Math.max(call.window.tokenBudget, 1);
    const used = parts(call);
    const bar = el('div', { class: 'bar', 'data-testid': 'window-bar' },
      used.map((p) => el('span', { title: `${p.label}: ${fmt(p.tokens)} tokens`, 'data-part': p.key, style: { width: `${(100 * p.tokens) / budget}%`, background: p.colour } })));
    const layerRows = call.layers.map((layer) => {
      const info = layerInfo(layer.id);
      const failed = layer.status === 'error' || layer.status === 'timeout';
      return el('tr', { class: failed ? 'failed' : '', 'data-layer': layer.id },
        el('td', {}, el('i', { style: { display: 'inline-block', width: '.6rem', height: '.6rem', background: colour(layer.id), marginRight: '.4rem' } }), info.name, info.name !== layer.id ? el('span', { class: 'note' }, ` (${layer.id})`) : null),
        el('td', { class: 'num' }, fmt(layer.slot)),
        el('td', {}, layer.scope),
        el('td', {}, layer.recallMode),
        el('td', { class: 'num', 'data-budget': '' }, fmt(layer.budget)),
        el('td', { class: `num${layer.used > layer.budget ? ' over' : ''}`, 'data-used': layer.used ?? '', title: layer.used > layer.budget ? 'over its budget' : null }, fmt(layer.used)),
        el('td', { class: 'num' }, fmt(layer.yielded)),
        el('td', { class: 'num' }, `${layer.kept}/${layer.items}`),
        el('td', {}, el('span', { class: `status ${layer.status}`, 'data-status': layer.status, title: layer.error ?? '' }, layer.status === 'none' ? 'no recall' : layer.status), layer.error ? el('div', { class: 'note' }, layer.error) : null),
      );
    });
    const h = call.history;
    const history = el('p', { 'data-testid': 'history' },
      `History: kept ${h.kept} of ${h.total} items (${fmt(call.window.historyTokens)} tokens)`,
      h.dropped ? `, dropped ${h.dropped}` : ', nothing dropped',
      ` · overflow: ${h.overflow}`,
      h.summarized ? ' · an overflow summary stands for older history' : '',
      h.projected ? ' · a layer projected the history' : '');
    const steering = call.steering
      ? el('p', {}, 'afterModelCall: ', el('span', { class: `status ${call.steering.action}` }, call.steering.action), ` by ${call.steering.by.join(', ') || '—'}`, call.steering.guidance ? ` — ${call.steering.guidance}` : '')
      : null;
    // With contextCache: the epoch behind the call, why it began, what repeated the previous request, each band.
    const c = call.cache;
    const cache = c
      ? el('p', { 'data-testid': 'cache' }, `Prompt cache: epoch ${c.epoch}, call ${c.age} of it${c.reanchorReason ? ` (began: ${c.reanchorReason})` : ''}`,
        ` · ${fmt(c.repeatedTokens)} tokens repeat the previous request · anchor ${fmt(c.anchorTokens)}, live ${fmt(c.liveTokens)}, updates ${fmt(c.updateTokens)}`,
        ` · ${c.bands.map(([id, band, served]) => `${id}: ${band}, ${served}`).join('; ') || 'no layers'}`)
      : null;
    const tools = call.toolCalls.length
      ? el('table', { 'data-testid': 'tool-calls' }, el('tr', {}, el('th', {}, 'Tool call'), el('th', {}, 'Arguments'), el('th', {}, 'Steering')),
        call.toolCalls.map((t) => el('tr', {}, el('td', {}, t.name), el('td', {}, el('code', {}, t.arguments)),
          el('td', {}, t.steering ? [el('span', { class: `status ${t.steering.action}` }, t.steering.action), ` by ${t.steering.by.join(', ') || '—'}`, t.steering.guidance ? ` — ${t.steering.guidance}` : ''] : 'allowed'))))
      : null;
    const details = el('details', { 'data-testid': 'window-items' }, el('summary', {}, 'Context window as the model saw it, and the hook timings'));
    details.addEventListener('toggle', () => details.open && fillWindow(details, call), { once: true });
    return el('article', { class: 'call', 'data-call-id': call.id },
      el('div', { class: 'head' }, el('b', {}, call.stepId), el('span', {}, call.model), el('span', {}, ms(call.durationMs)),
        el('span', {}, `in ${fmt(call.usage.inputTokens)} / out ${fmt(call.usage.outputTokens)} tokens`), el('span', {}, `budget ${fmt(call.window.tokenBudget)}`)),
      bar,
      el('table', { 'data-testid': 'layers' },
        el('tr', {}, ['Layer', 'Slot', 'Scope', 'Recall', 'Budget', 'Used', 'Yielded', 'Items kept', 'Status'].map((t, i) => el('th', { class: i >= 4 && i <= 7 ? 'num' : '' }, t))),
        layerRows),
      history, cache, steering, tools, details);
  }

  const textOf = (item) => {
    if (item?.type === 'message') {
      const parts = Array.isArray(item.content) ? item.content : [{ text: String(item.content ?? '') }];
      return parts.map((p) => p.text ?? p.refusal ?? `[${p.type}]`).join('');
    }
    if (item?.type === 'function_call') return `${item.name}(${item.arguments})`;
    if (item?.type === 'function_call_output') return typeof item.output === 'string' ? item.output : JSON.stringify(item.output);
    return JSON.stringify(item);
  };
  const itemView = (item, extra = '') => el('div', { class: `item ${extra}` }, el('span', { class: 'role' }, `${item.role ?? item.type}: `), textOf(item));

  async function fillWindow(details, summary) {
    let call = opened.get(summary.id);
    if (!call) {
      const response = await fetch(api('/api/call', { id: summary.id }));
      if (!response.ok) {
        details.append(el('p', { class: 'note' }, await response.text()));
        return;
      }
      call = await response.json();
      opened.set(summary.id, call);
    }
    const w = call.windowItems;
    const group = (label, items, extra) => el('div', { class: 'group' }, el('div', { class: 'label' }, label), items.length ? items.map((i) => itemView(i, extra)) : el('div', { class: 'note' }, 'none'));
    const byLayer = [...call.layers].filter((l) => l.items.length).map((l) => group(`${layerInfo(l.id).name} · slot ${fmt(l.slot)} · ${l.kept} of ${l.items.length} kept`, l.items));
    const dropped = w.dropped.length
      ? el('details', {}, el('summary', {}, `${call.history.dropped} item${call.history.dropped === 1 ? '' : 's'} dropped by the projection (${call.history.overflow})${call.history.dropped > w.dropped.length ? `, the newest ${w.dropped.length} shown` : ''}`), w.dropped.map((i) => itemView(i, 'dropped')))
      : null;
    const spans = call.spans?.length
      ? el('table', { 'data-testid': 'spans' }, el('tr', {}, el('th', {}, 'Layer'), el('th', {}, 'Hook'), el('th', { class: 'num' }, 'Time'), el('th', {}, 'Status')),
        call.spans.map((s) => el('tr', {}, el('td', {}, layerInfo(s.layerId).name), el('td', {}, s.hook), el('td', { class: 'num' }, ms(s.durationMs)), el('td', {}, el('span', { class: `status ${s.status}` }, s.status), s.error ? ` ${s.error}` : ''))))
      : el('p', { class: 'note' }, 'No hook ran for this call.');
    details.append(
      el('div', { class: 'window' }, group('System', w.system), ...byLayer, w.summary ? group('Overflow summary', [w.summary]) : null, dropped, group(`History kept (${call.history.kept})`, w.history)),
      el('h3', {}, 'Hooks (memory trace spans)'),
      spans,
    );
  }

  function renderStates(threadId) {
    const details = el('details', { 'data-testid': 'layer-state' }, el('summary', {}, "Each layer's state in storage for this thread (what its next init reads)"));
    details.addEventListener('toggle', async () => {
      if (!details.open) return;
      details.querySelectorAll('.states').forEach((n) => n.remove());
      const resource = [...(model.threads.get(threadId)?.turns ?? [])].flatMap((t) => t.calls).findLast((c) => c.resourceId !== undefined)?.resourceId;
      const response = await fetch(api('/api/state', resource === undefined ? { thread: threadId } : { thread: threadId, resource }));
      const states = response.ok ? await response.json() : [];
      details.append(el('div', { class: 'states' }, states.map((s) =>
        el('details', {}, el('summary', {}, `${layerInfo(s.id).name} · ${s.scope}${s.scopeKey ? ` (${s.scopeKey})` : ''}`),
          s.scopeKey === null ? el('p', { class: 'note' }, 'Execution-scoped: its state lives only during a turn.') : el('pre', { class: 'json' }, JSON.stringify(s.state, null, 2))))));
    });
    return details;
  }

  listen();
  load().catch((e) => {
    document.getElementById('thread').replaceChildren(el('p', { class: 'note' }, `The inspector could not be read: ${e.message}`));
  });
})();

// The built-in layers as user code types them (issue 11).

import { AgentHarness, historyWindow, type HistoryWindowConfig, type MemoryLayer, type ProjectHistoryResult } from '@noetic-tools/core';

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
function assertType<T extends true>(_ok?: T): void {}

const config: HistoryWindowConfig = { maxItems: 40 };
const window = historyWindow(config);
const asLayer: MemoryLayer<null> = window;
new AgentHarness({ name: 'typed', params: {}, memory: [asLayer, historyWindow()] });
// Its projectHistory can be called directly, as upstream's tests do.
const projected = window.hooks.projectHistory?.({ items: [], state: null } as never);
assertType<Equal<typeof projected, Promise<ProjectHistoryResult> | undefined>>();
// @ts-expect-error maxItems is a number
historyWindow({ maxItems: '40' });

// durableTaskState's state is typed; staticContent needs its loader.
import { durableTaskState, staticContent, type DurableTaskState } from '@noetic-tools/core';
const tasks = durableTaskState();
const initial: Promise<{ state: DurableTaskState }> | undefined = tasks.hooks.init?.({} as never) as never;
void initial;
assertType<Equal<typeof tasks.id, 'durable-task-state'>>();
const rules = staticContent({ load: async () => 'Be brief.', tag: 'rules', scope: 'thread' });
new AgentHarness({ name: 'typed', params: {}, memory: [tasks, rules] });
// @ts-expect-error load is required
staticContent({ tag: 'rules' });

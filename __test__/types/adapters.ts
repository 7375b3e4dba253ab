// The filesystem and shell adapters, the harness's cwd state, and where user code receives them.

import {
  AgentHarness,
  createInMemoryFsAdapter,
  createInMemoryShellAdapter,
  step,
  type CwdState,
  type ExecutionContext,
  type FsAdapter,
  type FsStats,
  type MemoryLayer,
  type ShellAdapter,
  type ShellExecOptions,
  type ShellExecResult,
  type ToolExecutionContext,
} from '@noetic-tools/core';

const fs: FsAdapter = createInMemoryFsAdapter({ '/a.txt': 'a', '/b.bin': new Uint8Array([1]) });
createInMemoryFsAdapter();
const shell: ShellAdapter = createInMemoryShellAdapter();

async function useFs(): Promise<void> {
  const bytes: Uint8Array = await fs.readFile('/a.txt');
  const text: string = await fs.readFileText('/a.txt');
  await fs.writeFile('/c', text);
  await fs.writeFileBytes('/d', await fs.readFile('/b.bin'));
  await fs.appendFile('/c', '!');
  await fs.mkdir('/dir/sub');
  await fs.rename('/c', '/dir/c');
  await fs.rm('/dir', { recursive: true, force: true });
  await fs.rm('/d');
  await fs.access('/a.txt', 4);
  const stats: FsStats = await fs.stat('/a.txt');
  const flags: boolean[] = [stats.isFile(), stats.isDirectory(), stats.isSymbolicLink()];
  const size: number = (await fs.lstat('/a.txt')).size;
  const names: string[] = await fs.readdir('/');
  void [bytes, flags, size, names];
  // @ts-expect-error writeFile takes a string.
  await fs.writeFile('/c', 42);
}

async function useShell(): Promise<void> {
  const options: ShellExecOptions = { cwd: '/', env: { A: 'b' }, timeout: 5, stdin: '' };
  const result: ShellExecResult = await shell.exec('ls', options);
  const exit: number | null = result.exitCode;
  void [result.stdout, result.stderr, exit];
  // @ts-expect-error exec needs options with a cwd.
  await shell.exec('ls');
}

const harness = new AgentHarness({ name: 'a', params: {}, fs, shell, initialCwd: '/work' });
const sameFs: FsAdapter = harness.fs;
const sameShell: ShellAdapter = harness.shell;
const cwd: CwdState = harness.rootCwdState;
harness.setRootCwd('/work/pkg');
const previous: string | undefined = harness.rootCwdState.previousCwd;
void [sameFs, sameShell, cwd, previous, useFs, useShell];

const inStep = step.run({
  id: 's',
  execute: async (_input: string, ctx) => {
    await ctx.fs.writeFile('/x', ctx.cwdState.cwd);
    const r: ShellExecResult = await ctx.shell.exec('pwd', { cwd: ctx.cwdState.cwd });
    return r.stdout;
  },
});
void inStep;

const layer: MemoryLayer<{ text: string }> = {
  id: 'notes',
  slot: 275,
  scope: 'execution',
  hooks: {
    init: async ({ ctx }: { ctx: ExecutionContext }) => ({ state: { text: await ctx.fs.readFileText('/notes') } }),
  },
};
void layer;

function inTool(toolCtx: ToolExecutionContext): Promise<ShellExecResult> {
  return toolCtx.shell.exec('ls', { cwd: '/' }).then(async (r) => (await toolCtx.fs.readdir('/')).length ? r : r);
}
void inTool;

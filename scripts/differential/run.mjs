// Runs small seeded programs on this package and on upstream's, and compares what their user code sees: the
// parameters and states hooks receive, the requests a test model is handed, the responses, the stored keys and
// values. A development tool (upstream is not on npm, so tests cannot use it); a difference it finds is a bug or a
// decision, and DECISIONS.md says which. Each program is a module of this folder that says what it runs and which
// decided differences it leaves out, so a difference it reports is new.
//
//   NOETIC_UPSTREAM_PKG=<upstream's built packages/core> node scripts/differential/run.mjs [--seeds 1-60] [--program memory,steps,...]
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { random } from './shared.mjs';

const PROGRAMS = ['memory', 'steps', 'queue', 'provider', 'workflow', 'builtins', 'patterns', 'channels', 'conditions', 'spawn', 'session', 'persisted', 'tools', 'detached', 'every', 'durable', 'llm', 'until', 'pure', 'schemas', 'race', 'shapes', 'builders', 'subprocess'];

function run(impl, program, seed) {
  const child = spawnSync(process.execPath, [fileURLToPath(import.meta.url), '--one', impl, program, String(seed)], { encoding: 'utf8', env: process.env });
  return child.stdout + (child.status === 0 ? '' : `exit ${child.status}: ${child.stderr.split('\n').slice(0, 3).join(' ')}`);
}

function firstDifference(a, b) {
  const [x, y] = [a.split('\n'), b.split('\n')];
  const at = x.findIndex((line, i) => line !== y[i]);
  const i = at < 0 ? x.length : at;
  return `  ours:     ${x[i] ?? '(nothing)'}\n  upstream: ${y[i] ?? '(nothing)'}`;
}

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : fallback;
};

if (args[0] === '--one') {
  const [, impl, program, seed] = args;
  const load = (entry, ours) => (impl === 'upstream' ? import(pathToFileURL(path.join(process.env.NOETIC_UPSTREAM_PKG, `dist/${entry}.js`)).href) : import(ours));
  // The main entry, and `/unstable` beside it for the programs that call its functions.
  const api = { ...(await load('index', '../../js/index.mjs')), __unstable: await load('unstable', '../../js/unstable.mjs') };
  const { [program]: runProgram } = await import(`./${program === 'persisted' ? 'session' : program}.mjs`);
  const lines = await runProgram(api, random(Number(seed)));
  console.log(lines.join('\n'));
} else {
  if (!process.env.NOETIC_UPSTREAM_PKG) {
    console.error("Set NOETIC_UPSTREAM_PKG to the directory of upstream's built packages/core.");
    process.exit(2);
  }
  const [from, to] = option('seeds', '1-30').split('-').map(Number);
  const programs = option('program', PROGRAMS.join(',')).split(',');
  const unknown = programs.filter((p) => !PROGRAMS.includes(p));
  if (unknown.length) {
    console.error(`No program ${unknown.join(', ')}; the programs are ${PROGRAMS.join(', ')}.`);
    process.exit(2);
  }
  let differ = 0;
  for (const program of programs) {
    for (let seed = from; seed <= (to ?? from); seed++) {
      const [ours, theirs] = ['ours', 'upstream'].map((impl) => run(impl, program, seed));
      if (ours === theirs) continue;
      differ++;
      console.log(`${program} seed ${seed} differs:\n${firstDifference(ours, theirs)}`);
    }
  }
  console.log(differ === 0 ? `differential: every program agrees (${programs.join(', ')}, seeds ${from}-${to ?? from})` : `differential: ${differ} program(s) differ`);
  process.exitCode = differ === 0 ? 0 : 1;
}

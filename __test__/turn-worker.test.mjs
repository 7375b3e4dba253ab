// The turn worker (DECISIONS S24): a harness with many runs in flight has them polled on a thread of its own, and
// what its sessions see does not change. A lone session never starts the thread.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { slow } from './helpers.mjs';

const fixture = fileURLToPath(new URL('./fixtures/many-sessions.mjs', import.meta.url));
const onLinux = process.platform === 'linux';

function runFixture(env) {
  const result = spawnSync(process.execPath, [fixture], { encoding: 'utf8', timeout: slow(120_000), env: { ...process.env, ...env } });
  assert.equal(result.status, 0, result.stderr);
  return JSON.parse(result.stdout.trim().split('\n').at(-1));
}

test('two hundred sessions at once: each recalls only its own notes and hears its own answers; the turn worker starts only once the harness is busy', () => {
  const { alone, busy, deep, firstWrong } = runFixture({ NOETIC_TURN_WORKER_AT: '' });
  assert.equal(alone.wrong + busy.wrong, 0, JSON.stringify(firstWrong));
  assert.ok(deep, 'a step tree nested 500 loops deep ran to its value');
  if (onLinux) {
    assert.equal(alone.workers, 0, 'a lone session is polled on the JS thread');
    assert.equal(busy.workers, 1, 'two hundred sessions are polled on the turn worker');
  }
});

test('with every harness on the turn worker, the same sessions and a 500-loop-deep step tree run as on the JS thread', () => {
  const { alone, busy, deep, firstWrong } = runFixture({ NOETIC_TURN_WORKER_AT: '1' });
  assert.equal(alone.wrong + busy.wrong, 0, JSON.stringify(firstWrong));
  assert.ok(deep, 'a step tree nested 500 loops deep ran to its value');
  if (onLinux) assert.equal(alone.workers, 1, 'the knob put a lone session on the turn worker');
});

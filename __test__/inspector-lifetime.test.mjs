// The inspector's server keeps its process alive while it is open, as a node:http server would, and lets it exit once
// closed. Run in a process of its own (Node's or Bun's, whichever runs this file).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { slow } from './helpers.mjs';

test('a program that only starts an inspector stays up until it closes it, and then exits', { timeout: slow(60_000) }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'noetic-inspector-'));
  const closeNow = join(dir, 'close');
  const fixture = fileURLToPath(new URL('./fixtures/open-inspector.mjs', import.meta.url));
  const child = spawn(process.execPath, [fixture, closeNow], { stdio: ['ignore', 'pipe', 'pipe'] });
  try {
    let out = '';
    let err = '';
    child.stderr.on('data', (chunk) => (err += chunk));
    const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
    const url = await new Promise((resolve, reject) => {
      child.stdout.on('data', (chunk) => {
        out += chunk;
        const line = out.split('\n').find((l) => l.includes('"url"'));
        if (line) resolve(JSON.parse(line).url);
      });
      exited.then(() => reject(new Error(`the program ended before it gave the URL: ${err}`)));
    });
    const snapshot = new URL(url);
    snapshot.pathname = '/api/snapshot';
    // Asked twice, the second time well after the program ran out of other work: a program the server did not hold
    // would have exited by then, and its exit is noticed first.
    let ended = false;
    exited.then(() => (ended = true));
    assert.equal((await (await fetch(snapshot)).json()).harness, 'alive');
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(ended, false, 'the open inspector keeps the program alive');
    assert.equal((await fetch(snapshot)).status, 200);
    writeFileSync(closeNow, '');
    const { code, signal } = await exited;
    assert.deepEqual({ code, signal }, { code: 0, signal: null }, err);
    assert.match(out, /"closed":true/);
  } finally {
    child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
});

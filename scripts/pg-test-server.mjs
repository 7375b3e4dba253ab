// PostgreSQL servers for the tests and the storage bench, through pg-test-server.sh (which see).
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const script = fileURLToPath(new URL('./pg-test-server.sh', import.meta.url));

function control(command, dir) {
  const result = spawnSync('bash', [script, command, dir], { encoding: 'utf8', timeout: 120_000 });
  if (result.status !== 0) throw new Error(`pg-test-server.sh ${command} failed: ${result.stderr || result.error?.message}`);
}

// A fresh server of the caller's own, destroyed when the process exits: `{url, ca, stop(), resume(), destroy()}`
// (`ca`: the PEM file of the CA of its TLS certificate, when openssl made one), or
// `{skip}` saying why there is none.
export function startServer() {
  const result = spawnSync('bash', [script, 'start'], { encoding: 'utf8', timeout: 120_000 });
  if (result.status !== 0) return { skip: `no PostgreSQL server could be started: ${(result.stderr || result.error?.message || '').trim()}` };
  const value = (name) => result.stdout.match(new RegExp(`^export ${name}=(.*)$`, 'm'))?.[1];
  const [url, dir, ca] = [value('NOETIC_TEST_POSTGRES_URL'), value('NOETIC_TEST_POSTGRES_DIR'), value('NOETIC_TEST_POSTGRES_CA')];
  let destroyed = false;
  const destroy = () => {
    if (!destroyed) spawnSync('bash', [script, 'destroy', dir], { timeout: 120_000 });
    destroyed = true;
  };
  process.once('exit', destroy);
  return { url, ca, stop: () => control('stop', dir), resume: () => control('resume', dir), destroy };
}

let shared;
// The server the tests share: NOETIC_TEST_POSTGRES_URL when set (CI's), else one started for this process.
export function sharedServerUrl() {
  shared ??= process.env.NOETIC_TEST_POSTGRES_URL
    ? { url: process.env.NOETIC_TEST_POSTGRES_URL, ca: process.env.NOETIC_TEST_POSTGRES_CA }
    : startServer();
  return shared;
}

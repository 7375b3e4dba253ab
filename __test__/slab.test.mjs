// The slab that keeps a recall's items for its step's model call: keys are slots, reused once let go.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';

const { Slab } = createRequire(import.meta.url)('../js/slab.cjs');

test('a slab gives each kept value its own key, reads it back, and reuses a key only once it is let go', () => {
  const slab = new Slab();
  const a = ['a'];
  const b = ['b'];
  const ka = slab.keep(a);
  const kb = slab.keep(b);
  assert.notEqual(ka, kb);
  assert.ok(ka > 0 && kb > 0, 'no key is 0');
  assert.equal(slab.get(ka), a);
  assert.equal(slab.get(kb), b);
  assert.equal(slab.size, 2);
  slab.delete(ka);
  assert.equal(slab.get(ka), undefined);
  assert.equal(slab.size, 1);
  const c = ['c'];
  assert.equal(slab.keep(c), ka, 'the freed slot is used again');
  assert.equal(slab.get(kb), b, 'the other value is untouched');
  assert.equal(slab.values.length, 2, 'no slot was added');
});

test('letting go of a key twice frees its slot once, so two later values never share it', () => {
  const slab = new Slab();
  const key = slab.keep(['x']);
  slab.delete(key);
  slab.delete(key);
  slab.delete(99);
  assert.equal(slab.size, 0);
  const first = slab.keep(['first']);
  const second = slab.keep(['second']);
  assert.notEqual(first, second);
  assert.deepEqual(slab.get(first), ['first']);
  assert.deepEqual(slab.get(second), ['second']);
});

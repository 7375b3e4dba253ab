'use strict';
// Values kept under small integer keys, a key reused once its value is let go.
//
// Why not a Map: a loaded harness keeps and lets go tens of thousands of values a second (a recall's items, for its
// step's model call), and a Map that large costs a hash lookup with its cache misses for each, and a rehash when its
// deleted entries pile up. Here a key is an index: keeping, reading and letting go touch one array slot.
class Slab {
  constructor() {
    this.values = [];
    this.free = [];
    this.size = 0;
  }

  // Keys start at 1: 0 is never one. `value` is never undefined (an empty slot reads as undefined).
  keep(value) {
    const at = this.free.length > 0 ? this.free.pop() : this.values.push(undefined) - 1;
    this.values[at] = value;
    this.size++;
    return at + 1;
  }

  get(key) {
    return this.values[key - 1];
  }

  // Letting go of a key not kept (or already let go) does nothing, so its slot is never listed free twice.
  delete(key) {
    const at = key - 1;
    if (this.values[at] === undefined) return;
    this.values[at] = undefined;
    this.free.push(at);
    this.size--;
  }
}

module.exports = { Slab };

'use strict';
// Values under small reused integer keys: one array slot an operation, where a large churning Map hashes and rehashes.
class Slab {
  constructor() {
    this.values = [];
    this.free = [];
    this.size = 0;
  }

  // Keys start at 1; `value` is never undefined (an empty slot reads as undefined).
  keep(value) {
    const at = this.free.length > 0 ? this.free.pop() : this.values.push(undefined) - 1;
    this.values[at] = value;
    this.size++;
    return at + 1;
  }

  get(key) {
    return this.values[key - 1];
  }

  // A key not kept does nothing, so its slot is never listed free twice.
  delete(key) {
    const at = key - 1;
    if (this.values[at] === undefined) return;
    this.values[at] = undefined;
    this.free.push(at);
    this.size--;
  }
}

module.exports = { Slab };

'use strict';
// What stops a value from being written as JSON in reasonable time, found first: stringify fails deep nesting only
// when the stack runs out, and writes a shared subtree once per path. This visits each object once, without recursion.

// Null when it can be written (or stringify will decide: `toJSON`).
function jsonBoundsProblem(value, { maxNesting, maxValues }) {
  if (value === null || typeof value !== 'object') return null;
  const measured = new Map(); // object -> { height, count }
  const onPath = new Set();
  const frames = [];
  const enter = (object) => {
    onPath.add(object);
    frames.push({ object, children: childrenOf(object), next: 0, height: 1, count: 1 });
  };
  const addTo = (frame, child) => {
    frame.height = Math.max(frame.height, child.height + 1);
    frame.count += child.count;
    if (frame.count > maxValues) return `it writes out to more than ${maxValues} values (a part shared at many places is written at each)`;
    if (frames.length - 1 + frame.height > maxNesting) return `it nests more than ${maxNesting} levels deep`;
    return null;
  };
  enter(value);
  while (frames.length > 0) {
    const frame = frames[frames.length - 1];
    if (frame.next < frame.children.length) {
      const child = frame.children[frame.next++];
      if (child === null || typeof child !== 'object') {
        frame.count += 1;
        continue;
      }
      const known = measured.get(child);
      if (known !== undefined) {
        const problem = addTo(frame, known);
        if (problem) return problem;
        continue;
      }
      if (onPath.has(child)) return 'it contains itself (a cycle)';
      if (frames.length >= maxNesting) return `it nests more than ${maxNesting} levels deep`;
      enter(child);
      continue;
    }
    frames.pop();
    onPath.delete(frame.object);
    measured.set(frame.object, { height: frame.height, count: frame.count });
    if (frames.length > 0) {
      const problem = addTo(frames[frames.length - 1], frame);
      if (problem) return problem;
    } else if (frame.count > maxValues) {
      return `it writes out to more than ${maxValues} values (a part shared at many places is written at each)`;
    }
  }
  return null;
}

// One with `toJSON` writes what that returns, not known until it is called: it is left to stringify.
function childrenOf(object) {
  if (typeof object.toJSON === 'function') return [];
  return Array.isArray(object) ? object : Object.values(object);
}

module.exports = { jsonBoundsProblem };

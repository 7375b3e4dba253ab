'use strict';
// What stops a JS value from being written as JSON in reasonable time, found before `JSON.stringify` tries.
//
// stringify follows every path through a value. A tree nested far deeper than any reader takes only fails once
// the engine's stack runs out (a second per call under Bun for 200,000 levels), and a subtree shared at many
// places is written once per path: shared twice at each of 30 levels, a billion times. This walk visits each
// object once, remembering how deep it nests and how many values it writes out to, so it answers in time
// proportional to the distinct objects, without recursion.

// Why `value` cannot be written within `maxNesting` levels and `maxValues` values (a phrase such as 'it nests
// more than 1024 levels deep'), or null when it can (or when stringify will decide: an object with `toJSON`).
function jsonBoundsProblem(value, { maxNesting, maxValues }) {
  if (value === null || typeof value !== 'object') return null;
  const measured = new Map(); // object -> { height, count }
  const onPath = new Set();
  const frames = [];
  const enter = (object) => {
    onPath.add(object);
    frames.push({ object, children: childrenOf(object), next: 0, height: 1, count: 1 });
  };
  // Adds a finished child's measures to the frame above it; the reason to stop, if the value outgrew a bound.
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

// What stringify writes inside an object: its elements, or its own enumerable values. One with `toJSON` writes
// what that returns, which is not known until it is called; it is left to stringify.
function childrenOf(object) {
  if (typeof object.toJSON === 'function') return [];
  return Array.isArray(object) ? object : Object.values(object);
}

module.exports = { jsonBoundsProblem };

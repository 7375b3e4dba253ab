// What the JS benchmarks share: the median, a long seeded history, and upstream's package when asked for.
import path from 'node:path';
import { pathToFileURL } from 'node:url';

export const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

// `n` alternating user and assistant messages of about 300 bytes each.
export function history(n) {
  const filler = 'context '.repeat(28);
  return Array.from({ length: n }, (_, i) => {
    const role = i % 2 ? 'assistant' : 'user';
    const type = i % 2 ? 'output_text' : 'input_text';
    return { id: `h${i}`, type: 'message', role, content: [{ type, text: `${i} ${filler}` }] };
  });
}

// Upstream's package when `NOETIC_UPSTREAM_PKG` names the directory of an installed one, to run beside ours.
export async function upstreamApi() {
  const dir = process.env.NOETIC_UPSTREAM_PKG;
  return dir ? import(pathToFileURL(path.join(dir, 'dist/index.js')).href) : undefined;
}

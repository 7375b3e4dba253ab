'use strict';
// Built-in layers' reads through a user FsAdapter, answered as the native side reads its own (adapters/file_read.rs).

// Node's `code`, else the message's prefix (the in-memory adapter's plain Errors start with it, as upstream's).
function codeOf(e) {
  if (typeof e?.code === 'string') return e.code;
  return /^([A-Z]+):/.exec(typeof e?.message === 'string' ? e.message : '')?.[1];
}

async function readOne(fs, { path, walk, maxSize }) {
  try {
    let stats = walk.length === 0 ? await fs.stat(path) : undefined;
    for (const component of walk) {
      stats = await fs.lstat(component);
      if (stats.isSymbolicLink()) return { kind: 'symlink' };
    }
    if (maxSize !== null && stats.size > maxSize) return { kind: 'tooLarge', size: stats.size };
    return { kind: 'text', text: String(await fs.readFileText(path)) };
  } catch (e) {
    const code = codeOf(e);
    if (code === 'ENOENT') return { kind: 'missing' };
    if (code === 'EACCES') return { kind: 'denied' };
    return { kind: 'failed', message: e instanceof Error ? e.message : String(e) };
  }
}

const readFiles = (fs, reads) => Promise.all(reads.map((read) => readOne(fs, read)));

module.exports = { readFiles };

'use strict';
// Reads for built-in layers through an FsAdapter (the harness's `fs`, or a hook's `ctx.fs`): every file of a request
// at once, each answered as the native side reads the in-memory filesystem (crates/noetic-runtime/src/adapters/
// file_read.rs): the components in `walk` are lstat'ed (a symbolic link refuses the read), or the file is stat'ed,
// then its size is checked, then its text read.

// A failure's POSIX code: Node's `code`, else the message's prefix (the in-memory adapter throws plain Errors whose
// message starts with it, as upstream's does).
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

'use strict';
// The default filesystem (NativeFs, with upstream's methods and errors: 'ENOENT: ...', no `code`) and shell.
const native = require('./native.cjs');

const encoder = new TextEncoder();

// Not enumerable, so an object spread from the adapter (a wrapper that may intercept reads) is not read natively.
const NATIVE_FS = Symbol('noetic.nativeFs');
const nativeFsOf = (adapter) => adapter?.[NATIVE_FS];

// Upstream starts with `path.trim()`, so a path that is not a string rejects with the TypeError that throws.
function pathOf(path) {
  if (typeof path === 'string') return path;
  if (path instanceof String) return path.valueOf();
  if (path == null) throw new TypeError(`Cannot read properties of ${path} (reading 'trim')`);
  throw new TypeError('path.trim is not a function');
}

// As `TextEncoder.encode` takes it (a Symbol throws).
const textOf = (content) => (content === undefined ? '' : `${content}`);

// Upstream's conversion: a non-view object becomes no bytes, and null throws.
function bytesOf(content) {
  if (typeof content === 'string') return encoder.encode(content);
  if (content instanceof ArrayBuffer) return new Uint8Array(content);
  return new Uint8Array(content.buffer, content.byteOffset, content.byteLength);
}

// A failed operation reaches callers as a plain Error with upstream's message.
function call(operation) {
  try {
    return operation();
  } catch (e) {
    throw e?.code === 'GenericFailure' ? new Error(e.message) : e;
  }
}

function statsOf({ size, isDirectory }) {
  return { size, isDirectory: () => isDirectory, isSymbolicLink: () => false, isFile: () => !isDirectory };
}

function createInMemoryFsAdapter(seed) {
  const fs = new native.NativeFs();
  const adapter = {
    async readFile(path) {
      return call(() => fs.readFile(pathOf(path)));
    },
    async readFileText(path) {
      return call(() => fs.readFileText(pathOf(path)));
    },
    async writeFile(path, content) {
      const text = textOf(content);
      call(() => fs.writeFile(pathOf(path), text));
    },
    async writeFileBytes(path, content) {
      const bytes = bytesOf(content);
      call(() => fs.writeFileBytes(pathOf(path), bytes));
    },
    async appendFile(path, content) {
      const p = pathOf(path);
      call(() => fs.appendFile(p, textOf(content)));
    },
    async mkdir(dir) {
      call(() => fs.mkdir(pathOf(dir)));
    },
    async rename(oldPath, newPath) {
      const from = pathOf(oldPath);
      call(() => fs.rename(from, pathOf(newPath)));
    },
    async rm(path, options) {
      const p = pathOf(path);
      call(() => fs.rm(p, Boolean(options?.recursive), Boolean(options?.force)));
    },
    async access(path, _mode) {
      call(() => fs.access(pathOf(path)));
    },
    async stat(path) {
      return statsOf(call(() => fs.stat(pathOf(path))));
    },
    async lstat(path) {
      return statsOf(call(() => fs.stat(pathOf(path))));
    },
    async readdir(path) {
      return call(() => fs.readdir(pathOf(path)));
    },
  };
  Object.defineProperty(adapter, NATIVE_FS, { value: fs });
  for (const [path, content] of Object.entries(seed ?? {})) {
    call(() => fs.seedFile(path, bytesOf(content)));
  }
  return adapter;
}

// Upstream's portable default: runs nothing, and says so.
function createInMemoryShellAdapter() {
  return {
    async exec(command, _options) {
      return {
        stdout: '',
        stderr: `Shell execution is not available in the default in-memory adapter: ${command}`,
        exitCode: 127,
      };
    },
  };
}

// A shell adapter's Error for a command killed for running too long: this prefix and the limit in seconds.
const TIMEOUT_ERROR_PREFIX = 'timeout:';

module.exports = { createInMemoryFsAdapter, createInMemoryShellAdapter, nativeFsOf, TIMEOUT_ERROR_PREFIX };

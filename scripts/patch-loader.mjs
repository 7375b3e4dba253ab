// After `napi build`: two changes to the loader it generates (index.js), so that `npm run build` always makes the
// committed file (DECISIONS.md N1).
// - Windows x64 has one package, `<name>-win32-x64` (built with the GNU toolchain, loaded by any Node: N4), where
//   napi's loader asks for `-win32-x64-msvc` or `-win32-x64-gnu` after the flavour of the running Node.
// - When no binary loads, napi's message blames an npm bug and suggests deleting the lockfile. Ours names the
//   platform it detected and the package that platform needs, or says there is none for it.
import { readFileSync, writeFileSync } from 'node:fs';

const file = new URL('../index.js', import.meta.url);
const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
const prefix = `${pkg.napi.packageName}-`;
const platforms = Object.keys(pkg.optionalDependencies).map((name) => name.slice(prefix.length));
let text = readFileSync(file, 'utf8');

const marker = '// Patched by scripts/patch-loader.mjs';
if (text.includes(marker)) throw new Error('index.js is already patched: run `npm run build`, which makes it anew');

function replaceOnce(what, by) {
  const at = text.indexOf(what);
  if (at < 0 || text.indexOf(what, at + 1) >= 0) {
    throw new Error(`index.js: napi's loader changed; expected exactly one of:\n${what}`);
  }
  text = text.slice(0, at) + by + text.slice(at + what.length);
}

const windows = new RegExp(`'${prefix}win32-x64-(msvc|gnu)(/package\\.json)?'`, 'g');
const renamed = text.match(windows)?.length ?? 0;
if (renamed !== 4) throw new Error(`index.js: expected 4 win32-x64 package names in napi's loader, found ${renamed}`);
text = text.replace(windows, (_, _flavour, json) => `'${prefix}win32-x64${json ?? ''}'`);

const napiMessage = `    const error = new Error(
      \`Cannot find native binding. \` +
        \`npm has a bug related to optional dependencies (https://github.com/npm/cli/issues/4828). \` +
        'Please try \`npm i\` again after removing both package-lock.json and node_modules directory.',
    )`;
replaceOnce(napiMessage, '    const error = new Error(missingBindingMessage())');
replaceOnce('  throw new Error(`Failed to load native binding`)\n', '  throw new Error(missingBindingMessage())\n');

const explain = `${marker}: what to install when no binary loads.
function missingBindingMessage() {
  const platforms = [${platforms.map((p) => `'${p}'`).join(', ')}]
  const abi = process.platform === 'linux' ? (isMusl() ? '-musl' : '-gnu') : ''
  const platform = \`\${process.platform}-\${process.arch}\${abi}\`
  const name = '${pkg.name}'
  const binary = \`${prefix}\${platform}\`
  const fromSource =
    'In a clone of its repository, \`npm run build\` builds it from source (Rust needed); elsewhere, set ' +
    'NAPI_RS_NATIVE_LIBRARY_PATH to the path of a .node file built so.'
  if (!platforms.includes(platform)) {
    return \`\${name} has no native binary for this platform (\${platform}); there are binaries for \${platforms.join(', ')}. \${fromSource}\`
  }
  const failed = loadErrors.find((e) => e && e.code !== 'MODULE_NOT_FOUND')
  if (failed) {
    return \`\${name}: the native binary for this platform (\${platform}) is there but did not load: \${failed.message}\`
  }
  return (
    \`\${name} cannot find its native binary for this platform (\${platform}): install \${binary}@${pkg.version} ` +
    `(npm install \${binary}@${pkg.version}). npm installs it on its own, as an optional dependency, unless optional ` +
    `dependencies were left out (--omit=optional, --no-optional) or the lockfile was made without it. \${fromSource}\`
  )
}

if (!nativeBinding) {
  if (loadErrors.length > 0) {`;
replaceOnce('\nif (!nativeBinding) {\n  if (loadErrors.length > 0) {', `\n${explain}`);

writeFileSync(file, text);

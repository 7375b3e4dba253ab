// After `napi build`: the binding's own classes and option shapes, which napi appends to index.d.ts after our
// header, become module-private. The package's entry points do not export them (AgentHarness and
// createInMemoryStorage are the public faces), so their declarations must not claim they do.
import { readFileSync, writeFileSync } from 'node:fs';

const file = new URL('../index.d.ts', import.meta.url);
const marker = '// Only `export`ed declarations above are public.';
const text = readFileSync(file, 'utf8');
const at = text.indexOf(marker);
if (at < 0) throw new Error(`index.d.ts: the header's end marker is missing: ${marker}`);
const [header, generated] = [text.slice(0, at), text.slice(at)];
writeFileSync(file, header + generated.replace(/^export declare /gm, 'declare ').replace(/^export (interface|type|const|function) /gm, '$1 '));

// Writes the typed client's copy of the OpenAPI document (client/openapi.json) and the types
// generated from it (client/src/openapi.d.ts), from the document a local edge serves — the
// code that runs, not a hand-kept file. `--check` writes nothing and exits 1 when either is stale.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CLIENT_DOCUMENT_PATH,
  CLIENT_TYPES_PATH,
  clientTypesOf,
  documentText,
} from './stack/client-types.ts';
import { startLocalStack } from './stack/local-stack.ts';

const check = process.argv.includes('--check');
const persistTo = mkdtempSync(join(tmpdir(), 'rcpt-openapi-'));
const stack = await startLocalStack({ persistTo, startProber: false });
let served: unknown;
try {
  served = await (await fetch(`${stack.baseUrl}/openapi.json`)).json();
} finally {
  await stack.close();
  rmSync(persistTo, { recursive: true, force: true });
}

const wanted = [
  { path: CLIENT_DOCUMENT_PATH, text: documentText(served) },
  { path: CLIENT_TYPES_PATH, text: await clientTypesOf(served) },
];
const stale = wanted.filter(({ path, text }) => readOrEmpty(path) !== text);
if (check) {
  for (const { path } of stale) console.error(`${path} is stale: run npm run client:generate`);
  process.exit(stale.length > 0 ? 1 : 0);
}
for (const { path, text } of stale) writeFileSync(path, text);
console.log(
  stale.length > 0 ? `wrote ${stale.map(({ path }) => path).join(', ')}` : 'client types are current',
);

function readOrEmpty(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}

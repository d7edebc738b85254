// The form widget's weight on a customer's page (docs/widget.md): /widget.js as served, and
// gzipped as the edge sends it to a browser that asks for it (target ≤ 10 KB).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { constants, gzipSync } from 'node:zlib';
import type { Figure } from './run.ts';

const source = readFileSync(join(import.meta.dirname, '..', 'edge', 'public', 'widget.js'));
const gzipped = gzipSync(source, { level: constants.Z_BEST_COMPRESSION });

const figures: Figure[] = [
  { name: 'widget.js', value: source.byteLength / 1024, unit: 'KB' },
  { name: 'widget.js gzipped', value: gzipped.byteLength / 1024, unit: 'KB', target: '≤ 10' },
];
console.log(JSON.stringify(figures));

// Comments cite the project's docs by page and heading (`docs/money.md, "Batch"`); a heading
// that is renamed or never existed leaves the reader nowhere. Every such citation in the source
// must name a heading of the page it cites.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..');
const SOURCE_FOLDERS = ['edge/src', 'shared/src', 'prober/src', 'client/src', 'scripts', 'test', 'bench'];
const PAGES: Record<string, string> = {
  'docs/api.md': 'docs/api.md',
  'docs/architecture.md': 'docs/architecture.md',
  'docs/capacity.md': 'docs/capacity.md',
  'docs/money.md': 'docs/money.md',
  'docs/operations.md': 'docs/operations.md',
  'docs/verdicts.md': 'docs/verdicts.md',
  'docs/publishable-keys.md': 'docs/publishable-keys.md',
  'docs/widget.md': 'docs/widget.md',
  README: 'README.md',
  'README.md': 'README.md',
  'prober/README.md': 'prober/README.md',
  'client/README.md': 'client/README.md',
};
// A page, an optional comma, then a quoted heading; the heading may run onto the next comment line.
const CITATION = /(docs\/[a-z-]+\.md|(?:prober\/|client\/)?README(?:\.md)?),?\s+"([^"]+)"/g;

function sourceFiles(folder: string): string[] {
  return readdirSync(join(root, folder), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && /\.tsx?$/.test(entry.name))
    .map((entry) => join(entry.parentPath, entry.name))
    .filter((path) => !path.includes('node_modules'));
}

function headingsOf(page: string): Set<string> {
  const text = readFileSync(join(root, page), 'utf8');
  return new Set(
    text
      .split('\n')
      .filter((line) => /^#{1,6} /.test(line))
      .map((line) => line.replace(/^#+ /, '').trim()),
  );
}

/** Comment lines joined so that a heading broken over two lines reads as one. */
function commentText(source: string): string {
  return source.replace(/\n\s*(?:\/\/|\*)\s*/g, ' ');
}

describe('citations of the docs in comments', () => {
  const citations = SOURCE_FOLDERS.flatMap(sourceFiles).flatMap((path) =>
    [...commentText(readFileSync(path, 'utf8')).matchAll(CITATION)].map((match) => ({
      at: relative(root, path),
      page: PAGES[match[1] ?? ''],
      heading: (match[2] ?? '').replace(/\s+/g, ' '),
    })),
  );

  it('finds the citations it checks', () => {
    expect(citations.length).toBeGreaterThan(10);
  });

  it('names a heading that exists on the cited page', () => {
    const headings = new Map<string, Set<string>>();
    const missing = citations.filter(({ page, heading }) => {
      if (!page) return true;
      if (!headings.has(page)) headings.set(page, headingsOf(page));
      return !headings.get(page)?.has(heading);
    });
    expect(missing.map(({ at, page, heading }) => `${at}: ${page} "${heading}"`)).toEqual([]);
  });
});

// Accessibility checks with axe-core in the page under test. The dashboard's CSP forbids
// inline <script>, so axe's source goes in through page.evaluate, which the CSP does not see.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { AxeResults, Result } from 'axe-core';
import type { Page } from 'playwright-core';
import { expect } from 'vitest';
import { VIEWPORTS } from './screenshots.ts';

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** The WCAG 2 A and AA rules; a violation of these impacts fails a page. */
const TAGS = ['wcag2a', 'wcag2aa'];
const FAILING_IMPACTS = new Set(['serious', 'critical']);

/** The serious and critical violations on the page as it is now, one readable line each. */
export async function seriousViolations(page: Page): Promise<string[]> {
  if (!(await page.evaluate<boolean>("typeof window.axe === 'object'"))) await page.evaluate(AXE_SOURCE);
  const results = await page.evaluate<AxeResults>(
    `axe.run(document, { runOnly: { type: 'tag', values: ${JSON.stringify(TAGS)} }, resultTypes: ['violations'] })`,
  );
  return results.violations
    .filter((violation: Result) => FAILING_IMPACTS.has(violation.impact ?? ''))
    .map(
      (violation: Result) =>
        `${violation.id} (${violation.impact}): ${violation.help} — ${violation.nodes
          .map((node) => node.target.join(' '))
          .join(', ')}`,
    );
}

/** axe on the current page at the viewport it has now, failing the test on a violation. */
export async function expectAccessibleHere(page: Page, name: string): Promise<void> {
  const violations = await seriousViolations(page);
  expect(violations, `${name}:\n${violations.join('\n')}`).toEqual([]);
}

/** axe on the current page at both widths, failing the test on a violation; the desktop size is restored afterwards. */
export async function expectAccessible(page: Page, name: string): Promise<void> {
  for (const [label, size] of Object.entries(VIEWPORTS)) {
    await page.setViewportSize(size);
    await expectAccessibleHere(page, `${name} at ${label} width`);
  }
  await page.setViewportSize(VIEWPORTS.desktop);
}

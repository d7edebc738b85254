// Screenshots of dashboard pages at desktop and phone widths, for people to look at
// (.test-artifacts/ is git-ignored). Each shot is checked for horizontal overflow, the
// usual way a layout breaks at 375 px.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';

export const SCREENSHOT_DIR = join(import.meta.dirname, '..', '..', '..', '.test-artifacts', 'screenshots');

export const VIEWPORTS = {
  desktop: { width: 1280, height: 800 },
  phone: { width: 375, height: 740 },
} as const;

/**
 * A full-page screenshot of the current page at the viewport it has now, as `name`.png.
 * Returns how far the page is wider than the viewport, in px.
 */
export async function screenshotHere(page: Page, name: string): Promise<number> {
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  const overflow = await page.evaluate<number>(
    'document.documentElement.scrollWidth - document.documentElement.clientWidth',
  );
  await page.screenshot({ path: join(SCREENSHOT_DIR, `${name}.png`), fullPage: true });
  return overflow;
}

/**
 * Full-page screenshots of the current page at both widths (the desktop size is restored
 * afterwards). Returns how far the page is wider than the viewport at each width, in px.
 */
export async function screenshotBothWidths(
  page: Page,
  name: string,
): Promise<Record<keyof typeof VIEWPORTS, number>> {
  const overflow = { desktop: 0, phone: 0 };
  for (const [label, size] of Object.entries(VIEWPORTS) as [
    keyof typeof VIEWPORTS,
    { width: number; height: number },
  ][]) {
    await page.setViewportSize(size);
    overflow[label] = await screenshotHere(page, `${name}-${label}`);
  }
  await page.setViewportSize(VIEWPORTS.desktop);
  return overflow;
}

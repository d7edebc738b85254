// /docs in a real browser (Debian's Chromium) with every request outside the local origin
// aborted, as on a machine without internet access: the interactive reference still renders
// the operations of /openapi.json, under the dashboard's CSP, with no error in the page.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DASHBOARD_CSP } from '../../edge/src/middleware/security-headers.ts';
import { type LocalStack, startLocalStack } from '../../scripts/stack/local-stack.ts';
import { launchChromium, type TestBrowser } from './browser/debian-chromium.ts';

let stack: LocalStack;
let browser: TestBrowser;
let persistTo: string;
const outside: string[] = [];

beforeAll(async () => {
  persistTo = mkdtempSync(join(tmpdir(), 'rcpt-e2e-docs-'));
  // The reference needs the edge alone: no prober, no mail world.
  stack = await startLocalStack({ persistTo, startProber: false });
  browser = await launchChromium({ baseURL: stack.baseUrl });
  await browser.context.route('**/*', (route) => {
    const url = route.request().url();
    if (new URL(url).origin === stack.baseUrl) return route.continue();
    outside.push(url);
    return route.abort('internetdisconnected');
  });
});

afterAll(async () => {
  await browser?.close();
  await stack?.close();
  rmSync(persistTo, { recursive: true, force: true });
});

describe('the API reference at /docs', () => {
  it('is served under the strict CSP, its scripts from this origin', async () => {
    const response = await fetch(`${stack.baseUrl}/docs`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-security-policy')).toBe(DASHBOARD_CSP);
    const html = await response.text();
    expect(html).not.toMatch(/<script>|<style|https?:\/\//);
    for (const path of html.matchAll(/(?:src|href)="(\/[^"]+)"/g)) {
      const asset = await fetch(`${stack.baseUrl}${path[1]}`);
      expect(asset.status, path[1]).toBe(200);
    }
  });

  it('renders every operation with nothing but the local origin reachable', async () => {
    const { page } = browser;
    await page.goto('/docs');
    const paths = page.locator('.opblock-summary-path');
    await expect.poll(() => paths.count()).toBeGreaterThan(10);
    const verify = page.locator('.opblock-post', { has: page.getByText('/api/v1/verify', { exact: true }) });
    expect(await verify.locator('.opblock-summary-method').textContent()).toBe('POST');
    // Every documented operation is on the page.
    const document = (await (await fetch(`${stack.baseUrl}/openapi.json`)).json()) as {
      paths: Record<string, Record<string, unknown>>;
    };
    const documented = Object.entries(document.paths).flatMap(([path, operations]) =>
      Object.keys(operations).map((method) => `${method.toUpperCase()} ${path}`),
    );
    const shown = await page
      .locator('.opblock-summary')
      .evaluateAll((summaries) =>
        summaries.map(
          (summary) =>
            `${summary.querySelector('.opblock-summary-method')?.textContent} ${summary.querySelector('.opblock-summary-path')?.getAttribute('data-path')}`,
        ),
      );
    expect(shown.sort()).toEqual(documented.sort());
    expect(outside).toEqual([]);
    expect(browser.problems).toEqual([]);
  });
});

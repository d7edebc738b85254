// /docs in a real browser (Debian's Chromium) with every request outside the local origin
// aborted, as on a machine without internet access: the reference is plain HTML rendered from
// /openapi.json, under the dashboard's CSP, and shows every operation and schema of the
// document. axe and the phone width are checked where a customer reaches it from the dashboard
// (the walk in dashboard.test.ts).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
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
  stack = await startLocalStack({
    persistTo,
    migratedFrom: inject('migratedDatabase'),
    startProber: false,
  });
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

interface Document {
  paths: Record<string, Record<string, unknown>>;
  components: { schemas: Record<string, unknown> };
}

async function openApiDocument(): Promise<Document> {
  return (await (await fetch(`${stack.baseUrl}/openapi.json`)).json()) as Document;
}

describe('the API reference at /docs', () => {
  it('is HTML without script, under the strict CSP, its files from this origin', async () => {
    const response = await fetch(`${stack.baseUrl}/docs`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-security-policy')).toBe(DASHBOARD_CSP);
    const html = await response.text();
    expect(html).not.toMatch(/<script|<style|\sstyle=|\son[a-z]+=/i);
    const links = [...html.matchAll(/(?:src|href)="([^"#][^"]*)"/g)].map((match) => match[1] ?? '');
    expect(links.length).toBeGreaterThan(2);
    for (const link of links) {
      expect(link, link).toMatch(/^\//);
      const asset = await fetch(`${stack.baseUrl}${link}`);
      expect(asset.status, link).toBe(200);
    }
  });

  it('shows every operation and every schema of /openapi.json, each reachable from the contents', async () => {
    const { page } = browser;
    await page.goto('/docs');
    const document = await openApiDocument();
    const documented = Object.entries(document.paths).flatMap(([path, operations]) =>
      Object.keys(operations).map((method) => `${method.toUpperCase()} ${path}`),
    );
    expect(documented.length).toBeGreaterThan(10);
    const shown = await page
      .locator('.api-operation h3')
      .evaluateAll((headings) => headings.map((heading) => heading.textContent?.replace(/\s+/g, ' ').trim()));
    expect(shown.sort()).toEqual(documented.sort());
    // The contents link to each operation's section.
    const targets = await page
      .locator('nav[aria-labelledby="contents-title"] a')
      .evaluateAll((anchors) => anchors.map((anchor) => anchor.getAttribute('href')));
    for (const target of targets) expect(await page.locator(target ?? '#none').count(), target ?? '').toBe(1);
    expect(targets).toHaveLength(documented.length + 1);
    const schemas = await page
      .locator('section[id^="schema-"] h3')
      .evaluateAll((headings) => headings.map((heading) => heading.textContent));
    expect(schemas.sort()).toEqual(Object.keys(document.components.schemas).sort());
    // A request body that is a named schema lists its fields where the operation is.
    const verify = page.locator('#post-api-v1-verify');
    await expect.poll(() => verify.locator('th[scope="row"] code').allTextContents()).toContain('email');
    expect(outside).toEqual([]);
    expect(browser.problems).toEqual([]);
  });
});

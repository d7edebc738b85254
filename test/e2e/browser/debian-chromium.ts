// The system's Chromium (Debian's package), driven by playwright-core: never a downloaded
// browser. One persistent context on a fresh profile directory, removed on close.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BrowserContext, chromium, errors, type Page } from 'playwright-core';

export const CHROMIUM_PATH = '/usr/bin/chromium';

const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--no-first-run',
  '--disable-sync',
  '--disable-quic',
];

export interface TestBrowser {
  context: BrowserContext;
  page: Page;
  /** Console errors and uncaught page errors (a CSP violation shows up here). */
  problems: string[];
  close(): Promise<void>;
}

export interface LaunchOptions {
  baseURL: string;
  /** false runs the pages as a browser without JavaScript would (the no-script path). */
  javaScriptEnabled?: boolean;
}

/**
 * How long one launch may take: the first after Chromium is installed builds its caches, and a
 * loaded two-core runner slows it to tens of seconds. A launch still not up after this is taken
 * for hung (Playwright then kills it) and tried again on a fresh profile, up to LAUNCH_ATTEMPTS.
 */
const LAUNCH_LIMIT_MS = 90_000;
const LAUNCH_ATTEMPTS = 3;

export async function launchChromium(options: LaunchOptions): Promise<TestBrowser> {
  for (let attempt = 1; ; attempt++) {
    const profile = mkdtempSync(join(tmpdir(), 'rcpt-chromium-'));
    try {
      return await launchOn(profile, options);
    } catch (error) {
      rmSync(profile, { recursive: true, force: true });
      if (attempt === LAUNCH_ATTEMPTS || !(error instanceof errors.TimeoutError)) throw error;
    }
  }
}

async function launchOn(profile: string, options: LaunchOptions): Promise<TestBrowser> {
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: FLAGS,
    baseURL: options.baseURL,
    viewport: { width: 1280, height: 800 },
    acceptDownloads: true,
    javaScriptEnabled: options.javaScriptEnabled ?? true,
    timeout: LAUNCH_LIMIT_MS,
  });
  // Actions and navigations wait for their condition up to a minute (Playwright's default of
  // 30 s is too short on a loaded runner); the test's own timeout is the outer limit.
  context.setDefaultTimeout(60_000);
  const page = context.pages()[0] ?? (await context.newPage());
  const problems: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(`console: ${message.text()} @ ${message.location().url}`);
  });
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  return {
    context,
    page,
    problems,
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

// Runs the project's own wrangler with telemetry and network look-ups off.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';

export const REPO_ROOT = join(import.meta.dirname, '..', '..');
const WRANGLER = join(REPO_ROOT, 'node_modules', '.bin', 'wrangler');

export const QUIET_WRANGLER_ENV = {
  WRANGLER_SEND_METRICS: 'false',
  CLOUDFLARE_CF_FETCH_ENABLED: 'false',
  WRANGLER_HIDE_BANNER: 'true',
  WRANGLER_SEND_ERROR_REPORTS: 'false',
} as const;

/** Runs a wrangler command to completion; throws with its output when it fails. */
export function runWrangler(args: string[]): string {
  const result = spawnSync(WRANGLER, args, {
    cwd: REPO_ROOT,
    env: { ...process.env, ...QUIET_WRANGLER_ENV, CI: 'true' },
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  if (result.status !== 0) {
    throw new Error(`wrangler ${args.slice(0, 3).join(' ')} failed:\n${result.stderr || result.stdout}`);
  }
  return result.stdout;
}

/** Starts a long-running wrangler command (e.g. `dev`) in its own process group. */
export function spawnWrangler(args: string[], env: Record<string, string> = {}): ChildProcess {
  return spawn(WRANGLER, args, {
    cwd: REPO_ROOT,
    env: { ...process.env, ...QUIET_WRANGLER_ENV, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
}

// Runs a Node script as its own process, as a user would from a shell, and collects what it said.
import { spawn } from 'node:child_process';
import { once } from 'node:events';

export interface ProcessRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * How long a script may run before it counts as hung: under the e2e tests' own limit, so a hang
 * fails with the command and what it printed rather than as a test that merely ran out of time.
 */
export const SCRIPT_TIME_LIMIT_MS = 240_000;

/**
 * Runs `node script ...args` to its end; resolves once its output streams have closed. A script
 * still running after `timeoutMs` is killed, and the run rejects naming it and its last output.
 */
export async function runNodeScript(
  script: string,
  args: string[],
  options: { env?: NodeJS.ProcessEnv; cwd?: string; timeoutMs?: number } = {},
): Promise<ProcessRun> {
  const child = spawn(process.execPath, [script, ...args], {
    cwd: options.cwd,
    env: options.env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  const limit = options.timeoutMs ?? SCRIPT_TIME_LIMIT_MS;
  let hung = false;
  const timer = setTimeout(() => {
    hung = true;
    child.kill('SIGKILL');
  }, limit);
  const [code] = (await once(child, 'close').finally(() => clearTimeout(timer))) as [number | null];
  if (hung) {
    const last = (text: string) => text.slice(-2_000) || '(nothing)';
    throw new Error(
      `node ${script} ${args.join(' ')} was still running after ${limit / 1000} s and was killed;` +
        `\nits stderr ended: ${last(stderr)}\nits stdout ended: ${last(stdout)}`,
    );
  }
  return { code, stdout, stderr };
}

// Runs a Node script as its own process, as a user would from a shell, and collects what it said.
import { spawn } from 'node:child_process';
import { once } from 'node:events';

export interface ProcessRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `node script ...args` to its end; resolves once its output streams have closed. */
export async function runNodeScript(
  script: string,
  args: string[],
  options: { env?: NodeJS.ProcessEnv; cwd?: string } = {},
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
  const [code] = (await once(child, 'close')) as [number | null];
  return { code, stdout, stderr };
}

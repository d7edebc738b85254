// The local stack's waits end when waiting cannot help: a process it needs exits, or the edge
// refuses the prober's link (which the prober retries for ever, as a daemon should). Without
// wrangler: a real prober against a server that refuses its token, and plain Node processes.
import { type ChildProcess, spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { issueSecret } from '@rcpt/shared/secret-tokens';
import { afterAll, describe, expect, it } from 'vitest';
import {
  buildFailureReader,
  freePort,
  linkRefusalOf,
  StackStartError,
  startProber,
  stopProcess,
  waitUntil,
} from './stack/local-stack.ts';
import { REPO_ROOT } from './stack/wrangler-cli.ts';

const children: ChildProcess[] = [];
let refusingEdge: Server | undefined;

afterAll(async () => {
  await Promise.all(children.map((child) => stopProcess(child, 'SIGKILL')));
  await new Promise((resolve) => (refusingEdge ? refusingEdge.close(resolve) : resolve(undefined)));
});

/** A server that answers every link upgrade with 401, as the edge does a bad token; started once. */
async function startRefusingEdge(): Promise<AddressInfo> {
  if (!refusingEdge) {
    refusingEdge = createServer((_, response) => response.writeHead(404).end());
    refusingEdge.on('upgrade', (_, socket) => {
      socket.end('HTTP/1.1 401 Unauthorized\r\ncontent-length: 0\r\nconnection: close\r\n\r\n');
    });
    await new Promise<void>((resolve) => refusingEdge?.listen(0, '127.0.0.1', resolve));
  }
  const address = refusingEdge.address();
  if (!address || typeof address === 'string') throw new Error('no address');
  return address;
}

function node(script: string): ChildProcess {
  const child = spawn(process.execPath, ['-e', script], { stdio: 'ignore' });
  children.push(child);
  return child;
}

describe('linkRefusalOf', () => {
  const line = (fields: Record<string, unknown>) =>
    JSON.stringify({
      time: '2026-11-26T16:37:01.864Z',
      pid: 1,
      name: 'rcpt-prober',
      component: 'edge-link',
      ...fields,
    });
  it.each([
    [
      'a token refused (401)',
      line({ level: 'error', status: 401, msg: 'token rejected by the edge: check PROBER_TOKEN' }),
      'token rejected by the edge: check PROBER_TOKEN',
    ],
    [
      'a protocol version refused (4000)',
      line({
        level: 'error',
        code: 4000,
        reason: 'protocol version 9 not supported',
        msg: 'edge does not accept this prober version',
      }),
      'edge does not accept this prober version',
    ],
    [
      'a region refused (4003)',
      line({
        level: 'warn',
        code: 4003,
        reason: 'this token is for region eu',
        inFlight: 0,
        msg: 'link closed',
      }),
      'closed with 4003 (this token is for region eu)',
    ],
    [
      'a dropped link (1006)',
      line({ level: 'warn', code: 1006, reason: '', inFlight: 0, msg: 'link closed' }),
      null,
    ],
    [
      'no edge listening yet',
      line({ level: 'warn', error: 'connect ECONNREFUSED 127.0.0.1:8787', msg: 'link error' }),
      null,
    ],
    [
      'a gateway error (502)',
      line({ level: 'warn', status: 502, msg: 'edge refused the link upgrade' }),
      null,
    ],
    ['a line that is not JSON', '⎔ Starting local server...', null],
  ])('%s', (_, logLine, refusal) => {
    expect(linkRefusalOf(logLine)).toBe(refusal);
  });

  it("reads the real prober's line when the edge refuses its token", async () => {
    const address = await startRefusingEdge();
    const prober = spawn(process.execPath, [join(REPO_ROOT, 'prober', 'src', 'cli.ts'), 'run'], {
      cwd: REPO_ROOT,
      env: {
        ...process.env,
        EDGE_URL: `http://127.0.0.1:${address.port}`,
        PROBER_TOKEN: (await issueSecret('proberToken')).secret,
        REGION: 'default',
        OPS_PORT: '0',
        LOG_LEVEL: 'warn',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(prober);
    let output = '';
    const refusal = await new Promise<string>((resolve, reject) => {
      prober.once('exit', (code) => reject(new Error(`the prober exited with ${code}:\n${output}`)));
      for (const stream of [prober.stdout, prober.stderr]) {
        stream?.setEncoding('utf8').on('data', (chunk: string) => {
          output += chunk;
          for (const logLine of output.split('\n')) {
            const found = linkRefusalOf(logLine);
            if (found) resolve(found);
          }
        });
      }
    });
    expect(refusal).toContain('token rejected by the edge');
  });
});

/** Whether a server may listen on `port` now (nothing else holds it). */
function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', () => resolve(false));
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
  });
}

describe('startProber', () => {
  it('answers null when the ops port it was given is taken, and what went wrong otherwise', async () => {
    const address = await startRefusingEdge();
    const edge = { baseUrl: `http://127.0.0.1:${address.port}`, edge: node('setTimeout(() => {}, 60_000)') };
    const token = (await issueSecret('proberToken')).secret;
    const start = (opsPort: number) =>
      startProber('127.0.0.1', opsPort, edge, token, 'default', { env: {}, onLog: undefined });
    // The refusing edge's own port is taken: the prober cannot serve its ops there.
    expect(await start(address.port)).toBeNull();
    const opsPort = await freePort();
    await expect(start(opsPort)).rejects.toThrow("the edge refused the prober's link");
    // The refused prober (it would retry for ever) is gone: its ops port is free again.
    expect(await portIsFree(opsPort)).toBe(true);
  });
});

describe('buildFailureReader', () => {
  // wrangler dev 4's output when the Worker's bundle does not build, as it prints it (coloured).
  const failedBuild = [
    '\x1b[33m▲ \x1b[43;33m[\x1b[43;30mWARNING\x1b[43;33m]\x1b[0m \x1b[1mScheduled Workers are not automatically triggered during local development.\x1b[0m',
    '\x1b[31m✘ \x1b[41;31m[\x1b[41;97mERROR\x1b[41;31m]\x1b[0m \x1b[1mBuild failed with 3 errors:\x1b[0m',
    '  \x1b[31m✘ \x1b[41;31m[\x1b[41;97mERROR\x1b[41;31m]\x1b[0m \x1b[1mCould not resolve "stripe"\x1b[0m',
    '      edge/src/routes/stripe-webhook.ts:8:19:',
    '  \x1b[31m✘ \x1b[41;31m[\x1b[41;97mERROR\x1b[41;31m]\x1b[0m \x1b[1mCould not resolve "stripe"\x1b[0m',
  ];

  it('names the first error of a failed build, and what to run for a missing module', () => {
    const build = buildFailureReader();
    for (const line of failedBuild) build.read(line);
    expect(build.failure()).toBe('Could not resolve "stripe" (run npm install)');
  });

  it('says nothing for warnings and errors of a running Worker, and reads only what follows the failure', () => {
    const build = buildFailureReader();
    build.read(failedBuild[0] ?? '');
    build.read('✘ [ERROR] Uncaught TypeError: x is not a function');
    expect(build.failure()).toBeNull();
    build.read('✘ [ERROR] Build failed with 1 error:');
    expect(build.failure()).toBe('see its output');
    build.read('✘ [ERROR] Expected ";" but found "}"');
    expect(build.failure()).toBe('Expected ";" but found "}"');
  });
});

describe('waitUntil', () => {
  it('gives up when a watched process exits, naming it', async () => {
    const edge = node('setTimeout(() => {}, 60_000)');
    const prober = node('process.exit(3)');
    await expect(
      waitUntil('the prober to link', { 'the prober': prober, 'the edge': edge }, async () => false),
    ).rejects.toThrow('gave up waiting for the prober to link: the prober exited with 3');
  });

  it('gives up on a StackStartError and keeps polling through other errors', async () => {
    const edge = node('setTimeout(() => {}, 60_000)');
    let calls = 0;
    await expect(
      waitUntil('the prober to link', edge, async () => {
        calls++;
        if (calls < 3) throw new Error('ECONNREFUSED');
        throw new StackStartError('the edge refused the link');
      }),
    ).rejects.toThrow('gave up waiting for the prober to link: the edge refused the link');
    expect(calls).toBe(3);
  });
});

// Peak memory of the Worker while it reads a CSV upload, in workerd as `wrangler dev` runs it:
// a 10 MB file of 10,000 rows, and a 1.5 MB one-column bomb (750,000 lines of "a"). A Worker
// isolate has 128 MB (Cloudflare Workers limits), so an upload must stay far below that.
//
// How it is measured: a local stack (no prober) answers a warm-up upload; then, before each
// case, every workerd process's peak resident memory is reset to its current RSS (writing 5
// to /proc/PID/clear_refs, see proc(5)) and that RSS is read; after the upload, each one's
// peak (VmHWM, which the kernel keeps exactly). The figure is the largest rise of the peak over
// the resting RSS: what reading the upload added to the process holding the isolate, body
// buffers included.
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEV_ACCOUNT_ID, startLocalStack } from '../scripts/stack/local-stack.ts';
import { grantCredits } from '../scripts/stack/operator.ts';
import type { Figure } from './run.ts';

const MB = 1024 * 1024;

interface Case {
  name: string;
  body: string;
  expectStatus: number;
  /** Credits granted before the case (the account starts with the free 100). */
  grant?: number;
}

// Each row about 1 KB: the address and a long note, so that the file is just under 10 MB.
const note = 'n'.repeat(1_000);
const tenMegabytes = `email,note\n${Array.from({ length: 10_000 }, (_, index) => `user${index}@example.test,${note}`).join('\n')}\n`;
if (tenMegabytes.length > 10 * MB) throw new Error('the 10 MB file is too large');

const CASES: Case[] = [
  // Parsed in full, then refused before anything is stored: the parser's own cost.
  { name: '10 MB CSV, parsed then 402', body: tenMegabytes, expectStatus: 402 },
  { name: '10 MB CSV, parsed then 402 again', body: tenMegabytes, expectStatus: 402 },
  // Parsed, charged and stored (rows and original cells into the local D1, same process).
  { name: '10 MB CSV, stored as a job', body: tenMegabytes, expectStatus: 200, grant: 10_000 },
  { name: '1.5 MB one-column bomb (750,000 rows)', body: 'a\n'.repeat(750_000), expectStatus: 400 },
];

function descendants(pid: number): number[] {
  const found: number[] = [];
  const pending = [pid];
  while (pending.length > 0) {
    const next = pending.pop() as number;
    let children: number[] = [];
    try {
      children = readFileSync(`/proc/${next}/task/${next}/children`, 'utf8')
        .trim()
        .split(/\s+/)
        .filter(Boolean)
        .map(Number);
    } catch {}
    found.push(...children);
    pending.push(...children);
  }
  return found;
}

function statusKb(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const match = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Number(match[1]) : 0;
}

function workerdPids(root: number): number[] {
  return descendants(root).filter((pid) => {
    try {
      return readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'workerd';
    } catch {
      return false;
    }
  });
}

/**
 * POSTs a body and takes the answer even when the server answers before reading it all and
 * closes the connection (the bomb's 400 comes after 10,001 rows): fetch reports only EPIPE.
 */
function post(
  url: string,
  headers: Record<string, string>,
  body: string,
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(url, { method: 'POST', headers, agent: false }, (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => {
        text += chunk;
      });
      response.on('end', () => resolve({ status: response.statusCode ?? 0, text }));
    });
    request.on('error', (error) => {
      if (
        (error as NodeJS.ErrnoException).code !== 'EPIPE' &&
        (error as NodeJS.ErrnoException).code !== 'ECONNRESET'
      )
        reject(error);
    });
    request.end(body);
  });
}

const figures: Figure[] = [];
if (readdirSync('/proc').length === 0) throw new Error('needs /proc (Linux)');
const persistTo = mkdtempSync(join(tmpdir(), 'rcpt-bench-upload-'));
const stack = await startLocalStack({ persistTo, startProber: false });
try {
  const headers = { 'content-type': 'text/csv', 'x-api-key': stack.apiKey };
  const url = `${stack.baseUrl}/api/v1/bulk/upload`;
  const warm = await fetch(url, { method: 'POST', headers, body: 'email\nwarm@example.test\n' });
  if (warm.status !== 200) throw new Error(`warm-up answered ${warm.status}: ${await warm.text()}`);
  const pids = workerdPids(stack.edge.pid ?? 0);
  if (pids.length === 0) throw new Error('no workerd process found');
  for (const upload of CASES) {
    if (upload.grant) grantCredits(stack.d1, { accountId: DEV_ACCOUNT_ID, amount: upload.grant });
    for (const pid of pids) writeFileSync(`/proc/${pid}/clear_refs`, '5');
    const resting = new Map(pids.map((pid) => [pid, statusKb(pid, 'VmRSS')]));
    const response = await post(url, headers, upload.body);
    if (response.status !== upload.expectStatus)
      throw new Error(`${upload.name} answered ${response.status}: ${response.text.slice(0, 300)}`);
    const rise = Math.max(...pids.map((pid) => statusKb(pid, 'VmHWM') - (resting.get(pid) ?? 0)));
    figures.push({
      name: `${upload.name}: peak workerd memory rise`,
      value: rise / 1024,
      unit: 'MB',
      target: '< 128 (isolate limit)',
    });
  }
} finally {
  await stack.close();
  rmSync(persistTo, { recursive: true, force: true });
}
console.log(JSON.stringify(figures));

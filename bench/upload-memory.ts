// Memory of the Worker's isolate while it takes the largest uploads it accepts and gives back
// the largest export, in workerd as `wrangler dev` runs it. A Worker isolate has 128 MB
// (Cloudflare Workers limits); rcpt's target for one request is 64 MB of V8 heap.
//
// How it is measured, through the Worker's inspector (Chrome DevTools Protocol, the port
// `wrangler dev --inspector-port` serves):
// - before each case, a heap snapshot (`HeapProfiler.takeHeapSnapshot`): V8 collects garbage
//   before it takes one, so the sum of its nodes' self sizes is the isolate's live heap at rest
//   (`HeapProfiler.collectGarbage` itself never answers under workerd);
// - during the request, `Runtime.getHeapUsage` polled back to back: the largest `usedSize` seen
//   is the isolate's heap at its peak, garbage not yet collected included — what the isolate's
//   limit is checked against. The figure is that peak; the rise over the resting heap is printed
//   beside it.
// The workerd process's peak resident memory (VmHWM, reset through /proc/PID/clear_refs, see
// proc(5)) is printed as well: it also holds body buffers outside the V8 heap.
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEV_ACCOUNT_ID } from '../scripts/stack/local-stack.ts';
import { createApiKey, grantCredits } from '../scripts/stack/operator.ts';
import { startBenchStack } from './bench-stack.ts';
import type { Figure } from './run.ts';

const MB = 1024 * 1024;
const TARGET = '≤ 64 (isolate heap)';

// Each row about 1 KB: the address and a long note, so that the file is just under 10 MB.
const note = 'n'.repeat(1_000);
const tenMegabytes = `email,note\n${Array.from({ length: 10_000 }, (_, index) => `user${index}@example.test,${note}`).join('\n')}\n`;
if (tenMegabytes.length > 10 * MB) throw new Error('the 10 MB file is too large');
// The most cells a file may hold (MAX_CSV_CELLS): a header and 9,999 rows of 100 columns.
const widest = `email${',c'.repeat(99)}\n${Array.from({ length: 9_999 }, (_, index) => `user${index}@example.test${',abcdefgh'.repeat(99)}`).join('\n')}\n`;
// 10,000 addresses of 254 characters as JSON, the largest accepted JSON upload.
const longJson = JSON.stringify({
  emails: Array.from(
    { length: 10_000 },
    (_, index) => `${'a'.repeat(60)}${index}@${'d'.repeat(60)}.${'e'.repeat(60)}.${'f'.repeat(60)}.test`,
  ),
});

interface Case {
  name: string;
  method: 'POST' | 'GET';
  path: string;
  headers: Record<string, string>;
  body?: string;
  expectStatus: number;
  /** Credits granted before the case (the account starts with the free 100). */
  grant?: number;
}

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
 * Sends a request and takes the answer even when the server answers before reading the body
 * and closes the connection: fetch reports only EPIPE then.
 */
function send(
  url: string,
  method: string,
  headers: Record<string, string>,
  body?: string,
): Promise<{ status: number; bytes: number; text: string }> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(url, { method, headers, agent: false }, (response) => {
      let bytes = 0;
      let head = '';
      response.on('data', (chunk: Buffer) => {
        bytes += chunk.length;
        if (head.length < 300) head += chunk.toString('utf8', 0, 300);
      });
      response.on('end', () => resolve({ status: response.statusCode ?? 0, bytes, text: head }));
    });
    request.on('error', (error) => {
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== 'EPIPE' && code !== 'ECONNRESET') reject(error);
    });
    request.end(body);
  });
}

/** A Chrome DevTools Protocol session with the Worker's isolate. */
class Inspector {
  #socket: WebSocket;
  #nextId = 1;
  #pending = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>();
  #chunks: string[] = [];

  private constructor(socket: WebSocket) {
    this.#socket = socket;
    socket.addEventListener('message', (event) => {
      const message = JSON.parse(String(event.data)) as {
        id?: number;
        method?: string;
        params?: { chunk?: string };
        result?: unknown;
        error?: { message: string };
      };
      if (message.method === 'HeapProfiler.addHeapSnapshotChunk')
        this.#chunks.push(message.params?.chunk ?? '');
      if (message.id === undefined) return;
      const waiter = this.#pending.get(message.id);
      this.#pending.delete(message.id);
      if (message.error) waiter?.reject(new Error(message.error.message));
      else waiter?.resolve(message.result);
    });
  }

  static async connect(port: number): Promise<Inspector> {
    const targets = (await (await fetch(`http://127.0.0.1:${port}/json`)).json()) as {
      webSocketDebuggerUrl: string;
    }[];
    const url = targets[0]?.webSocketDebuggerUrl;
    if (!url) throw new Error('the inspector lists no target');
    // wrangler's inspector proxy answers only DevTools-like clients: a local Origin.
    const socket = new WebSocket(url, { headers: { origin: 'http://localhost' } } as unknown as string[]);
    await new Promise((resolve, reject) => {
      socket.addEventListener('open', resolve, { once: true });
      socket.addEventListener('error', () => reject(new Error(`no inspector at ${url}`)), { once: true });
    });
    return new Inspector(socket);
  }

  call<T>(method: string, params: Record<string, unknown> = {}): Promise<T> {
    const id = this.#nextId++;
    this.#socket.send(JSON.stringify({ id, method, params }));
    return new Promise<T>((resolve, reject) => {
      this.#pending.set(id, { resolve: resolve as (value: unknown) => void, reject });
    });
  }

  /** The live heap in bytes: the self sizes of a fresh heap snapshot's nodes (taken after a GC). */
  async liveHeap(): Promise<number> {
    this.#chunks = [];
    await this.call('HeapProfiler.takeHeapSnapshot', { reportProgress: false });
    const snapshot = JSON.parse(this.#chunks.join('')) as {
      snapshot: { meta: { node_fields: string[] } };
      nodes: number[];
    };
    this.#chunks = [];
    const fields = snapshot.snapshot.meta.node_fields;
    const selfSize = fields.indexOf('self_size');
    let total = 0;
    for (let index = selfSize; index < snapshot.nodes.length; index += fields.length)
      total += snapshot.nodes[index] ?? 0;
    return total;
  }

  heapUsed(): Promise<number> {
    return this.call<{ usedSize: number }>('Runtime.getHeapUsage').then((usage) => usage.usedSize);
  }

  close(): void {
    this.#socket.close();
  }
}

const figures: Figure[] = [];
if (readdirSync('/proc').length === 0) throw new Error('needs /proc (Linux)');
const persistTo = mkdtempSync(join(tmpdir(), 'rcpt-bench-upload-'));
const stack = await startBenchStack({ persistTo, startProber: false });
try {
  const upload = `${stack.baseUrl}/api/v1/bulk/upload`;
  const live = { 'content-type': 'text/csv', 'x-api-key': stack.apiKey };
  const warm = await fetch(upload, { method: 'POST', headers: live, body: 'email\nwarm@example.test\n' });
  if (warm.status !== 200) throw new Error(`warm-up answered ${warm.status}: ${await warm.text()}`);
  // The account's daily storage budget grows with the credits it holds (docs/money.md, "Quotas
  // and free work"): 5,000 more make room for the 10 MB sandbox list, and still leave too few for
  // the 10,000 addresses of the 402 case below.
  grantCredits(stack.d1, { accountId: DEV_ACCOUNT_ID, amount: 5_000 });
  // A sandbox job completes at upload, so its results can be exported without a prober.
  const testKey = (await createApiKey(stack.d1, { accountId: DEV_ACCOUNT_ID, name: 'bench', mode: 'test' }))
    .secret;
  const sandbox = await send(
    upload,
    'POST',
    { 'content-type': 'text/csv', 'x-api-key': testKey },
    tenMegabytes,
  );
  if (sandbox.status !== 200) throw new Error(`the sandbox job answered ${sandbox.status}: ${sandbox.text}`);
  const sandboxJob = (JSON.parse(sandbox.text.length < 300 ? sandbox.text : '{}') as { jobId?: string })
    .jobId;
  if (!sandboxJob) throw new Error(`no job id in ${sandbox.text}`);

  const cases: Case[] = [
    // Parsed in full, then refused before anything is stored: the parser's own cost.
    {
      name: '10 MB CSV, parsed then 402',
      method: 'POST',
      path: upload,
      headers: live,
      body: tenMegabytes,
      expectStatus: 402,
    },
    // Parsed, charged and stored (rows and original cells into the local D1).
    {
      name: '10 MB CSV, stored as a job',
      method: 'POST',
      path: upload,
      headers: { ...live, 'idempotency-key': 'bench-10mb' },
      body: tenMegabytes,
      expectStatus: 200,
      // Credits for the three stored cases at once: a grant between them would race the queue
      // consumer's writes for the job before (SQLITE_BUSY from `wrangler d1 execute`).
      grant: 30_000,
    },
    {
      name: '1,000,000 cells (9,999 rows × 100 columns), stored',
      method: 'POST',
      path: upload,
      headers: live,
      body: widest,
      expectStatus: 200,
    },
    {
      name: '10,000 longest addresses as JSON, stored',
      method: 'POST',
      path: upload,
      headers: { 'content-type': 'application/json', 'x-api-key': stack.apiKey },
      body: longJson,
      expectStatus: 200,
    },
    {
      name: '1.5 MB one-column bomb (750,000 rows)',
      method: 'POST',
      path: upload,
      headers: live,
      body: 'a\n'.repeat(750_000),
      expectStatus: 400,
    },
    // One row of 10 MB of commas: refused for its columns once the row ends, with no row ever
    // holding more than 1,001 cells.
    {
      name: '10 MB line of commas (10.5 million empty cells)',
      method: 'POST',
      path: upload,
      headers: live,
      body: `email\n${','.repeat(10 * MB - 7)}\n`,
      expectStatus: 400,
    },
    {
      name: 'CSV export of the 10 MB job',
      method: 'GET',
      path: `${stack.baseUrl}/api/v1/bulk/results/${sandboxJob}?format=csv`,
      headers: { 'x-api-key': testKey },
      expectStatus: 200,
    },
    {
      name: 'JSON results of the 10 MB job, one page of 10,000',
      method: 'GET',
      path: `${stack.baseUrl}/api/v1/bulk/results/${sandboxJob}`,
      headers: { 'x-api-key': testKey },
      expectStatus: 200,
    },
  ];

  const pids = workerdPids(stack.edge.pid ?? 0);
  if (pids.length === 0) throw new Error('no workerd process found');
  const inspector = await Inspector.connect(stack.inspectorPort);
  try {
    for (const item of cases) {
      if (item.grant) grantCredits(stack.d1, { accountId: DEV_ACCOUNT_ID, amount: item.grant });
      const resting = await inspector.liveHeap();
      for (const pid of pids) writeFileSync(`/proc/${pid}/clear_refs`, '5');
      const restingRss = new Map(pids.map((pid) => [pid, statusKb(pid, 'VmRSS')]));
      let peak = await inspector.heapUsed();
      let done = false;
      const sampling = (async () => {
        while (!done) peak = Math.max(peak, await inspector.heapUsed());
      })();
      const response = await send(item.path, item.method, item.headers, item.body);
      done = true;
      await sampling;
      if (response.status !== item.expectStatus)
        throw new Error(`${item.name} answered ${response.status}: ${response.text.slice(0, 300)}`);
      const rss = Math.max(...pids.map((pid) => statusKb(pid, 'VmHWM') - (restingRss.get(pid) ?? 0)));
      figures.push(
        { name: `${item.name}: isolate heap at peak`, value: peak / MB, unit: 'MB', target: TARGET },
        {
          name: `${item.name}: rise over the resting heap (${(resting / MB).toFixed(1)} MB)`,
          value: (peak - resting) / MB,
          unit: 'MB',
        },
        { name: `${item.name}: peak workerd RSS rise`, value: rss / 1024, unit: 'MB' },
      );
    }
  } finally {
    inspector.close();
  }
} finally {
  await stack.close();
  rmSync(persistTo, { recursive: true, force: true });
}
console.log(JSON.stringify(figures));

// What one call and 1,000 batch addresses cost the platform, counted by the edge itself
// (RCPT_METER): D1 statements, round trips and rows; Durable Object requests (inside the
// object) and calls (at the caller); queue writes, consumer batches, reads, acks and retries;
// requests to the internet; and the subrequests those add up to. Through the whole stack on
// loopback: the real edge under wrangler, a real prober, the fake mail world. docs/capacity.md
// turns the counts into ceilings for one D1 database and one hub.
//
// Each single-call figure is the sum over a run of calls one after another, divided by the
// calls; the batch is the 10,000-address list of 4 columns, its figures per 1,000 addresses.
// The hub's token recheck (one alarm a minute while a prober is linked: one Durable Object
// request and one D1 query) may fall into a run and is counted with it. The batch is watched
// through the local database file, not the API, so no status poll is counted in it.
// Local limit: one consumer batch at a time, so batches arrive full (docs/capacity.md).
//
// What the batch leaves in D1 is read from the local database file itself (local D1 is SQLite):
// a copy taken before the upload and one after completion, each read with SQLite's dbstat table
// (https://www.sqlite.org/dbstat.html), which D1 does not serve. By table, its indexes included:
// the pages it grew by (what counts against D1's 10 GB) and the bytes of its records in them.
// What it leaves in its JobStore object is that object's SQLite file, read the same way: its
// pages times the page size, which is what `ctx.storage.sql.databaseSize` answers inside the
// object (and what counts against an object's 10 GB).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { METER_KEYS, type MeterCounts, subrequestsOf, sumMeterLines } from '../edge/src/meter-line.ts';
import { localDatabaseFile, queryRowsAsync, sqlLiteral } from '../scripts/stack/d1.ts';
import { databaseSize, jobStoreFiles, readSqliteCopy } from '../scripts/stack/job-store-files.ts';
import { DEV_ACCOUNT_ID } from '../scripts/stack/local-stack.ts';
import { createApiKeys, grantCredits } from '../scripts/stack/operator.ts';
import { companyList } from '../test/world/expected-verdicts.ts';
import { DOMAINS, startWorld } from '../test/world/index.ts';
import { startBenchStack } from './bench-stack.ts';
import type { Figure } from './run.ts';

const CALLS = 20;
/** The list's columns beside the address, as a customer's export has them. */
const CSV_HEADER = 'email,first_name,last_name,company';
const NEW_DOMAINS = 10;
/** The 10,000-address list of the batch benchmark: 50 addresses a domain. */
const BATCH_ADDRESSES = 10_000;
const BATCH_DOMAINS = 200;

const world = await startWorld();
const persistTo = mkdtempSync(join(tmpdir(), 'rcpt-bench-capacity-'));
// The world's MX hosts are on 127.0.0.x; the prober alone speaks SMTP, on the world's port.
const common = { ALLOW_PRIVATE_TARGETS: 'true' };
const meterLines: string[] = [];
const stack = await startBenchStack({
  persistTo,
  vars: { DOH_URL: world.dohUrl, RCPT_METER: 'true', ...common },
  proberEnv: { ...common, SMTP_PORT: String(world.smtpPort), CAPACITY: '200', PER_MX_CONCURRENCY: '20' },
  onLog: (source, line) => {
    if (source === 'edge' && line.includes('rcpt-meter ')) meterLines.push(line);
  },
});
const figures: Figure[] = [];

/** Resolves once no meter line has arrived for half a second: the calls' background work is done. */
async function settled(): Promise<void> {
  let seen = -1;
  while (seen !== meterLines.length) {
    seen = meterLines.length;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

/** The local D1 database file under `folder` (wrangler's persisted state). */
function databaseFile(folder: string): string {
  const file = localDatabaseFile({ persistTo: folder });
  if (!file) throw new Error(`no local D1 database under ${folder}`);
  return file;
}

/**
 * Pages and record bytes of each table, its indexes included, in a copy of the database file now,
 * and the bytes the storage budgets have counted (`storage_days`, every account and day): all of
 * them (the accounts' budgets), and those written to D1 (the store's daily write budget).
 */
function tableSizes(): {
  tables: Map<string, { pageBytes: number; payloadBytes: number }>;
  counted: { all: number; d1: number };
} {
  return readSqliteCopy(databaseFile(persistTo), (database) => {
    const rows = database
      .prepare(
        `SELECT COALESCE(s.tbl_name, d.name) AS tableName, SUM(d.pgsize) AS pageBytes, SUM(d.payload) AS payloadBytes
         FROM dbstat d LEFT JOIN sqlite_schema s ON s.name = d.name GROUP BY 1`,
      )
      .all() as { tableName: string; pageBytes: number; payloadBytes: number }[];
    const counted = database
      .prepare('SELECT COALESCE(SUM(bytes), 0) AS "all", COALESCE(SUM(d1_bytes), 0) AS d1 FROM storage_days')
      .get() as { all: number; d1: number };
    return { tables: new Map(rows.map((row) => [row.tableName, row])), counted };
  });
}

/** The counts of `calls` runs of `run`, one after another, divided by `per`. */
async function measure(
  label: string,
  calls: number,
  run: (index: number) => Promise<void>,
  per = calls,
): Promise<void> {
  await settled();
  const start = meterLines.length;
  for (let index = 0; index < calls; index++) await run(index);
  await settled();
  report(label, sumMeterLines(meterLines.slice(start)), per);
}

function report(label: string, total: Required<MeterCounts>, per: number): void {
  for (const key of METER_KEYS) {
    if (total[key] === 0) continue;
    figures.push({ name: `${label}: ${key}`, value: total[key] / per, unit: '' });
  }
  figures.push({ name: `${label}: subrequests`, value: subrequestsOf(total) / per, unit: '' });
}

/** The job's status, read from the local database file (scripts/stack/d1.ts). */
async function jobStatus(jobId: string): Promise<unknown> {
  const [row] = await queryRowsAsync(
    { persistTo },
    `SELECT status FROM jobs WHERE id = ${sqlLiteral(jobId)}`,
  );
  return row?.status;
}

async function expectOk(response: Response, what: string): Promise<unknown> {
  if (response.status !== 200)
    throw new Error(`${what} answered ${response.status}: ${await response.text()}`);
  return response.json();
}

try {
  grantCredits(stack.d1, { accountId: DEV_ACCOUNT_ID, amount: 20_000 });
  // 100 requests a minute per key: each run of calls has its own.
  const [freshKey, newDomainKey, cachedKey, batchKey] = await createApiKeys(stack.d1, {
    accountId: DEV_ACCOUNT_ID,
    count: 4,
    mode: 'live',
  });
  const [sandboxKey] = await createApiKeys(stack.d1, { accountId: DEV_ACCOUNT_ID, count: 1, mode: 'test' });
  if (!freshKey || !newDomainKey || !cachedKey || !batchKey || !sandboxKey) throw new Error('no keys');

  const verify = async (key: string, email: string, fresh: boolean) => {
    const response = await fetch(`${stack.baseUrl}/api/v1/verify`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': key },
      body: JSON.stringify({ email, ...(fresh ? { fresh: true } : {}) }),
    });
    await expectOk(response, 'verify');
  };
  const address = `alice@${DOMAINS.accept}`;
  await verify(freshKey, address, true); // the domain's facts and the DNS cache, warm

  await measure('single call, SMTP probe, domain known', CALLS, () => verify(freshKey, address, true));
  // Domains of the world's patient bulk server, which the batch below does not use.
  await measure('single call, SMTP probe, domain new', NEW_DOMAINS, (index) =>
    verify(newDomainKey, `user1@bulk-${String(index + 1).padStart(2, '0')}.test`, true),
  );
  await measure('single call, cached verdict', CALLS, () => verify(cachedKey, address, false));
  await measure('single call, sandbox key', CALLS, () => verify(sandboxKey, 'deliverable@example.com', true));

  // 10,000 addresses: upload → completed, watched in the database file.
  for (const mx of world.companyMx) mx.resetStats();
  const list = companyList({ count: BATCH_ADDRESSES, domains: BATCH_DOMAINS }).map((entry) => entry.address);
  // A 4-column CSV, as a customer's export is: the address, a name and a company.
  const csv = `${CSV_HEADER}\n${list.map((address, index) => `${address},Ada${index},Lovelace${index},Company ${index % 97}`).join('\n')}\n`;
  await settled();
  const sizesBefore = tableSizes();
  const objectsBefore = new Set(jobStoreFiles(persistTo));
  let jobId = '';
  await measure(
    'per 1,000 batch addresses (upload → completed)',
    1,
    async () => {
      const upload = await fetch(`${stack.baseUrl}/api/v1/bulk/upload`, {
        method: 'POST',
        headers: { 'content-type': 'text/csv', 'x-api-key': batchKey },
        body: csv,
      });
      ({ jobId } = (await expectOk(upload, 'upload')) as { jobId: string });
      const started = Date.now();
      for (;;) {
        const status = await jobStatus(jobId);
        if (status === 'completed') return;
        if (status !== 'processing') throw new Error(`job ${jobId} is ${String(status)}`);
        if (Date.now() - started > 600_000) throw new Error('job still processing after 10 minutes');
      }
    },
    BATCH_ADDRESSES / 1000,
  );
  // What the batch left in D1, by table (its indexes included), per 1,000 addresses.
  const sizesAfter = tableSizes();
  const kept = { pageBytes: 0, payloadBytes: 0 };
  for (const [table, after] of sizesAfter.tables) {
    const before = sizesBefore.tables.get(table) ?? { pageBytes: 0, payloadBytes: 0 };
    const grown = {
      pageBytes: (after.pageBytes - before.pageBytes) / (BATCH_ADDRESSES / 1000),
      payloadBytes: (after.payloadBytes - before.payloadBytes) / (BATCH_ADDRESSES / 1000),
    };
    if (grown.pageBytes === 0 && grown.payloadBytes === 0) continue;
    kept.pageBytes += grown.pageBytes;
    kept.payloadBytes += grown.payloadBytes;
    figures.push(
      { name: `D1 kept per 1,000 batch addresses, ${table}: pages`, value: grown.pageBytes, unit: 'bytes' },
      {
        name: `D1 kept per 1,000 batch addresses, ${table}: records`,
        value: grown.payloadBytes,
        unit: 'bytes',
      },
    );
  }
  figures.push(
    { name: 'D1 kept per 1,000 batch addresses, all tables: pages', value: kept.pageBytes, unit: 'bytes' },
    {
      name: 'D1 kept per 1,000 batch addresses, all tables: records',
      value: kept.payloadBytes,
      unit: 'bytes',
    },
    {
      name: 'D1 kept per batch address: pages',
      value: kept.pageBytes / 1000,
      unit: 'bytes',
      target: '≤ 100',
    },
    {
      name: 'storage budget counted per 1,000 batch addresses',
      value: (sizesAfter.counted.all - sizesBefore.counted.all) / (BATCH_ADDRESSES / 1000),
      unit: 'bytes',
    },
    {
      name: 'daily write budget (D1) counted per 1,000 batch addresses',
      value: (sizesAfter.counted.d1 - sizesBefore.counted.d1) / (BATCH_ADDRESSES / 1000),
      unit: 'bytes',
    },
  );
  // The job's lists, in its own object (the batch's is the only JobStore this run makes).
  const objectBytes =
    jobStoreFiles(persistTo)
      .filter((file) => !objectsBefore.has(file))
      .reduce((sum, file) => sum + databaseSize(file), 0) /
    (BATCH_ADDRESSES / 1000);
  figures.push(
    {
      name: 'JobStore object kept per 1,000 batch addresses: databaseSize',
      value: objectBytes,
      unit: 'bytes',
    },
    {
      name: 'D1 and object kept per 1,000 batch addresses',
      value: kept.pageBytes + objectBytes,
      unit: 'bytes',
    },
    {
      name: 'D1 and object kept per batch address',
      value: (kept.pageBytes + objectBytes) / 1000,
      unit: 'bytes',
    },
  );
  // What the defended servers did: their refusals and deferrals are what the batch retries.
  const stats = world.companyMx.map((mx) => mx.stats());
  const sum = (pick: (entry: (typeof stats)[number]) => number) => stats.reduce((a, b) => a + pick(b), 0);
  figures.push(
    { name: 'batch: SMTP sessions opened', value: sum((entry) => entry.sessionsOpened), unit: '' },
    {
      name: 'batch: connections refused (cap)',
      value: sum((entry) => entry.connectionCapRefusals),
      unit: '',
    },
    { name: 'batch: hang-ups (too many errors)', value: sum((entry) => entry.hardLimitHangups), unit: '' },
    { name: 'batch: replies delayed by error sleep', value: sum((entry) => entry.errorSleeps), unit: '' },
  );
  const get = async (path: string) => {
    const response = await fetch(`${stack.baseUrl}${path}`, { headers: { 'x-api-key': batchKey } });
    if (response.status !== 200)
      throw new Error(`${path} answered ${response.status}: ${await response.text()}`);
    return response.text();
  };
  await measure('status poll (GET /api/v1/bulk/status/{id})', CALLS, async () => {
    await get(`/api/v1/bulk/status/${jobId}`);
  });
  await measure(
    'CSV of the results, per 1,000 (GET /api/v1/bulk/results/{id}?format=csv)',
    1,
    async () => {
      const csv = await get(`/api/v1/bulk/results/${jobId}?format=csv`);
      // The header and one line per address.
      if (csv.trim().split('\n').length !== BATCH_ADDRESSES + 1)
        throw new Error(`the CSV is not the ${BATCH_ADDRESSES} results`);
    },
    BATCH_ADDRESSES / 1000,
  );
} finally {
  await stack.close();
  await world.close();
  rmSync(persistTo, { recursive: true, force: true });
}
console.log(JSON.stringify(figures));

// One ProberHub's throughput: how many probe RPCs a second one Durable Object schedules, sends
// to its probers and answers — the figure that says when a region's hub must be sharded
// (README, "Batch jobs"). The hub is the edge's own class under `wrangler dev`
// (bench/hub/worker.ts); the probers are WebSocket clients in this process that answer every
// probe at once, so no SMTP, DNS or D1 is on the path: only the RPC, the scheduler, one probe
// message out and one result message in, each checked against the prober-link schemas.
// Local limits: the RPCs, the hub and both workerd processes of `wrangler dev` (whose proxy
// also relays every WebSocket frame) share this machine's two cores with the probers.
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ProbeMessage, ProberMessage } from '@rcpt/shared/contract/prober';
import { WebSocket } from 'ws';
import { applyMigrations } from '../scripts/stack/d1.ts';
import { freePort, stopProcess, waitUntil } from '../scripts/stack/local-stack.ts';
import { createProberToken } from '../scripts/stack/operator.ts';
import { spawnWrangler } from '../scripts/stack/wrangler-cli.ts';
import type { Figure } from './run.ts';

const HOST = '127.0.0.1';
/** Probes per measured run, after a warm-up run of the same shape. */
const PROBES = 4_000;

const persistTo = mkdtempSync(join(tmpdir(), 'rcpt-bench-hub-'));
// The hub checks its probers' tokens in D1 every minute: one live token keeps them linked.
await applyMigrations({ persistTo });
const token = await createProberToken({ persistTo }, { region: 'default', name: 'bench' });
const port = await freePort(HOST);
const worker = spawnWrangler([
  'dev',
  '--config',
  join('bench', 'hub', 'wrangler.toml'),
  '--local',
  '--ip',
  HOST,
  '--port',
  String(port),
  '--inspector-port',
  String(await freePort(HOST)),
  '--persist-to',
  persistTo,
  '--show-interactive-dev-session=false',
  '--log-level',
  'warn',
  '--var',
  `BENCH_TOKEN_ID:${token.id}`,
]);
const baseUrl = `http://${HOST}:${port}`;
const probers: WebSocket[] = [];
const figures: Figure[] = [];

/** A prober that says hello and answers every probe at once: every address accepted. */
async function linkProber(): Promise<WebSocket> {
  const ws = new WebSocket(`ws://${HOST}:${port}/connect?region=default`);
  await new Promise<void>((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  ws.on('message', (data) => {
    const probe = JSON.parse(String(data)) as ProbeMessage;
    if (probe.type !== 'probe') return;
    const result: ProberMessage = {
      type: 'result',
      id: probe.id,
      perAddress: probe.emails.map((email) => ({
        email,
        reply: { code: 250, enhanced: '2.1.5', text: 'Recipient OK' },
        failure: null,
      })),
      catchAllReply: { code: 550, enhanced: '5.1.1', text: 'User unknown' },
      session: {
        mxHost: probe.mx[0]?.host ?? null,
        mxIp: null,
        tls: false,
        tlsError: null,
        smtputf8: false,
        durationMs: 0,
      },
    };
    ws.send(JSON.stringify(result));
  });
  const hello: ProberMessage = {
    type: 'hello',
    id: 'hello',
    version: 1,
    region: 'default',
    capacity: 500,
    perMxConcurrency: 500,
  };
  ws.send(JSON.stringify(hello));
  return ws;
}

async function readyProbers(): Promise<number> {
  const status = (await (await fetch(`${baseUrl}/status`)).json()) as { ready: boolean }[];
  return status.filter((prober) => prober.ready).length;
}

async function drive(shape: {
  concurrency: number;
  hosts: number;
  addresses: number;
  accounts: number;
}): Promise<number> {
  const query = new URLSearchParams({
    count: String(PROBES),
    concurrency: String(shape.concurrency),
    hosts: String(shape.hosts),
    addresses: String(shape.addresses),
    accounts: String(shape.accounts),
  });
  const response = await fetch(`${baseUrl}/drive?${query}`);
  if (!response.ok) throw new Error(`drive answered ${response.status}: ${await response.text()}`);
  const run = (await response.json()) as { count: number; answered: number; seconds: number };
  if (run.answered !== run.count) throw new Error(`${run.count - run.answered} probes got no report`);
  return run.count / run.seconds;
}

try {
  await waitUntil('the bench hub worker', worker, async () => (await fetch(`${baseUrl}/status`)).ok);
  figures.push({ name: 'load average (1 min) before', value: loadavg()[0] ?? Number.NaN, unit: '' });
  const shapes = [
    {
      probers: 1,
      concurrency: 1,
      hosts: 1,
      addresses: 1,
      accounts: 1,
      label: '1 in flight, 1-address probes',
    },
    {
      probers: 1,
      concurrency: 20,
      hosts: 20,
      addresses: 1,
      accounts: 1,
      label: '20 in flight, 1-address probes',
    },
    {
      probers: 4,
      concurrency: 100,
      hosts: 50,
      addresses: 1,
      accounts: 1,
      label: '100 in flight, 1-address probes',
    },
    {
      probers: 4,
      concurrency: 100,
      hosts: 50,
      addresses: 1,
      accounts: 50,
      label: '100 in flight, 1-address probes, 50 accounts',
    },
    {
      probers: 4,
      concurrency: 100,
      hosts: 50,
      addresses: 15,
      accounts: 1,
      label: '100 in flight, 15-address probes',
    },
  ];
  const rates: number[] = [];
  for (const shape of shapes) {
    while (probers.length < shape.probers) probers.push(await linkProber());
    await waitUntil(
      `${shape.probers} ready probers`,
      worker,
      async () => (await readyProbers()) === shape.probers,
    );
    await drive(shape); // warm-up: the isolate, the JIT, the sockets
    const rate = await drive(shape);
    if (shape.concurrency === 100 && shape.addresses === 1) rates.push(rate);
    figures.push({
      name: `one hub, ${shape.probers} prober(s), ${shape.label}`,
      value: rate,
      unit: 'probes/s',
    });
  }
  // README, "Batch jobs": a hub's queue stays short while it is less than half busy, so a region
  // whose sustained rate nears half of one hub's (the slower of the 100-in-flight runs, one
  // account or many) needs the sharded hub.
  figures.push({
    name: "sharding trigger: sustained probes/s of a region past half of one hub's rate",
    value: Math.min(...rates) / 2,
    unit: 'probes/s',
  });
  figures.push({ name: 'load average (1 min) after', value: loadavg()[0] ?? Number.NaN, unit: '' });
} finally {
  for (const ws of probers) ws.close();
  await stopProcess(worker, 'SIGTERM', true);
  rmSync(persistTo, { recursive: true, force: true });
}
console.log(JSON.stringify(figures));

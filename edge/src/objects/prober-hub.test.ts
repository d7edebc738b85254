import { runDurableObjectAlarm } from 'cloudflare:test';
import { env } from 'cloudflare:workers';
import type { ProbeMessage, ProbeReport, ProbeRequest } from '@rcpt/shared/contract/prober';
import { describe, expect, it, vi } from 'vitest';
import { until, untilValue } from '../../../test/eventually.ts';
import {
  announceEgresses,
  blockAt,
  connectProber,
  type FakeProber,
  hubOf,
  linkToHub,
  newProberToken,
  reportFor,
  startFakeProber,
} from '../../test/fake-prober.ts';
import { db, listsRows, revokeCredentialForTest } from '../../test/fixtures.ts';
import { configOf } from '../config.ts';
import { batchHubWork, dispatchToRegions } from '../services/batch/hub-work.ts';
import type { BatchTask } from '../services/batch/types.ts';
import { alertsView } from '../services/fleet/alerts.ts';
import { regionsGateway } from '../services/fleet/prober-gateway.ts';
import { probesOutPerMx } from './mx-affinity.ts';
import type { HubWork } from './prober-hub.ts';
import { MAX_PROBER_CAPACITY } from './prober-links.ts';

const request: ProbeRequest = {
  emails: ['alice@accept.test'],
  domain: 'accept.test',
  mx: [{ host: 'mx.accept.test', preference: 10, ips: ['127.0.0.2'] }],
  mailFrom: 'probe@rcpt.test',
  helo: 'rcpt.test',
  timeoutMs: 2000,
  transcript: false,
};

describe('ProberHub link', () => {
  it('refuses a missing, malformed, unknown or revoked token with a JSON 401', async () => {
    const token = await newProberToken();
    await revokeCredentialForTest('prober_tokens', token.id);
    for (const authorization of [
      '',
      'Bearer nope',
      `Bearer rkp_${'A'.repeat(43)}`,
      `Bearer ${token.secret}`,
    ]) {
      const response = await connectProberWith(authorization);
      expect(response.status).toBe(401);
      expect(await response.json()).toMatchObject({ success: false, code: 'UNAUTHORIZED' });
    }
  });

  it('refuses a request that is not a WebSocket upgrade', async () => {
    const token = await newProberToken();
    const response = await connectProberWith(`Bearer ${token.secret}`, false);
    expect(response.status).toBe(400);
  });

  it('accepts a valid token with 101 Switching Protocols', async () => {
    const token = await newProberToken('default');
    const response = await connectProber(token.secret, 'default');
    expect(response.status).toBe(101);
    response.webSocket?.accept();
    response.webSocket?.close(1000, 'done');
  });
});

describe('ProberHub limits on what a prober claims', () => {
  it('binds a token to its region: another region is 403 at connect and a hello naming one closes the link', async () => {
    const token = await newProberToken('hub-region-eu');
    const elsewhere = await connectProber(token.secret, 'hub-region-us');
    expect(elsewhere.status).toBe(403);
    expect(await elsewhere.json()).toMatchObject({ code: 'FORBIDDEN' });

    const home = await linkToHub(token.id, 'hub-region-eu');
    expect(home.status).toBe(101);
    const ws = home.webSocket;
    if (!ws) throw new Error('no WebSocket');
    ws.accept();
    const closed = new Promise<number>((resolve) =>
      ws.addEventListener('close', (event) => resolve(event.code)),
    );
    ws.send(JSON.stringify({ type: 'hello', id: 'h', version: 1, region: 'hub-region-us', capacity: 5 }));
    expect(await closed).toBe(4003);
    expect((await hubOf('hub-region-eu').status()).filter((prober) => prober.ready)).toEqual([]);
  });

  it(`caps the capacity a prober claims at ${MAX_PROBER_CAPACITY}`, async () => {
    const prober = await startFakeProber(
      'hub-capacity',
      (probe) => reportFor(probe, 250, '2.1.5', 'OK'),
      10_000,
    );
    const [status] = (await hubOf('hub-capacity').status()).filter((entry) => entry.ready);
    expect(status?.capacity).toBe(MAX_PROBER_CAPACITY);
    prober.close();
  });
});

describe('ProberHub probes', () => {
  it('forwards a probe to a connected prober and returns its report', async () => {
    const prober = await startFakeProber('hub-roundtrip', (probe) =>
      reportFor(probe, 250, '2.1.5', 'OK', 550),
    );
    const outcome = await hubOf('hub-roundtrip').probe(request, 3000);
    expect(outcome.kind).toBe('report');
    if (outcome.kind !== 'report') return;
    expect(outcome.report.perAddress[0]?.reply?.code).toBe(250);
    expect(prober.probes[0]).toMatchObject({ type: 'probe', emails: request.emails, mx: request.mx });
    // The prober gets less time than the hub waits, so its answer can still arrive.
    expect(prober.probes[0]?.timeoutMs).toBeLessThan(3000);
    prober.close();
  });

  it('waits its budget for a prober to link, and answers unavailable when none does', async () => {
    expect(await hubOf('hub-empty').probe(request, 300)).toEqual({
      kind: 'unavailable',
      message: 'no prober connected before the deadline',
    });
  });

  it('is answered by a prober that links while it waits (no answer given up early)', async () => {
    const hub = hubOf('hub-late');
    const waiting = hub.probe(request, 5000);
    await until(async () => (await hub.backlog()).single === 1, 'the probe waits in the hub');
    const prober = await startFakeProber('hub-late', (probe) => reportFor(probe, 250, '2.1.5', 'OK', 550));
    const outcome = await waiting;
    expect(outcome.kind).toBe('report');
    expect(prober.probes).toHaveLength(1);
    prober.close();
  });

  it("answers unavailable (rcpt's failure), not a mail server timeout, when the prober never answers", async () => {
    const prober = await startFakeProber('hub-silent', () => 'ignore');
    expect(await hubOf('hub-silent').probe(request, 600)).toEqual({
      kind: 'unavailable',
      message: 'the prober did not answer in time',
    });
    prober.close();
  });

  it("answers unavailable, not timeout, when no prober was free before the deadline (rcpt's failure)", async () => {
    const busy = await startFakeProber('hub-busy', () => 'ignore', 1);
    const hub = hubOf('hub-busy');
    // Long enough to outlast the second call; once the prober leaves, it waits out the rest.
    const holding = hub.probe(request, 2000);
    await until(async () => (await hub.status())[0]?.inFlight === 1, 'the busy prober holds a probe');
    expect(await hub.probe(request, 600)).toEqual({
      kind: 'unavailable',
      message: 'no prober was free before the deadline',
    });
    busy.close();
    await holding;
  });

  it('retries once on another prober when the first refuses', async () => {
    const refusing = await startFakeProber('hub-retry', () => ({ error: 'over capacity' }));
    const working = await startFakeProber('hub-retry', (probe) => reportFor(probe, 250, null, 'OK'));
    const outcome = await hubOf('hub-retry').probe(request, 3000);
    expect(outcome.kind).toBe('report');
    expect(refusing.probes.length + working.probes.length).toBeGreaterThanOrEqual(1);
    expect(working.probes).toHaveLength(1);
    refusing.close();
    working.close();
  });

  it('asks another prober when every egress of the first was refused, and keeps the refusal when none is left', async () => {
    const listing = {
      code: 554,
      enhanced: '5.7.1',
      text: 'Service unavailable; Client host [192.0.2.7] blocked using zen.spamhaus.org',
    };
    const refused = (probe: ProbeMessage) => ({
      ...reportFor(probe, listing.code, null, listing.text),
      egressesRefused: true,
    });
    const blocked = await startFakeProber('hub-egress-refused', refused);
    const alone = await hubOf('hub-egress-refused').probe(request, 3000);
    // The only prober: its answer stands (the verdict reads it as antispam_blocked).
    expect(alone.kind === 'report' && alone.report.egressesRefused).toBe(true);
    expect(blocked.probes).toHaveLength(1);

    const clean = await startFakeProber('hub-egress-refused', (probe) => reportFor(probe, 250, null, 'OK'));
    // Whichever prober the host hashes to first, the answer is the one from unblocked addresses.
    for (let round = 0; round < 3; round++) {
      const outcome = await hubOf('hub-egress-refused').probe(
        { ...request, mx: [{ host: `mx${round}.accept.test`, preference: 10, ips: ['127.0.0.2'] }] },
        3000,
      );
      expect(outcome.kind === 'report' && outcome.report.perAddress[0]?.reply?.code).toBe(250);
    }
    expect(clean.probes).toHaveLength(3);
    blocked.close();
    clean.close();
  });

  it("shows each prober's egresses and the blocks it reports", async () => {
    const region = 'hub-egress-view';
    const prober = await startFakeProber(region, (probe) => reportFor(probe, 250, null, 'OK'));
    announceEgresses(prober, region, [
      { id: '127.0.0.1', kind: 'direct', helo: null },
      { id: 'socks5://127.0.0.1:1080', kind: 'socks5', helo: 'out2.rcpt.test' },
    ]);
    const now = Date.now();
    prober.send({
      type: 'egress_state',
      id: 'state-1',
      // The second is already over: not shown.
      blocks: [
        blockAt('127.0.0.1', 'mx1.company.test', now),
        blockAt('127.0.0.1', 'mx2.company.test', now - 700_000),
      ],
      uses: [{ egress: '127.0.0.1', provider: 'google', used: 12, budget: 50 }],
      sessions: 3,
    });
    const view = await untilValue(
      async () => (await hubOf(region).status()).find((entry) => entry.egress.reportedAt !== null),
      'the egress state reaches the hub',
    );
    expect(view?.egress.egresses.map((egress) => egress.id)).toEqual([
      '127.0.0.1',
      'socks5://127.0.0.1:1080',
    ]);
    expect(view?.egress.blocks.map((block) => block.scope.name)).toEqual(['mx1.company.test']);
    expect(view?.egress.uses).toEqual([{ egress: '127.0.0.1', provider: 'google', used: 12, budget: 50 }]);
    expect(view?.egress.sessions).toBe(3);
    prober.close();
  });

  it('remembers egresses beyond their link: a prober of the same token gets their blocks, warm-up and hour back', async () => {
    const region = 'hub-egress-memory';
    const ok = (probe: ProbeMessage) => reportFor(probe, 250, null, 'OK');
    const egresses = [{ id: '127.0.0.2', kind: 'direct', helo: null } as const];
    const first = await startFakeProber(region, ok);
    announceEgresses(first, region, egresses);
    const now = Date.now();
    const warmUp = { egress: '127.0.0.2', since: now - 90 * 60_000 };
    first.send({
      type: 'egress_state',
      id: 'state-before',
      // The second is already over: not remembered as in force.
      blocks: [
        blockAt('127.0.0.2', 'mx1.company.test', now),
        blockAt('127.0.0.2', 'mx2.company.test', now - 700_000),
      ],
      uses: [{ egress: '127.0.0.2', provider: 'google', used: 40, budget: 100 }],
      warmUps: [warmUp],
      sessions: 1,
    });
    await until(
      async () => (await hubOf(region).status()).some((prober) => prober.egress.reportedAt !== null),
      'the egress state reaches the hub',
    );
    first.close();
    await first.closed;

    // The prober restarted: it knows nothing of its egresses, the region's hub does.
    const again = await startFakeProber(region, ok, 10, undefined, first.tokenId);
    announceEgresses(again, region, egresses);
    const memory = await untilValue(
      async () => again.received.find((message) => message.type === 'egress_memory'),
      'the hub sends what it remembers',
    );
    expect(memory).toMatchObject({
      blocks: [{ egress: '127.0.0.2', scope: { kind: 'mx_host', name: 'mx1.company.test' } }],
      warmUps: [warmUp],
      uses: [{ egress: '127.0.0.2', provider: 'google', used: 40, budget: 100 }],
    });
    // The hub routes by the remembered block before the prober reports anything.
    const view = (await hubOf(region).status()).find(
      (prober) => prober.ready && prober.egress.egresses.length > 0,
    );
    expect(view?.egress.blocks.map((block) => block.scope.name)).toEqual(['mx1.company.test']);

    // Another prober's egress of the same name is another address: it gets nothing of this one.
    const stranger = await startFakeProber(region, ok);
    announceEgresses(stranger, region, egresses);
    const nothing = await untilValue(
      async () => stranger.received.find((message) => message.type === 'egress_memory'),
      'the hub answers the stranger too',
    );
    expect(nothing).toMatchObject({ blocks: [], warmUps: [], uses: [] });
    again.close();
    stranger.close();
  });

  it('raises an alert for each block begun and ended, and for the prober and then the region gone', async () => {
    const region = `hub-alerts-${crypto.randomUUID().slice(0, 8)}`;
    const prober = await startFakeProber(region, (probe) => reportFor(probe, 250, null, 'OK'));
    announceEgresses(prober, region, [{ id: '127.0.0.2', kind: 'direct', helo: null }]);
    const now = Date.now();
    const state = (id: string, blocks: ReturnType<typeof blockAt>[]) =>
      prober.send({ type: 'egress_state', id, blocks, uses: [], sessions: 0 });
    state('state-1', [blockAt('127.0.0.2', 'mx1.company.test', now)]);
    // The same block reported again is no new alert; its end is one.
    state('state-2', [blockAt('127.0.0.2', 'mx1.company.test', now)]);
    state('state-3', []);
    const alertsOf = async () =>
      (await alertsView({ db: db() }))
        .filter((alert) => alert.region === region)
        .map((alert) => alert.type)
        .reverse();
    await until(async () => (await alertsOf()).length === 2, 'the block alerts are kept');
    prober.close();
    await until(async () => (await alertsOf()).length === 4, 'the gone alerts are kept');
    expect(await alertsOf()).toEqual(['egress.blocked', 'egress.unblocked', 'prober.gone', 'region.gone']);
  });

  it('refuses and logs a result or an error for a probe sent to another prober', async () => {
    const warnings = vi.spyOn(console, 'warn');
    const region = 'hub-own-probes';
    const probers = [
      await startFakeProber(region, () => 'ignore'),
      await startFakeProber(region, () => 'ignore'),
    ];
    const asked = hubOf(region).probe(request, 5000);
    await until(() => probers.some((prober) => prober.probes.length === 1), 'the probe is out');
    const holder = probers.find((prober) => prober.probes.length === 1) as FakeProber;
    const other = probers.find((prober) => prober !== holder) as FakeProber;
    const probe = holder.probes[0] as ProbeMessage;
    // The other prober claims the probe: an accepted address on a catch-all domain, then a refusal.
    other.send({ type: 'result', id: probe.id, ...reportFor(probe, 250, '2.1.5', 'OK', 250) });
    other.send({ type: 'error', id: probe.id, message: 'over capacity' });
    await until(
      () => warnings.mock.calls.filter(([line]) => String(line).includes(probe.id)).length === 2,
      'both answers are logged',
    );
    const logged = warnings.mock.calls.map(([line]) => JSON.parse(String(line)) as Record<string, unknown>);
    expect(logged.filter((line) => line.probeId === probe.id)).toEqual([
      expect.objectContaining({
        level: 'warn',
        msg: 'prober answered a probe it was not given',
        answer: 'result',
      }),
      expect.objectContaining({ msg: 'prober answered a probe it was not given', answer: 'error' }),
    ]);
    // Neither answer settled or moved the probe: it is still out at its prober, which answers it.
    expect((await hubOf(region).backlog()).running).toBe(1);
    expect(other.probes).toHaveLength(0);
    holder.send({ type: 'result', id: probe.id, ...reportFor(probe, 550, '5.1.1', 'No such user') });
    const outcome = await asked;
    expect(outcome.kind === 'report' && outcome.report.perAddress[0]?.reply?.code).toBe(550);
    for (const prober of probers) prober.close();
    warnings.mockRestore();
  });

  it('does not send work to a draining prober', async () => {
    const draining = await startFakeProber('hub-drain', (probe) => reportFor(probe, 250, null, 'OK'));
    draining.send({ type: 'drain', id: 'drain-1' });
    // The drain is processed before the next message on the same socket; a status read orders after it.
    await until(
      async () => (await hubOf('hub-drain').status()).every((prober) => prober.draining),
      'the prober is draining',
    );
    expect(await hubOf('hub-drain').probe(request, 1000)).toMatchObject({ kind: 'unavailable' });
    expect(draining.probes).toHaveLength(0);
    draining.close();
  });
});

/** A batch task of `count` addresses on `domain`, routed to `mxHost`, for a job that need not exist. */
/** Every egress of the prober was refused at the MX, as a Spamhaus listing says it. */
function refusedEverywhere(probe: ProbeMessage): ProbeReport {
  return {
    ...reportFor(
      probe,
      554,
      '5.7.1',
      'Service unavailable; Client host [192.0.2.7] blocked using zen.spamhaus.org',
    ),
    egressesRefused: true,
  };
}

function task(
  jobId: string,
  accountId: string,
  domain: string,
  mxHost: string,
  count = 1,
): HubWork<BatchTask> {
  return batchHubWork(batchTask(jobId, accountId, domain, mxHost, count), configOf(env));
}

function batchTask(jobId: string, accountId: string, domain: string, mxHost: string, count = 1): BatchTask {
  return {
    jobId,
    accountId,
    domain,
    deadlineAt: Date.now() + 20_000,
    attempt: 0,
    addresses: Array.from({ length: count }, (_, idx) => ({ idx, email: `user${idx}@${domain}` })),
    dns: { kind: 'mx', dnsType: 'MX', mx: [{ host: mxHost, preference: 10, ips: ['127.0.0.2'] }] },
  };
}

/** Answers a held probe as every address accepted. */
function answer(prober: FakeProber, probe: ProbeMessage): void {
  prober.send({ type: 'result', id: probe.id, ...reportFor(probe, 250, '2.1.5', 'OK', 550) });
}

async function doneAddresses(jobId: string): Promise<{ idx: number; subStatus: string }[]> {
  return listsRows<{ idx: number; subStatus: string }>(
    "SELECT idx, sub_status AS subStatus FROM job_addresses WHERE job_id = ? AND state = 'done' ORDER BY idx",
    jobId,
  );
}

describe('ProberHub scheduling', () => {
  it('takes batch work and returns at once, recording each answer as its probe finishes', async () => {
    const prober = await startFakeProber('hub-dispatch', () => 'ignore', 10, 10);
    const fast = `job-${crypto.randomUUID()}`;
    const slow = `job-${crypto.randomUUID()}`;
    expect(
      await hubOf('hub-dispatch').dispatch([
        task(fast, 'acct-a', 'fast.test', 'mx.fast.test', 3),
        task(slow, 'acct-a', 'slow.test', 'mx.slow.test', 2),
      ]),
    ).toEqual([]);
    await until(() => prober.probes.length === 2, 'both probes are out');
    // The fast domain answers; the slow one is still out, and holds nothing up.
    answer(prober, prober.probes.find((probe) => probe.domain === 'fast.test') as ProbeMessage);
    await until(async () => (await doneAddresses(fast)).length === 3, 'the fast domain is recorded');
    expect((await doneAddresses(fast)).map((row) => row.subStatus)).toEqual([
      'accepted_email',
      'accepted_email',
      'accepted_email',
    ]);
    expect(await doneAddresses(slow)).toEqual([]);
    answer(prober, prober.probes.find((probe) => probe.domain === 'slow.test') as ProbeMessage);
    await until(async () => (await doneAddresses(slow)).length === 2, 'the slow domain is recorded');
    prober.close();
  });

  it('refuses batch work when no prober is connected', async () => {
    expect(await hubOf('hub-nobody').dispatch([task('job-x', 'acct', 'x.test', 'mx.x.test')])).toEqual([0]);
  });

  it("keeps a prober's reserve free of one account's long-held probes: another account's call and work start at once, and take freed slots first", async () => {
    // Capacity 10: one account may hold 8 (RESERVE_SHARE keeps 2 for the others).
    const prober = await startFakeProber('hub-tarpit-share', () => 'ignore', 10, 5);
    const hub = hubOf('hub-tarpit-share');
    const tarpits = `job-${crypto.randomUUID()}`;
    const list = `job-${crypto.randomUUID()}`;
    // Account T's list of tarpit domains, each its own MX host: nothing it sends is answered yet.
    await hub.dispatch(
      Array.from({ length: 20 }, (_, index) =>
        task(tarpits, 'acct-t', `pit${index}.test`, `mx.pit${index}.test`),
      ),
    );
    await until(() => prober.probes.length === 8, "T holds its share of the prober's slots");
    expect((await hub.backlog()).batch).toBe(12);
    // Account B's single call starts in the reserve at once, and so does one of B's list.
    const single = hub.probe(request, 10_000, 'acct-b');
    await hub.dispatch(
      Array.from({ length: 3 }, (_, index) => task(list, 'acct-b', `ok${index}.test`, `mx.ok${index}.test`)),
    );
    await until(() => prober.probes.length === 10, "B's call and work are out");
    expect(prober.probes.slice(8).map((probe) => probe.domain)).toEqual(['accept.test', 'ok0.test']);
    answer(prober, prober.probes[8] as ProbeMessage);
    expect((await single).kind).toBe('report');
    // Every slot T lets go goes to B while B has held less slot-time than T.
    await until(() => prober.probes.length === 11, 'the freed slot is taken');
    answer(prober, prober.probes[0] as ProbeMessage);
    await until(() => prober.probes.length === 12, 'the slot T freed is taken');
    expect(prober.probes.slice(10).map((probe) => probe.domain)).toEqual(['ok1.test', 'ok2.test']);
    prober.close();
  });

  it("serves an account's single calls first up to its priority bound, then by slot-time held", async () => {
    // Capacity 10: single calls of one account go ahead of batch work while it has fewer than
    // 3 (a quarter of the fleet) out; one account may hold 8.
    const prober = await startFakeProber('hub-single-bound', () => 'ignore', 10, 5);
    const hub = hubOf('hub-single-bound');
    const filler = `job-${crypto.randomUUID()}`;
    const work = `job-${crypto.randomUUID()}`;
    await hub.dispatch(
      Array.from({ length: 8 }, (_, index) => task(filler, 'acct-f', `f${index}.test`, `mx.f${index}.test`)),
    );
    await until(() => prober.probes.length === 8, 'F holds 8 slots');
    // Account C floods single calls, each at another host; two start in the free slots.
    const calls = Array.from({ length: 6 }, (_, index) =>
      hub.probe(
        {
          ...request,
          domain: `c${index}.test`,
          mx: [{ host: `mx.c${index}.test`, preference: 10, ips: ['127.0.0.2'] }],
        },
        10_000,
        'acct-c',
      ),
    );
    await until(() => prober.probes.length === 10, "two of C's calls are out");
    // Account A's small list waits behind them.
    await hub.dispatch(
      Array.from({ length: 3 }, (_, index) => task(work, 'acct-a', `a${index}.test`, `mx.a${index}.test`)),
    );
    for (let freed = 0; freed < 5; freed++) {
      answer(prober, prober.probes[freed] as ProbeMessage);
      await until(() => prober.probes.length === 11 + freed, `freed slot ${freed + 1} is taken`);
    }
    // C's third call still had priority; then A, which holds less than C's three calls, takes
    // every slot until its list is out; then C again.
    expect(prober.probes.slice(10).map((probe) => probe.domain[0])).toEqual(['c', 'a', 'a', 'a', 'c']);
    // The rest of C's calls are answered as they go out.
    const answered = new Set(prober.probes.slice(0, 5).map((probe) => probe.id));
    let settled = 0;
    for (const call of calls) call.then(() => settled++);
    await until(() => {
      for (const probe of prober.probes)
        if (!answered.has(probe.id) && probe.domain.startsWith('c')) {
          answered.add(probe.id);
          answer(prober, probe);
        }
      return settled === calls.length;
    }, "all of C's calls are answered");
    expect((await Promise.all(calls)).map((outcome) => outcome.kind)).toEqual(Array(6).fill('report'));
    prober.close();
  });

  it('keeps every MX host on one prober, never more of its probes out than one prober takes ahead, and fails over', async () => {
    const region = 'hub-affinity';
    const probers = [
      await startFakeProber(region, () => 'ignore', 50, 2),
      await startFakeProber(region, () => 'ignore', 50, 2),
      await startFakeProber(region, () => 'ignore', 50, 2),
    ];
    const jobId = `job-${crypto.randomUUID()}`;
    const hosts = ['mx1.shared.test', 'mx2.shared.test', 'mx3.shared.test', 'mx4.shared.test'];
    const tasks = Array.from({ length: 24 }, (_, index) =>
      batchHubWork(
        {
          ...batchTask(jobId, 'acct', `d${index}.test`, hosts[index % hosts.length] as string),
          addresses: [{ idx: index, email: `user${index}@d${index}.test` }],
        },
        configOf(env),
      ),
    );
    await hubOf(region).dispatch(tasks);
    const outByHost = () => {
      const counts = new Map<string, number>();
      for (const prober of probers)
        for (const probe of prober.probes)
          counts.set(probe.mx[0]?.host ?? '', (counts.get(probe.mx[0]?.host ?? '') ?? 0) + 1);
      return counts;
    };
    // Two sessions per host, and as many probes waiting ahead at the prober.
    const out = probesOutPerMx(2);
    expect(out).toBe(4);
    await until(
      () => [...outByHost().values()].reduce((a, b) => a + b, 0) === 4 * out,
      'four probes per host are out',
    );
    expect([...outByHost().values()]).toEqual([out, out, out, out]);
    // Each host's probes are on exactly one prober.
    for (const host of hosts) {
      expect(
        probers.filter((prober) => prober.probes.some((probe) => probe.mx[0]?.host === host)),
      ).toHaveLength(1);
    }
    // The prober with the most hosts goes away mid-probe: its probes are sent again elsewhere.
    const [leaving] = [...probers].sort((a, b) => b.probes.length - a.probes.length);
    if (!leaving) throw new Error('no prober');
    const stay = probers.filter((prober) => prober !== leaving);
    leaving.close(1001);
    const answered = new Set<string>();
    await until(async () => {
      for (const prober of stay)
        for (const probe of prober.probes)
          if (!answered.has(probe.id)) {
            answered.add(probe.id);
            answer(prober, probe);
          }
      return (await doneAddresses(jobId)).length === 24;
    }, 'every address is recorded');
    expect(new Set((await doneAddresses(jobId)).map((row) => row.subStatus))).toEqual(
      new Set(['accepted_email']),
    );
    for (const prober of stay) prober.close();
  });
});

async function connectProberWith(authorization: string, upgrade = true): Promise<Response> {
  const { exports } = await import('cloudflare:workers');
  const headers: Record<string, string> = upgrade ? { Upgrade: 'websocket' } : {};
  if (authorization) headers.Authorization = authorization;
  return exports.default.fetch('http://edge.test/internal/probers/connect', { headers });
}

describe('ProberHub token revocation', () => {
  it('drops a connected prober whose token is revoked, and keeps the others', async () => {
    const kept = await startFakeProber('hub-revoke', (probe) => reportFor(probe, 250, null, 'OK'));
    const revoked = await startFakeProber('hub-revoke', (probe) => reportFor(probe, 250, null, 'OK'));
    await revokeCredentialForTest('prober_tokens', revoked.tokenId);
    expect(await hubOf('hub-revoke').dropRevokedProbers()).toBe(1);
    expect(await revoked.closed).toMatchObject({ code: 4001 });
    const status = await hubOf('hub-revoke').status();
    expect(status.filter((prober) => prober.ready)).toHaveLength(1);
    expect((await hubOf('hub-revoke').probe(request, 2000)).kind).toBe('report');
    expect(kept.probes).toHaveLength(1);
    kept.close();
  });

  it('checks tokens on an alarm that runs while probers are connected', async () => {
    const prober = await startFakeProber('hub-alarm', (probe) => reportFor(probe, 250, null, 'OK'));
    await revokeCredentialForTest('prober_tokens', prober.tokenId);
    expect(await runDurableObjectAlarm(hubOf('hub-alarm'))).toBe(true);
    expect(await prober.closed).toMatchObject({ code: 4001, reason: 'token revoked' });
  });
});

describe('ProberHub regions', () => {
  it('passes a call another region can serve at once when it has no prober, and keeps it otherwise', async () => {
    expect(await hubOf('region-empty').probe(request, 5_000, 'acct', true)).toEqual({
      kind: 'passed',
      why: 'no prober linked in this region',
    });
    expect((await hubOf('region-empty').backlog()).single).toBe(0);
  });

  it('passes a waiting call on when its region loses its last prober mid-probe', async () => {
    const prober = await startFakeProber('region-dying', () => 'ignore');
    const asked = hubOf('region-dying').probe(request, 10_000, 'acct', true);
    await until(() => prober.probes.length === 1, 'the probe is out');
    prober.close(1001);
    expect(await asked).toEqual({ kind: 'passed', why: 'no prober linked in this region' });
  });

  it('answers a single call through the next region when the primary has no prober', async () => {
    const prober = await startFakeProber('region-second', (probe) =>
      reportFor(probe, 250, '2.1.5', 'OK', 550),
    );
    const gateway = regionsGateway(
      env.PROBER_HUB,
      [{ name: 'region-first' }, { name: 'region-second' }],
      'acct',
    );
    const outcome = await gateway.probe(request, 3_000);
    expect(outcome.kind).toBe('report');
    expect(prober.probes).toHaveLength(1);
    prober.close();
  });

  it('passes a call whose every egress here was refused to the next region, whose answer is the verdict', async () => {
    const refusing = await startFakeProber('region-listed', refusedEverywhere);
    const clean = await startFakeProber('region-clean', (probe) => reportFor(probe, 250, '2.1.5', 'OK', 550));
    const gateway = regionsGateway(
      env.PROBER_HUB,
      [{ name: 'region-listed' }, { name: 'region-clean' }],
      'acct',
    );
    const outcome = await gateway.probe(request, 5_000);
    expect(outcome.kind === 'report' && outcome.report.perAddress[0]?.reply?.code).toBe(250);
    expect(refusing.probes).toHaveLength(1);
    expect(clean.probes).toHaveLength(1);
    refusing.close();
    clean.close();
  });

  it("keeps a region's refusal as the answer when no later region has a prober, without waiting for one", async () => {
    const refusing = await startFakeProber('region-listed-alone', refusedEverywhere);
    const gateway = regionsGateway(
      env.PROBER_HUB,
      [{ name: 'region-listed-alone' }, { name: 'region-listed-nobody' }],
      'acct',
    );
    // A budget longer than the test's own timeout: an answer proves the last region did not wait it out.
    const outcome = await gateway.probe(request, 120_000);
    expect(outcome.kind === 'report' && outcome.report.egressesRefused).toBe(true);
    expect(outcome.kind === 'report' && outcome.report.perAddress[0]?.reply?.text).toContain('spamhaus');
    expect(refusing.probes).toHaveLength(1);
    refusing.close();
  });

  it('passes a call and batch work that every egress here is blocked for at once, as its probers reported, and the last region keeps them', async () => {
    const region = 'region-blocked';
    const blocked = await startFakeProber(region, (probe) => reportFor(probe, 250, '2.1.5', 'OK', 550));
    announceEgresses(blocked, region, [
      { id: '192.0.2.7', kind: 'direct', helo: null },
      { id: '192.0.2.8', kind: 'direct', helo: null },
    ]);
    const now = Date.now();
    const host = request.mx[0]?.host ?? '';
    // One egress blocked: the region still serves the host.
    blocked.send({
      type: 'egress_state',
      id: 'state-1',
      blocks: [blockAt('192.0.2.7', host, now)],
      uses: [],
      sessions: 0,
    });
    await untilValue(
      async () => (await hubOf(region).status()).find((entry) => entry.egress.reportedAt !== null),
      'the first egress state reaches the hub',
    );
    expect(await hubOf(region).probe(request, 3_000, 'acct', true)).toMatchObject({ kind: 'report' });
    expect(blocked.probes).toHaveLength(1);

    blocked.send({
      type: 'egress_state',
      id: 'state-2',
      blocks: [blockAt('192.0.2.7', host, now), blockAt('192.0.2.8', host, now)],
      uses: [],
      sessions: 0,
    });
    await untilValue(
      async () => (await hubOf(region).status()).find((entry) => entry.egress.blocks.length === 2),
      'both blocks reach the hub',
    );
    const passed = await hubOf(region).probe(request, 3_000, 'acct', true);
    expect(passed).toMatchObject({
      kind: 'passed',
      why: `every egress in this region is blocked at ${host}`,
    });
    expect(passed.kind === 'passed' && passed.refusal?.egressesRefused).toBe(true);
    expect(passed.kind === 'passed' && passed.refusal?.perAddress[0]?.failure?.reply?.text).toContain(
      'zen.spamhaus.org',
    );
    // Another MX host is not blocked; and as the last region, the blocked host is asked all the same.
    const elsewhere = { ...request, mx: [{ host: 'mx.other.test', preference: 10, ips: ['127.0.0.2'] }] };
    expect(await hubOf(region).probe(elsewhere, 3_000, 'acct', true)).toMatchObject({ kind: 'report' });
    expect(await hubOf(region).probe(request, 3_000, 'acct', false)).toMatchObject({ kind: 'report' });
    expect(blocked.probes).toHaveLength(3);

    // Batch work: the blocked host's goes to the next region; with none to take it, it is left for a later try.
    const jobId = `job-${crypto.randomUUID()}`;
    const next = await startFakeProber('region-blocked-next', () => 'ignore');
    const work = [task(jobId, 'acct', 'b0.test', host), task(jobId, 'acct', 'b1.test', 'mx.other.test')];
    expect(
      await dispatchToRegions(env.PROBER_HUB, [{ name: region }, { name: 'region-blocked-next' }], work),
    ).toEqual([]);
    await until(
      () => next.probes.length === 1 && blocked.probes.length === 4,
      'each probe is out in its region',
    );
    expect(next.probes[0]?.domain).toBe('b0.test');
    expect(blocked.probes[3]?.domain).toBe('b1.test');
    const untaken = await dispatchToRegions(
      env.PROBER_HUB,
      [{ name: region }, { name: 'region-blocked-nobody' }],
      [task(jobId, 'acct', 'b2.test', host)],
    );
    expect(untaken.map((work) => work.request.domain)).toEqual(['b2.test']);
    blocked.close();
    next.close();
  });

  it('asks batch work caught at a dead prober again at once when another region can take it, on the retry pace when none can', async () => {
    /** How long after its answer was recorded the job's one address is asked again. */
    const lost = async (region: string, passable: boolean) => {
      const jobId = `job-${crypto.randomUUID()}`;
      const prober = await startFakeProber(region, () => 'ignore');
      expect(
        await hubOf(region).dispatch([task(jobId, 'acct', 'lost.test', 'mx.lost.test')], passable),
      ).toEqual([]);
      await until(() => prober.probes.length === 1, 'the probe is out');
      prober.close(1001);
      return untilValue(
        async () =>
          (
            await listsRows<{ subStatus: string; waitMs: number }>(
              'SELECT sub_status AS subStatus, retry_at - enqueued_at AS waitMs FROM job_addresses WHERE job_id = ? AND retry_at IS NOT NULL',
              jobId,
            )
          )[0],
        'the address is asked again',
      );
    };
    expect(await lost('region-batch-lost', true)).toEqual({ subStatus: 'smtp_unavailable', waitMs: 0 });
    // The rcpt pace's first delay is 2 s (shared/src/contract/sub-statuses.ts).
    expect(await lost('region-batch-lost-last', false)).toEqual({
      subStatus: 'smtp_unavailable',
      waitMs: 2_000,
    });
  });

  it('hands batch work to the first region that takes it', async () => {
    const prober = await startFakeProber('region-batch', () => 'ignore');
    const jobId = `job-${crypto.randomUUID()}`;
    const left = await dispatchToRegions(
      env.PROBER_HUB,
      [{ name: 'region-batch-empty' }, { name: 'region-batch' }],
      [task(jobId, 'acct', 'r0.test', 'mx.r0.test'), task(jobId, 'acct', 'r1.test', 'mx.r1.test')],
    );
    expect(left).toEqual([]);
    await until(() => prober.probes.length === 2, 'both probes are out in the second region');
    expect(
      await dispatchToRegions(
        env.PROBER_HUB,
        [{ name: 'region-batch-none' }],
        [task(jobId, 'acct', 'r2.test', 'mx.r2.test')],
      ),
    ).toHaveLength(1);
    prober.close();
  });
});

/** A single call's request whose MX host is `host`: different hosts hash to different probers. */
function requestVia(host: string): ProbeRequest {
  return { ...request, mx: [{ host, preference: 10, ips: ['127.0.0.2'] }] };
}

const accepted = (probe: ProbeMessage) => reportFor(probe, 250, '2.1.5', 'OK', 550);

describe('ProberHub customer-run probers', () => {
  it("sends an account's calls and batch work to its own prober, others' to the shared fleet, never to another account's", async () => {
    const region = 'hub-own-route';
    const ownA = await startFakeProber(region, accepted, 10, 5, undefined, 'acct-own-a');
    const ownB = await startFakeProber(region, accepted, 10, 5, undefined, 'acct-own-b');
    const shared = await startFakeProber(region, accepted);
    const hub = hubOf(region);
    const hosts = Array.from({ length: 8 }, (_, index) => `mx${index}.own.test`);
    for (const host of hosts) {
      expect((await hub.probe(requestVia(host), 3000, 'acct-own-a')).kind).toBe('report');
      expect((await hub.probe(requestVia(host), 3000, 'acct-shared-c')).kind).toBe('report');
    }
    expect(ownA.probes).toHaveLength(hosts.length);
    expect(shared.probes).toHaveLength(hosts.length);
    const job = `job-${crypto.randomUUID()}`;
    expect(
      await hub.dispatch(hosts.map((host, index) => task(job, 'acct-own-a', `own${index}.test`, host))),
    ).toEqual([]);
    await until(() => ownA.probes.length === 2 * hosts.length, "A's batch work went to A's prober");
    expect(shared.probes).toHaveLength(hosts.length);
    expect(ownB.probes).toHaveLength(0);
    for (const prober of [ownA, ownB, shared]) prober.close();
  });

  it('with its own prober gone, takes the shared fleet only when the account allows it', async () => {
    const region = 'hub-own-fallback';
    const hub = hubOf(region);
    const shared = await startFakeProber(region, accepted);
    const own = await startFakeProber(region, accepted, 10, 5, undefined, 'acct-own-f');
    own.close();
    await until(
      async () => (await hub.status()).filter((prober) => prober.ready).length === 1,
      'only the shared prober is linked',
    );
    // Fallback off: the single call waits for its own prober until its deadline, and the batch
    // work is refused (its schedule asks again), as with no prober at all.
    expect(await hub.probe(request, 400, 'acct-own-f', false, true)).toEqual({
      kind: 'unavailable',
      message: 'no prober was free before the deadline',
    });
    expect(
      await hub.dispatch([{ ...task('job-own-f', 'acct-own-f', 'f.test', 'mx.f.test'), ownOnly: true }]),
    ).toEqual([0]);
    // Passable elsewhere, it is passed on at once rather than waiting here.
    expect(await hub.probe(request, 3000, 'acct-own-f', true, true)).toMatchObject({ kind: 'passed' });
    expect(shared.probes).toHaveLength(0);
    // Fallback on: the shared prober answers.
    expect((await hub.probe(request, 3000, 'acct-own-f', false, false)).kind).toBe('report');
    expect(shared.probes).toHaveLength(1);
    shared.close();
  });

  it('passes a probe its own prober refused at every egress to the shared fleet when allowed, and not otherwise', async () => {
    const region = 'hub-own-refused';
    const hub = hubOf(region);
    const shared = await startFakeProber(region, accepted);
    const own = await startFakeProber(region, refusedEverywhere, 10, 5, undefined, 'acct-own-r');
    expect((await hub.probe(request, 3000, 'acct-own-r')).kind).toBe('report');
    expect(own.probes).toHaveLength(1);
    expect(shared.probes).toHaveLength(1);
    // Own probers only: the refusal is the answer.
    const ownOnly = await hub.probe(request, 3000, 'acct-own-r', false, true);
    expect(ownOnly.kind === 'report' && ownOnly.report.egressesRefused).toBe(true);
    expect(shared.probes).toHaveLength(1);
    for (const prober of [own, shared]) prober.close();
  });
});

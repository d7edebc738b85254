// The upload's estimate against what the batch does: a table of lists and fleets with the time
// each should be given, worked out from the rules the batch follows (the greylist and timeout
// paces, the fleet's slots), not from the estimator's own constants alone.

import type { ProbeReport } from '@rcpt/shared/contract/prober';
import { RETRY_PACES } from '@rcpt/shared/contract/sub-statuses';
import { CATCH_ALL_TTL_MS } from '@rcpt/shared/verify/catch-all';
import type { DnsOutcome } from '@rcpt/shared/verify/inputs';
import { describe, expect, test } from 'vitest';
import { factsWorld } from '../../../test/domain-facts.ts';
import { db } from '../../../test/fixtures.ts';
import { GREYLIST_DELAY_TTL_MS } from '../verify/domain-facts.ts';
import {
  ADDRESSES_PER_SLOT_SECOND,
  type BatchOutlook,
  domainPaces,
  domainSeconds,
  estimateBatchSeconds,
  greylistPassedAfter,
  listPaces,
  START_SECONDS,
} from './estimate.ts';

const ordinary = (addresses: number, slots: number, ahead = 0) =>
  Math.ceil(START_SECONDS + (addresses + ahead) / (slots * ADDRESSES_PER_SLOT_SECOND));

const outlook = (overrides: Partial<BatchOutlook>): BatchOutlook => ({
  addresses: 100,
  paces: [],
  probeSlots: 200,
  addressesAhead: 0,
  deadlineSeconds: 600,
  ...overrides,
});

describe('estimateBatchSeconds', () => {
  test.each<[string, Partial<BatchOutlook>, number]>([
    ['nothing left to probe', { addresses: 0 }, 0],
    ['a small list of ordinary domains: the start', { addresses: 100 }, START_SECONDS + 1],
    ['10,000 ordinary addresses on 200 slots', { addresses: 10_000 }, ordinary(10_000, 200)],
    [
      'the same on one prober of 50 slots: four times the probing',
      { addresses: 10_000, probeSlots: 50 },
      ordinary(10_000, 50),
    ],
    [
      'work of running jobs ahead of it',
      { addresses: 10_000, addressesAhead: 20_000 },
      ordinary(10_000, 200, 20_000),
    ],
    ['no prober linked: the deadline', { probeSlots: 0 }, 600],
    [
      'a deployment without SMTP: no probe to wait for',
      { probeSlots: Number.POSITIVE_INFINITY },
      START_SECONDS,
    ],
    [
      'a greylisting domain (60 s, let through at the pace’s 90 s retry) outlasts the rest',
      { paces: [{ greylistDelaySeconds: 60, slowProbe: null }] },
      START_SECONDS + 90,
    ],
    [
      'a tarpit: a 30 s timeout, the timeout pace’s retry 5 s later, another 30 s',
      { paces: [{ greylistDelaySeconds: null, slowProbe: { seconds: 30, timedOut: true } }] },
      START_SECONDS + 65,
    ],
    [
      'the slowest known domain counts, not their sum',
      {
        paces: [
          { greylistDelaySeconds: 60, slowProbe: null },
          { greylistDelaySeconds: null, slowProbe: { seconds: 30, timedOut: true } },
        ],
      },
      START_SECONDS + 90,
    ],
    [
      'a slow domain shorter than the ordinary work adds nothing',
      {
        addresses: 100_000,
        probeSlots: 50,
        paces: [{ greylistDelaySeconds: null, slowProbe: { seconds: 8, timedOut: false } }],
      },
      ordinary(100_000, 50),
    ],
    ['never past the deadline', { addresses: 10_000, probeSlots: 1, deadlineSeconds: 580 }, 580],
    [
      'a greylister slower than the whole pace: the deadline',
      { paces: [{ greylistDelaySeconds: 10_000, slowProbe: null }], deadlineSeconds: 900 },
      900,
    ],
  ])('%s', (_, overrides, expected) => {
    expect(estimateBatchSeconds(outlook(overrides))).toBe(expected);
  });
});

describe('one slow domain', () => {
  test.each<[number, number]>([
    // The greylist pace retries at 30 s, then 60 s later: 30 < 60, so the second passes.
    [60, 90],
    [30, 30],
    // A server that lets the first retry through: the retry asks again after the measured delay.
    [1, 1],
    // 30, 90, 150 (60 s apart), 270 (120 later): the first at or past 200.
    [200, 270],
  ])('greylisting for %i s is passed at the retry %i s after the first answer', (delay, passed) => {
    expect(greylistPassedAfter(delay)).toBe(passed);
  });

  test('a greylister slower than the pace is never passed', () => {
    const paceSeconds = RETRY_PACES.greylist.delays.reduce((sum, delay) => sum + delay, 0);
    expect(greylistPassedAfter(paceSeconds + 1)).toBe(Number.POSITIVE_INFINITY);
  });

  test('a slow probe that answered takes its time once; greylisting and a slow probe: the longer', () => {
    expect(domainSeconds({ greylistDelaySeconds: null, slowProbe: { seconds: 25, timedOut: false } })).toBe(
      25,
    );
    expect(domainSeconds({ greylistDelaySeconds: 60, slowProbe: { seconds: 25, timedOut: false } })).toBe(90);
    expect(domainSeconds({ greylistDelaySeconds: null, slowProbe: null })).toBe(0);
  });
});

describe('what a batch learns of a domain, the next upload counts on', () => {
  const ROUTE: DnsOutcome = {
    kind: 'mx',
    dnsType: 'MX',
    mx: [{ host: 'mx.pace.test', preference: 10, ips: ['192.0.2.9'] }],
  };
  const report = (durationMs: number, failure: 'timeout' | null): ProbeReport => ({
    perAddress: [
      {
        email: 'someone@pace.test',
        reply: failure ? null : { code: 250, enhanced: '2.1.5', text: 'Ok' },
        failure: failure
          ? { kind: failure, stage: 'banner', reply: null, message: 'no greeting within 30000 ms' }
          : null,
      },
    ],
    catchAllReply: null,
    session: {
      mxHost: 'mx.pace.test',
      mxIp: '192.0.2.9',
      tls: false,
      tlsError: null,
      smtputf8: false,
      durationMs,
    },
  });
  const newDomain = () => `${crypto.randomUUID()}.test`;
  const newDomains = (count: number) => Array.from({ length: count }, newDomain);

  test('a tarpit, a greylister and a slow server are told; a quick domain and an expired fact are not', async () => {
    let now = Date.now();
    const world = factsWorld(ROUTE, () => now);
    const [tarpit, greylister, slow, quick, forgotten] = newDomains(5) as [
      string,
      string,
      string,
      string,
      string,
    ];
    const store = world.store();
    await store.observeProbeTime(tarpit, { kind: 'report', report: report(30_200, 'timeout') });
    await store.observeGreylistDelay(greylister, 91);
    await store.observeProbeTime(slow, { kind: 'report', report: report(12_000, null) });
    await store.observeProbeTime(quick, { kind: 'report', report: report(800, null) });
    await store.observeProbeTime(forgotten, { kind: 'report', report: report(40_000, 'timeout') });
    now += GREYLIST_DELAY_TTL_MS / 2;
    const paces = await domainPaces(db(), [tarpit, greylister, slow, quick, tarpit], now);
    expect(paces).toHaveLength(3);
    expect(paces).toEqual(
      expect.arrayContaining([
        { greylistDelaySeconds: null, slowProbe: { seconds: 30, timedOut: true } },
        { greylistDelaySeconds: 91, slowProbe: null },
        { greylistDelaySeconds: null, slowProbe: { seconds: 12, timedOut: false } },
      ]),
    );
    // A day later the measure is no longer trusted.
    expect(await domainPaces(db(), [forgotten], now + GREYLIST_DELAY_TTL_MS)).toEqual([]);
  });

  test('a measure within a quarter of the kept one writes nothing; a different one replaces it', async () => {
    const domain = newDomain();
    const world = factsWorld(ROUTE);
    await world.store().observeProbeTime(domain, { kind: 'report', report: report(20_000, null) });
    await world.store().observeProbeTime(domain, { kind: 'report', report: report(23_000, null) });
    expect(await domainPaces(db(), [domain], Date.now())).toEqual([
      { greylistDelaySeconds: null, slowProbe: { seconds: 20, timedOut: false } },
    ]);
    await world.store().observeProbeTime(domain, { kind: 'report', report: report(31_000, 'timeout') });
    expect(await domainPaces(db(), [domain], Date.now())).toEqual([
      { greylistDelaySeconds: null, slowProbe: { seconds: 31, timedOut: true } },
    ]);
  });

  test('a list’s domains: the slow ones’ paces, and those rcpt does not know, most addresses first', async () => {
    let now = Date.now();
    const world = factsWorld(ROUTE, () => now);
    const [tarpit, probed, noMail, stale, fresh] = newDomains(5) as [string, string, string, string, string];
    const store = world.store();
    await store.observeProbeTime(tarpit, { kind: 'report', report: report(30_200, 'timeout') });
    // A probe answered lately: its made-up address's reply is kept (the catch-all fact).
    const answered = (catchAllReply: ProbeReport['catchAllReply']): ProbeReport => ({
      ...report(300, null),
      catchAllReply,
    });
    await store.observeProbe(probed, {
      kind: 'report',
      report: answered({ code: 550, enhanced: '5.1.1', text: 'no' }),
    });
    await store.observeProbe(stale, {
      kind: 'report',
      report: answered({ code: 550, enhanced: '5.1.1', text: 'no' }),
    });
    now += CATCH_ALL_TTL_MS / 2;
    // Written half a catch-all life later: `stale`'s answer is older than the others by then.
    const later = world.store();
    // DNS said the domain takes no mail: nothing to probe.
    world.route = { kind: 'nxdomain' };
    world.ttlSeconds = CATCH_ALL_TTL_MS / 1000;
    await later.mailRoute(noMail);
    await later.observeProbe(probed, {
      kind: 'report',
      report: answered({ code: 250, enhanced: '2.1.5', text: 'ok' }),
    });
    now += CATCH_ALL_TTL_MS / 2 + 1;
    const list = [
      ...[tarpit, probed, noMail].map((domain) => ({ email: `a@${domain}`, domain })),
      ...[1, 2].map((n) => ({ email: `user${n}@${stale}`, domain: stale })),
      ...[1, 2, 3].map((n) => ({ email: `user${n}@${fresh}`, domain: fresh })),
    ];
    const { paces, unknown } = await listPaces(db(), list, now);
    expect(paces).toEqual([{ greylistDelaySeconds: null, slowProbe: { seconds: 30, timedOut: true } }]);
    expect(unknown).toEqual([
      { domain: fresh, email: `user1@${fresh}`, addresses: 3 },
      { domain: stale, email: `user1@${stale}`, addresses: 2 },
    ]);
  });
});

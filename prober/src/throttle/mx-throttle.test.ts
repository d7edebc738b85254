import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type MailWorld, startWorld } from '../../../test/world/index.ts';
import { probe } from '../smtp/probe.ts';
import {
  HostBackoffError,
  MxThrottle,
  type ReleaseSlot,
  ROUND_TRIP_SAMPLES,
  SlotWaitAbortedError,
} from './mx-throttle.ts';

const MX_A = '192.0.2.1';
const MX_B = '192.0.2.2';
const MX_C = '192.0.2.3';

/** A clock the test moves by hand. */
function manualClock(start = 1_700_000_000_000) {
  let now = start;
  return { now: () => now, advance: (ms: number) => (now += ms) };
}

describe('host profiles', () => {
  test('a connection refused while others were greeted lowers the session limit; calm sessions raise it one at a time', async () => {
    const throttle = new MxThrottle({ perIpLimit: 5 });
    expect(throttle.profile(MX_A).sessionLimit).toBe(5);
    throttle.noteConnectionRefused(MX_A, 2);
    expect(throttle.profile(MX_A).sessionLimit).toBe(2);
    await throttle.acquire(MX_A);
    await throttle.acquire(MX_A);
    const third = throttle.acquire(MX_A);
    expect(throttle.waiting()).toBe(1);
    for (let session = 0; session < 9; session++) throttle.noteSessionEnd(MX_A, 10, 4, true);
    expect(throttle.profile(MX_A).sessionLimit).toBe(2);
    throttle.noteSessionEnd(MX_A, 10, 4, true);
    expect(throttle.profile(MX_A).sessionLimit).toBe(3);
    await third;
    // A strained session starts the count over.
    for (let session = 0; session < 9; session++) throttle.noteSessionEnd(MX_A, 10, 4, true);
    throttle.noteSessionEnd(MX_A, 10, 4, false);
    throttle.noteSessionEnd(MX_A, 10, 4, true);
    expect(throttle.profile(MX_A).sessionLimit).toBe(3);
  });

  test('slow replies and hang-ups after errors lower the rejection budget, never below one', () => {
    const throttle = new MxThrottle({ rejectionsPerSession: 8 });
    expect(throttle.profile(MX_A).rejectionBudget).toBe(8);
    throttle.noteSlowAfterErrors(MX_A, 5);
    expect(throttle.profile(MX_A).rejectionBudget).toBe(4);
    throttle.noteHangupAfterErrors(MX_A, 7);
    expect(throttle.profile(MX_A).rejectionBudget).toBe(4);
    throttle.noteSlowAfterErrors(MX_A, 0);
    expect(throttle.profile(MX_A).rejectionBudget).toBe(1);
    expect(throttle.profile(MX_B).rejectionBudget).toBe(8);
  });

  test('"452 too many recipients" after one accepted: one recipient per transaction', () => {
    const throttle = new MxThrottle();
    expect(throttle.profile(MX_A).recipientsPerTransaction).toBeNull();
    throttle.noteRecipientLimit(MX_A, 0);
    expect(throttle.profile(MX_A).recipientsPerTransaction).toBeNull();
    throttle.noteRecipientLimit(MX_A, 1);
    expect(throttle.profile(MX_A).recipientsPerTransaction).toBe(1);
  });

  test('the round trip is the shortest of ROUND_TRIP_SAMPLES sessions; none before', () => {
    const throttle = new MxThrottle();
    const measured = Array.from({ length: ROUND_TRIP_SAMPLES }, (_, index) => 80 - index);
    for (const ms of measured.slice(0, -1)) throttle.noteRoundTrip(MX_A, ms);
    expect(throttle.profile(MX_A).roundTripMs).toBeNull();
    throttle.noteRoundTrip(MX_A, 300);
    expect(throttle.profile(MX_A).roundTripMs).toBe(Math.min(...measured.slice(0, -1)));
    expect(throttle.profile(MX_B).roundTripMs).toBeNull();
  });

  test.each([
    ['a reply held back after errors', (throttle: MxThrottle) => throttle.noteSlowAfterErrors(MX_A, 5)],
    ['a hang-up after errors', (throttle: MxThrottle) => throttle.noteHangupAfterErrors(MX_A, 7)],
    ['a connection refused', (throttle: MxThrottle) => throttle.noteConnectionRefused(MX_A, 3)],
    ['a session that did not end calm', (throttle: MxThrottle) => throttle.noteSessionEnd(MX_A, 5, 1, false)],
  ])('prompt after a calm session, until %s', (_, strain) => {
    const throttle = new MxThrottle();
    expect(throttle.profile(MX_A).prompt).toBe(false);
    throttle.noteSessionEnd(MX_A, 10, 4, true);
    expect(throttle.profile(MX_A)).toMatchObject({ prompt: true, rejectShare: 0.7 + 0.4 * 0.3 });
    strain(throttle);
    expect(throttle.profile(MX_A).prompt).toBe(false);
  });

  test('a profile not heard of for an hour starts over', () => {
    const clock = manualClock();
    const throttle = new MxThrottle({ now: clock.now });
    throttle.noteSlowAfterErrors(MX_A, 2);
    clock.advance(60 * 60_000 + 1);
    expect(throttle.profile(MX_A).rejectionBudget).toBe(8);
  });
});

describe('concurrency', () => {
  test('holds at most perIpLimit sessions to one address; the next waits for a release', async () => {
    const throttle = new MxThrottle({ perIpLimit: 2 });
    const first = await throttle.acquire(MX_A);
    await throttle.acquire(MX_A);
    const third = throttle.acquire(MX_A);
    expect(throttle.waiting()).toBe(1);
    expect(throttle.openSessions()).toBe(2);
    first();
    await third;
    expect(throttle.waiting()).toBe(0);
    expect(throttle.openSessionsByIp()).toEqual(new Map([[MX_A, 2]]));
    expect(throttle.peakOpenSessions(MX_A)).toBe(2);
  });

  test('waiters are served first come, first served', async () => {
    const throttle = new MxThrottle({ perIpLimit: 1 });
    const order: string[] = [];
    const held = await throttle.acquire(MX_A);
    const waiters = ['b', 'c', 'd'].map((name) =>
      throttle.acquire(MX_A).then((release) => {
        order.push(name);
        return release;
      }),
    );
    held();
    (await waiters[0])?.();
    (await waiters[1])?.();
    (await waiters[2])?.();
    expect(order).toEqual(['b', 'c', 'd']);
    expect(throttle.openSessions()).toBe(0);
  });

  test('a queue for one full host does not hold up another host', async () => {
    const throttle = new MxThrottle({ perIpLimit: 1 });
    const held = await throttle.acquire(MX_A);
    const waiting = throttle.acquire(MX_A);
    const other = await throttle.acquire(MX_B);
    expect(throttle.openSessionsByIp()).toEqual(
      new Map([
        [MX_A, 1],
        [MX_B, 1],
      ]),
    );
    other();
    held();
    (await waiting)();
  });

  test('a provider limit caps sessions across all its MX addresses', async () => {
    const throttle = new MxThrottle({ perIpLimit: 5, providerLimits: { yahoo: 2 } });
    const first = await throttle.acquire(MX_A, 'yahoo');
    await throttle.acquire(MX_B, 'yahoo');
    const third = throttle.acquire(MX_C, 'yahoo');
    expect(throttle.waiting()).toBe(1);
    // The same address without the provider, and providers without a limit, are not held up.
    const unrelated = await throttle.acquire(MX_C);
    const unlimited = await throttle.acquire(MX_C, 'google');
    expect(throttle.openSessionsByIp().get(MX_C)).toBe(2);
    first();
    await third;
    expect(throttle.openSessionsByIp().get(MX_C)).toBe(3);
    unrelated();
    unlimited();
  });

  test('releasing twice gives back one slot, not two', async () => {
    const throttle = new MxThrottle({ perIpLimit: 1 });
    const release: ReleaseSlot = await throttle.acquire(MX_A);
    release();
    release();
    expect(throttle.openSessions()).toBe(0);
    await throttle.acquire(MX_A);
    const waiting = throttle.acquire(MX_A);
    release();
    expect(throttle.waiting()).toBe(1);
    expect(throttle.openSessions()).toBe(1);
    throttle.backoff(MX_A, 'test over');
    await expect(waiting).rejects.toBeInstanceOf(HostBackoffError);
  });

  test('an aborted wait is rejected and leaves the queue', async () => {
    const throttle = new MxThrottle({ perIpLimit: 1 });
    const held = await throttle.acquire(MX_A);
    const deadline = new AbortController();
    const waiting = throttle.acquire(MX_A, null, deadline.signal);
    deadline.abort();
    await expect(waiting).rejects.toBeInstanceOf(SlotWaitAbortedError);
    expect(throttle.waiting()).toBe(0);
    await expect(throttle.acquire(MX_A, null, deadline.signal)).rejects.toBeInstanceOf(SlotWaitAbortedError);
    held();
    expect(throttle.openSessions()).toBe(0);
  });

  test('rejects a limit that is not a positive integer', () => {
    expect(() => new MxThrottle({ perIpLimit: 0 })).toThrow(RangeError);
    expect(() => new MxThrottle({ providerLimits: { yahoo: 1.5 } })).toThrow(RangeError);
  });
});

describe('backoff', () => {
  test('fails fast while a host is backed off, and lets it be tried again after', async () => {
    const clock = manualClock();
    const throttle = new MxThrottle({ now: clock.now });
    const backoff = throttle.backoff(MX_A, '421 4.7.0 Too many connections');
    expect(backoff).toEqual({
      ip: MX_A,
      until: clock.now() + 30_000,
      reason: '421 4.7.0 Too many connections',
    });
    expect(throttle.backoffs()).toEqual([backoff]);
    const refused = await throttle.acquire(MX_A).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(HostBackoffError);
    expect((refused as HostBackoffError).backoff).toEqual(backoff);
    // Other hosts are not affected.
    (await throttle.acquire(MX_B))();
    clock.advance(30_000);
    expect(throttle.backoffs()).toEqual([]);
    (await throttle.acquire(MX_A))();
  });

  test('doubles from 30 s up to 15 min while the host keeps refusing, and starts over after a success', () => {
    const clock = manualClock();
    const throttle = new MxThrottle({ now: clock.now });
    const delays: number[] = [];
    for (let attempt = 0; attempt < 8; attempt++) {
      const { until } = throttle.backoff(MX_A, '421');
      delays.push(until - clock.now());
      clock.advance(until - clock.now());
    }
    expect(delays).toEqual([30_000, 60_000, 120_000, 240_000, 480_000, 900_000, 900_000, 900_000]);
    throttle.recordSuccess(MX_A);
    expect(throttle.backoff(MX_A, '421').until - clock.now()).toBe(30_000);
  });

  test('pushbacks reported while a backoff is under way do not make it longer', () => {
    const clock = manualClock();
    const throttle = new MxThrottle({ now: clock.now });
    const first = throttle.backoff(MX_A, '421 4.7.0 Too many connections');
    clock.advance(1_000);
    expect(throttle.backoff(MX_A, '421 again')).toEqual(first);
    clock.advance(29_000);
    expect(throttle.backoff(MX_A, '421').until - clock.now()).toBe(60_000);
  });

  test('a success under way does not lift the backoff, but the next one starts from the base', () => {
    const clock = manualClock();
    const throttle = new MxThrottle({ now: clock.now });
    throttle.backoff(MX_A, '421');
    clock.advance(30_000);
    throttle.backoff(MX_A, '421'); // 60 s
    throttle.recordSuccess(MX_A);
    expect(throttle.backoffOf(MX_A)?.until).toBe(clock.now() + 60_000);
    clock.advance(60_000);
    expect(throttle.backoff(MX_A, '421').until - clock.now()).toBe(30_000);
  });

  test('a backoff long past without news of the host starts over from the base', () => {
    const clock = manualClock();
    const throttle = new MxThrottle({ now: clock.now });
    throttle.backoff(MX_A, '421');
    clock.advance(30_000 + 15 * 60_000 + 1);
    expect(throttle.backoff(MX_A, '421').until - clock.now()).toBe(30_000);
  });

  test('those already waiting for a host that starts backing off are refused at once', async () => {
    const throttle = new MxThrottle({ perIpLimit: 1 });
    const held = await throttle.acquire(MX_A);
    const waitingA = throttle.acquire(MX_A);
    const waitingB = throttle.acquire(MX_B);
    throttle.backoff(MX_A, '421');
    await expect(waitingA).rejects.toBeInstanceOf(HostBackoffError);
    (await waitingB)();
    held();
    expect(throttle.openSessions()).toBe(0);
  });
});

describe('against a fake MX that refuses a 4th concurrent session', () => {
  let world: MailWorld;
  beforeAll(async () => {
    world = await startWorld();
  });
  afterAll(async () => {
    await world?.close();
  });

  test('200 concurrent probes never open more than the limit of 3, never see its 421, and all complete', async () => {
    const connlimit = world.mx.connlimit!;
    const domain = world.domains.connlimit!;
    connlimit.resetStats();
    const throttle = new MxThrottle({ perIpLimit: 3 });
    const deps = { smtpPort: world.smtpPort, allowPrivateTargets: true, requireTls: false, throttle };
    const reports = await Promise.all(
      Array.from({ length: 200 }, (_, index) =>
        probe(
          {
            emails: [`user${index}@${domain}`],
            domain,
            mx: [{ host: `mx.${domain}`, preference: 10, ips: [connlimit.ip] }],
            mailFrom: 'verify@rcpt.test',
            helo: 'prober.rcpt.test',
            timeoutMs: 15_000,
            transcript: false,
          },
          deps,
        ),
      ),
    );
    expect(reports).toHaveLength(200);
    for (const [index, report] of reports.entries()) {
      expect(report.perAddress).toEqual([
        {
          email: `user${index}@${domain}`,
          reply: { code: 250, enhanced: null, text: 'Accepted' },
          failure: null,
        },
      ]);
    }
    expect(connlimit.maxConcurrent()).toBeLessThanOrEqual(3);
    expect(throttle.peakOpenSessions(connlimit.ip)).toBe(3);
    expect(throttle.openSessions()).toBe(0);
    expect(throttle.backoffs()).toEqual([]);
    // Every RCPT arrived: 200 real addresses, each followed by its catch-all test.
    expect(connlimit.received()).toHaveLength(400);
    // 67 rounds of 3 sessions, each waiting out the fake MX's 100 ms greeting delay.
  }, 60_000);
});

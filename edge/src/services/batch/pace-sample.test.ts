// What an upload's sample learns of the list's unknown domains: each answer read through the
// reply table as the job reads it, over the real domain facts, with a prober the test answers for.
import type { ProbeReport, ProbeRequest, SmtpReply } from '@rcpt/shared/contract/prober';
import type { DnsOutcome, ProbeOutcome } from '@rcpt/shared/verify/inputs';
import type { ProbeGateway } from '@rcpt/shared/verify/verify-address';
import { describe, expect, test } from 'vitest';
import { factsWorld } from '../../../test/domain-facts.ts';
import { db } from '../../../test/fixtures.ts';
import { domainPaces, domainSeconds, listPaces, type UnknownDomain } from './estimate.ts';
import {
  type PaceSampleDeps,
  SAMPLE_DOMAINS,
  samplePaces,
  UNMEASURED_GREYLIST_DELAY_SECONDS,
} from './pace-sample.ts';

const ROUTE: DnsOutcome = {
  kind: 'mx',
  dnsType: 'MX',
  mx: [{ host: 'mx.sample.test', preference: 10, ips: ['192.0.2.44'] }],
};
const ACCEPTED: SmtpReply = { code: 250, enhanced: '2.1.5', text: 'Ok' };
const NO_MAILBOX: SmtpReply = { code: 550, enhanced: '5.1.1', text: 'User unknown' };
const POSTGREY: SmtpReply = {
  code: 450,
  enhanced: '4.2.0',
  text: 'Recipient address rejected: Greylisted, see http://postgrey.example/help/sample.test.html',
};
const MILTER_GREYLIST: SmtpReply = {
  code: 451,
  enhanced: '4.7.1',
  text: 'Greylisting in action, please come back in 00:04:59',
};

/** A prober's report on one address: its reply, or the probe's own timeout, and the made-up address's. */
function report(email: string, reply: SmtpReply | 'timeout', catchAllReply: SmtpReply | null): ProbeOutcome {
  const body: ProbeReport = {
    perAddress: [
      {
        email,
        reply: reply === 'timeout' ? null : reply,
        failure:
          reply === 'timeout'
            ? { kind: 'timeout', stage: 'banner', reply: null, message: 'the probe ran out of its 1900 ms' }
            : null,
      },
    ],
    catchAllReply,
    session: {
      mxHost: 'mx.sample.test',
      mxIp: '192.0.2.44',
      tls: false,
      tlsError: null,
      smtputf8: false,
      durationMs: 40,
    },
  };
  return { kind: 'report', report: body };
}

/** A prober that answers what `answer` says, and keeps what it was asked. */
function prober(answer: (request: ProbeRequest) => Promise<ProbeOutcome>): ProbeGateway & {
  asked: ProbeRequest[];
} {
  const asked: ProbeRequest[] = [];
  return {
    asked,
    probe: (request) => {
      asked.push(request);
      return answer(request);
    },
  };
}

const newDomain = () => `${crypto.randomUUID()}.test`;
const unknownOf = (domain: string, addresses = 1): UnknownDomain => ({
  domain,
  email: `someone@${domain}`,
  addresses,
});

function sampleDeps(gateway: ProbeGateway, overrides: Partial<PaceSampleDeps> = {}) {
  const world = factsWorld(ROUTE);
  const store = world.store();
  const deps: PaceSampleDeps = {
    verify: {
      mailRoute: (domain) => store.mailRoute(domain),
      prober: store.probing(gateway),
      mailFrom: 'verify@rcpt.test',
      helo: 'rcpt.test',
    },
    greylistDelays: async () => [],
    probeTimeoutSeconds: 60,
    ...overrides,
  };
  return { deps, world };
}

describe('what one probe of an unknown domain says of its pace', () => {
  test('a quick answer is ordinary, and its catch-all answer makes the domain known to the next upload', async () => {
    const domain = newDomain();
    const gateway = prober(async (request) => report(request.emails[0] as string, ACCEPTED, NO_MAILBOX));
    const { deps } = sampleDeps(gateway);
    const before = await listPaces(db(), [{ email: `a@${domain}`, domain }], Date.now());
    expect(before.unknown.map((entry) => entry.domain)).toEqual([domain]);
    expect(await samplePaces(deps, before.unknown)).toEqual([]);
    expect(gateway.asked).toHaveLength(1);
    expect(gateway.asked[0]).toMatchObject({
      emails: [`a@${domain}`],
      domain,
      mx: ROUTE.kind === 'mx' && ROUTE.mx,
    });
    const after = await listPaces(db(), [{ email: `b@${domain}`, domain }], Date.now());
    expect(after).toEqual({ paces: [], unknown: [] });
  });

  test.each<[string, SmtpReply, number[], number]>([
    ['the delay its reply names (milter-greylist’s time left)', MILTER_GREYLIST, [90, 150], 299],
    ['no delay named: the median of the measured greylisters', POSTGREY, [390, 90, 150], 150],
    ['an even count of measures: the middle two’s mean', POSTGREY, [90, 150, 390, 30], 120],
    ['nothing measured yet: the unmeasured guess', POSTGREY, [], UNMEASURED_GREYLIST_DELAY_SECONDS],
  ])('a greylister: %s', async (_, reply, measured, delay) => {
    const domain = newDomain();
    const gateway = prober(async (request) => report(request.emails[0] as string, reply, reply));
    const { deps } = sampleDeps(gateway, { greylistDelays: async () => measured });
    const paces = await samplePaces(deps, [unknownOf(domain)]);
    expect(paces).toEqual([{ greylistDelaySeconds: delay, slowProbe: null }]);
    // A greylisting answer is no catch-all answer: the domain stays unknown until the job measures it.
    expect((await listPaces(db(), [{ email: `b@${domain}`, domain }], Date.now())).unknown).toHaveLength(1);
  });

  test('no answer within the wait: a tarpit, whose tries each run to the batch probe timeout', async () => {
    const domain = newDomain();
    const gateway = prober(async (request) => report(request.emails[0] as string, 'timeout', null));
    const { deps } = sampleDeps(gateway, { probeTimeoutSeconds: 45 });
    const paces = await samplePaces(deps, [unknownOf(domain)]);
    expect(paces).toEqual([{ greylistDelaySeconds: null, slowProbe: { seconds: 45, timedOut: true } }]);
    // Two tries of 45 s and the timeout pace's 5 s between them.
    expect(domainSeconds(paces[0] as (typeof paces)[0])).toBe(95);
    // The prober was given the wait, not the batch's timeout.
    expect(gateway.asked[0]?.timeoutMs).toBeLessThanOrEqual(2_000);
    // A probe cut at the wait measured nothing of the domain: no slow probe is kept for it.
    expect(await domainPaces(db(), [domain], Date.now())).toEqual([]);
  });

  test('rcpt’s own failures tell nothing, and the upload never waits past the wait', async () => {
    const [broken, none, late] = [newDomain(), newDomain(), newDomain()];
    const gateway = prober((request) => {
      if (request.domain === broken) return Promise.reject(new Error('hub unreachable'));
      if (request.domain === none) return Promise.resolve({ kind: 'unavailable', message: 'no prober' });
      // A hub that never answers.
      return new Promise<ProbeOutcome>(() => {});
    });
    const { deps } = sampleDeps(gateway, { waitMs: 1_200 });
    const started = Date.now();
    const paces = await samplePaces(deps, [unknownOf(broken), unknownOf(none), unknownOf(late)]);
    expect(paces).toEqual([]);
    expect(gateway.asked).toHaveLength(3);
    // The wait, not the hub's silence.
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  test('a domain with no mail server to ask is not probed; a deployment without SMTP samples nothing', async () => {
    const gateway = prober(async (request) => report(request.emails[0] as string, ACCEPTED, NO_MAILBOX));
    const { deps, world } = sampleDeps(gateway);
    world.route = { kind: 'nxdomain' };
    expect(await samplePaces(deps, [unknownOf(newDomain())])).toEqual([]);
    expect(gateway.asked).toHaveLength(0);
    const resolutions = world.resolutions.length;
    const withoutSmtp = { ...deps, verify: { ...deps.verify, prober: null } };
    expect(await samplePaces(withoutSmtp, [unknownOf(newDomain())])).toEqual([]);
    expect(world.resolutions).toHaveLength(resolutions);
  });

  test(`at most ${SAMPLE_DOMAINS} domains are asked, those with the most addresses first`, async () => {
    const domains = Array.from({ length: SAMPLE_DOMAINS + 4 }, () => newDomain());
    // Domain i has i + 1 addresses: the last ones have the most.
    const addresses = domains.flatMap((domain, index) =>
      Array.from({ length: index + 1 }, (_, n) => ({ email: `user${n}@${domain}`, domain })),
    );
    const { unknown } = await listPaces(db(), addresses, Date.now());
    expect(unknown.map((entry) => entry.addresses)).toEqual(domains.map((_, index) => index + 1).reverse());
    const gateway = prober(async (request) => report(request.emails[0] as string, ACCEPTED, NO_MAILBOX));
    const { deps } = sampleDeps(gateway);
    await samplePaces(deps, unknown);
    expect(gateway.asked.map((request) => request.domain).sort()).toEqual(
      domains.slice(-SAMPLE_DOMAINS).sort(),
    );
  });
});

// The operator's alerts: what a hub's reports make of them, their delivery signed the Standard
// Webhooks way (checked with the reference library) and retried, and one email for a batch.
import { env } from 'cloudflare:workers';
import type { EgressHealthInfo } from '@rcpt/shared/contract/prober';
import { Webhook } from 'standardwebhooks';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { blockAt } from '../../../test/fake-prober.ts';
import { db } from '../../../test/fixtures.ts';
import { configOf } from '../../config.ts';
import type { NoticeEmail } from '../accounts/confirmation-sender.ts';
import { alertsView, blockAlerts, deliverDueAlerts, healthAlerts, raiseAlerts } from './alerts.ts';

const SECRET = `whsec_${btoa('operator alerts test secret 32b!')}`;
const HOOK = 'https://alerts.operator.test/rcpt';

interface Received {
  id: string;
  body: string;
  verified: unknown;
}

/** Answers the operator's webhook with `statuses` in turn, each request checked by `standardwebhooks`. */
function operatorWebhook(statuses: number[]): Received[] {
  const received: Received[] = [];
  const passThrough = globalThis.fetch.bind(globalThis);
  vi.spyOn(globalThis, 'fetch').mockImplementation(async (input, init) => {
    const request = new Request(input, init);
    if (request.url !== HOOK) return passThrough(input, init);
    const body = await request.text();
    const headers = Object.fromEntries(request.headers);
    received.push({
      id: headers['webhook-id'] ?? '',
      body,
      verified: new Webhook(SECRET).verify(body, headers),
    });
    return new Response(null, { status: statuses.shift() ?? 200 });
  });
  return received;
}

function depsWith(overrides: Record<string, string>, emails: NoticeEmail[] = []) {
  const config = configOf({
    ...env,
    OPERATOR_WEBHOOK_URL: HOOK,
    OPERATOR_WEBHOOK_SECRET: SECRET,
    PUBLIC_URL: 'https://rcpt.example.com',
    ...overrides,
  } as Env);
  return { db: db(), config, notices: { send: async (email: NoticeEmail) => void emails.push(email) } };
}

afterEach(() => vi.restoreAllMocks());

describe('fleet alerts', () => {
  it("are made of what changed in a prober's blocks: each new block, each one ended", () => {
    const now = Date.now();
    const kept = blockAt('127.0.0.2', 'mx1.company.test', now);
    const ended = blockAt('127.0.0.2', 'mx2.company.test', now);
    const started = blockAt('127.0.0.1', 'mx3.company.test', now);
    const alerts = blockAlerts('eu', 'prober-1', [kept, ended], [kept, started]);
    expect(
      alerts.map((alert) => [alert.type, alert.data.egress, (alert.data.scope as { name: string }).name]),
    ).toEqual([
      ['egress.blocked', '127.0.0.1', 'mx3.company.test'],
      ['egress.unblocked', '127.0.0.2', 'mx2.company.test'],
    ]);
    expect(blockAlerts('eu', 'prober-1', [kept], [kept])).toEqual([]);
  });

  it("are made of what changed in an egress's health: a listing and a delisting, reverse DNS failing and passing again", () => {
    const check = (parts: Partial<EgressHealthInfo>): EgressHealthInfo => ({
      egress: '127.0.0.2',
      address: '127.0.0.2',
      ptr: 'out2.egress.test',
      fcrdns: 'pass',
      heloMatches: true,
      listings: [],
      unchecked: [],
      port25: 'unknown',
      checkedAt: 1_800_000_000_000,
      ...parts,
    });
    const zen = { zone: 'zen.spamhaus.org', codes: ['127.0.0.2'], meaning: 'SBL' };
    const types = (before: EgressHealthInfo[], after: EgressHealthInfo[]) =>
      healthAlerts('eu', 'prober-1', before, after).map((alert) => alert.type);
    // A first check alerts what it finds wrong, and nothing of what is well.
    expect(types([], [check({ listings: [zen], fcrdns: 'fail' })])).toEqual([
      'egress.listed',
      'egress.reverse_dns_failed',
    ]);
    expect(types([], [check({})])).toEqual([]);
    // The same result again is no news; its end is.
    expect(types([check({ listings: [zen] })], [check({ listings: [zen] })])).toEqual([]);
    expect(types([check({ listings: [zen], fcrdns: 'fail' })], [check({})])).toEqual([
      'egress.delisted',
      'egress.reverse_dns_passed',
    ]);
    // A lookup that found nothing either way says nothing.
    expect(types([check({ fcrdns: 'fail' })], [check({ fcrdns: 'unknown' })])).toEqual([]);
  });

  it('are posted signed, retried after a failure under the same id, and emailed once with the fleet link', async () => {
    const received = operatorWebhook([503]);
    const emails: NoticeEmail[] = [];
    const deps = depsWith({ OPERATOR_EMAIL: 'ops@example.com' }, emails);
    const now = Date.now();
    const region = `alerts-${crypto.randomUUID().slice(0, 8)}`;
    const block = blockAt('127.0.0.2', 'mx1.company.test', now);
    await raiseAlerts(deps, blockAlerts(region, 'prober-1', [], [block]), now);

    // The first attempt was answered 503: pending, due again after 30 s.
    expect(received).toHaveLength(1);
    expect(received[0]?.verified).toMatchObject({
      type: 'egress.blocked',
      data: {
        region,
        egress: '127.0.0.2',
        scope: { kind: 'mx_host', name: 'mx1.company.test' },
        fleetUrl: `https://rcpt.example.com/internal/fleet?region=${region}`,
      },
    });
    const [shown] = (await alertsView(deps)).filter((alert) => alert.region === region);
    expect(shown).toMatchObject({ type: 'egress.blocked', delivery: 'pending', subject: '127.0.0.2' });
    await deliverDueAlerts(deps, now + 10_000);
    expect(received).toHaveLength(1);
    await deliverDueAlerts(deps, now + 31_000);
    expect(received.map((request) => request.id)).toEqual([received[0]?.id, received[0]?.id]);
    const [delivered] = (await alertsView(deps)).filter((alert) => alert.region === region);
    expect(delivered?.delivery).toBe('delivered');

    // One email, sent with the alert and never again.
    const mine = emails.filter((email) => email.subject.includes(region));
    expect(mine).toHaveLength(1);
    expect(mine[0]).toMatchObject({ to: 'ops@example.com' });
    expect(mine[0]?.text).toContain(`egress.blocked in ${region}: 127.0.0.2`);
    expect(mine[0]?.text).toContain(`https://rcpt.example.com/internal/fleet?region=${region}`);
  });

  it('without a webhook URL are kept and emailed, and nothing is posted', async () => {
    const received = operatorWebhook([]);
    const emails: NoticeEmail[] = [];
    const deps = depsWith({ OPERATOR_WEBHOOK_URL: '', OPERATOR_EMAIL: 'ops@example.com' }, emails);
    const region = `alerts-${crypto.randomUUID().slice(0, 8)}`;
    await raiseAlerts(deps, [{ type: 'region.gone', region, data: {} }], Date.now());
    expect(received).toEqual([]);
    expect(emails.filter((email) => email.subject.includes(region))).toHaveLength(1);
    const [shown] = (await alertsView(deps)).filter((alert) => alert.region === region);
    expect(shown).toMatchObject({ type: 'region.gone', delivery: 'failed' });
  });
});

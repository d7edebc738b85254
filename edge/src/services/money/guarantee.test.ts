// The guarantee on the real local D1 (docs/money.md, "The guarantee"): a signed mailbox bounce of
// a charged `deliverable` verdict gives one credit back, once, within the month's cap; the plain
// API, a policy bounce and a replay give nothing.
import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { balanceOf, createJobAs, db, ledgerOf, newCaller, quotas } from '../../../test/fixtures.ts';
import { newDomain, routeVia, scene } from '../../../test/verify-scene.ts';
import { configOf } from '../../config.ts';
import type { OutcomeRow } from '../../storage/outcomes.ts';
import type { Caller } from '../keys/api-keys.ts';
import { createOutcomeEndpoint } from '../outcomes/endpoints.ts';
import { receiveOutcomeHook } from '../outcomes/hooks.ts';
import { recordOutcomes } from '../outcomes/record.ts';
import { utcMonthStart, VERIFICATIONS_PER_GUARANTEE_REFUND } from './guarantee.ts';

const USER_UNKNOWN = 'smtp; 550 5.1.1 The email account that you tried to reach does not exist';
const POLICY_BLOCK = 'smtp; 550 5.7.1 Message rejected due to local policy';
const HOUR = 3_600_000;

async function payingCaller(credits: number): Promise<Caller> {
  const created = await newCaller({ credits });
  return { accountId: created.accountId, apiKeyId: created.keyId, mode: 'live', creditBalance: credits };
}

/** One bounce reported by `source` as event `eventId`; the credits the guarantee gave back. */
async function bounce(
  caller: Caller,
  source: OutcomeRow['source'],
  eventId: string,
  email: string,
  at: number,
  diagnostic = USER_UNKNOWN,
): Promise<number> {
  const { guaranteeRefunds } = await recordOutcomes(
    { db: db(), quotas: quotas(), now: at + 1 },
    {
      accountId: caller.accountId,
      apiKeyId: source === 'api' ? caller.apiKeyId : null,
      mode: 'live',
      source,
    },
    [{ eventKey: `${source}:${eventId}`, email, outcome: 'hard_bounce', at, diagnostic }],
  );
  return guaranteeRefunds;
}

/** `count` charged verifications in one upload, on the clock at `now`. */
async function chargeUpload(caller: Caller, count: number, now: number): Promise<void> {
  const domain = newDomain('volume.test');
  const emails = Array.from({ length: count }, (_, index) => `u${index}@${domain}`);
  await createJobAs({ accountId: caller.accountId, keyId: caller.apiKeyId }, 'live', emails, { now });
}

describe('the guarantee', () => {
  it('refunds a signed mailbox bounce of a charged deliverable once, never the plain API, a policy bounce or a replay', async () => {
    const domain = newDomain('guarantee.test');
    const { verify, advance, now } = scene(routeVia(`mx.${domain}`));
    const caller = await payingCaller(500);
    const [x, y, z] = ['x', 'y', 'z'].map((local) => `${local}@${domain}`) as [string, string, string];
    const verdictOf = new Map<string, string>();
    for (const email of [x, y, z]) verdictOf.set(email, (await verify(caller, email)).requestId);
    await chargeUpload(caller, VERIFICATIONS_PER_GUARANTEE_REFUND, now());
    advance(HOUR);
    const balance = await balanceOf(caller.accountId);

    // The plain API is not signed by a sending service; a policy bounce says nothing of the mailbox.
    expect(await bounce(caller, 'api', 'one', x, now())).toBe(0);
    expect(await bounce(caller, 'sendgrid', 'policy', z, now(), POLICY_BLOCK)).toBe(0);
    expect(await balanceOf(caller.accountId)).toBe(balance);

    expect(await bounce(caller, 'sendgrid', 'x-1', x, now())).toBe(1);
    // The same event again, and another event about the same verdict: nothing more.
    expect(await bounce(caller, 'sendgrid', 'x-1', x, now())).toBe(0);
    expect(await bounce(caller, 'mailgun', 'x-2', x, now() + 1)).toBe(0);
    expect(await balanceOf(caller.accountId)).toBe(balance + 1);
    const refunds = (await ledgerOf(caller.accountId)).filter((row) => row.reason === 'guarantee_refund');
    expect(refunds).toEqual([{ delta: 1, reason: 'guarantee_refund', reference: verdictOf.get(x) }]);
  });

  it('refunds at most one a month per 100 charged verifications of the month', async () => {
    const domain = newDomain('guarantee.test');
    const { verify, advance, now } = scene(routeVia(`mx.${domain}`));
    const caller = await payingCaller(500);
    const emails = ['p', 'q', 'r'].map((local) => `${local}@${domain}`) as [string, string, string];
    for (const email of emails) await verify(caller, email);
    // 3 charged: under 100, nothing is refunded.
    advance(HOUR);
    expect(await bounce(caller, 'postmark', 'p', emails[0], now())).toBe(0);
    // 103 charged: one refund this month, and the next waits for more volume.
    await chargeUpload(caller, 100, now());
    expect(await bounce(caller, 'postmark', 'q', emails[1], now())).toBe(1);
    expect(await bounce(caller, 'postmark', 'r', emails[2], now())).toBe(0);
    await chargeUpload(caller, 100, now());
    expect(await bounce(caller, 'postmark', 'r-again', emails[2], now())).toBe(1);
    const refunds = (await ledgerOf(caller.accountId)).filter((row) => row.reason === 'guarantee_refund');
    expect(refunds).toHaveLength(2);
  });

  it("refunds a bounce posted to the account's Postmark endpoint with its credentials, and nothing without them", async () => {
    const domain = newDomain('guarantee.test');
    const { verify, advance, now } = scene(routeVia(`mx.${domain}`));
    const caller = await payingCaller(500);
    const email = `dora@${domain}`;
    const { requestId } = await verify(caller, email);
    await chargeUpload(caller, VERIFICATIONS_PER_GUARANTEE_REFUND, now());
    advance(HOUR);
    const secretsKey = configOf(env).SECRETS_KEY;
    const { endpoint, basicAuth } = await createOutcomeEndpoint(
      { db: db(), secretsKey, origin: 'https://edge.test', now: now() },
      caller.accountId,
      { provider: 'postmark' },
    );
    if (!basicAuth) throw new Error('no credentials');
    const body = JSON.stringify({
      RecordType: 'Bounce',
      ID: 4323372036854,
      Type: 'HardBounce',
      Email: email,
      BouncedAt: new Date(now() - 60_000).toISOString(),
      Details: 'smtp;550 5.1.1 The email account that you tried to reach does not exist',
    });
    const post = (password: string) =>
      receiveOutcomeHook(
        {
          db: db(),
          quotas: quotas(),
          secretsKey,
          fetch: () => Promise.reject(new Error('no fetch here')),
          snsTestOrigin: undefined,
          now: now(),
        },
        {
          provider: 'postmark',
          endpointId: endpoint.id,
          headers: new Headers({ authorization: `Basic ${btoa(`${basicAuth.username}:${password}`)}` }),
          body,
        },
      );
    const balance = await balanceOf(caller.accountId);
    await expect(post('rkh_wrong')).rejects.toMatchObject({ code: 'OUTCOME_HOOK_UNAUTHORIZED' });
    expect(await balanceOf(caller.accountId)).toBe(balance);
    expect(await post(basicAuth.password)).toMatchObject({ recorded: 1, refunded: 1 });
    expect(await post(basicAuth.password)).toMatchObject({ recorded: 0, duplicates: 1, refunded: 0 });
    expect(await balanceOf(caller.accountId)).toBe(balance + 1);
    expect((await ledgerOf(caller.accountId)).filter((row) => row.reason === 'guarantee_refund')).toEqual([
      { delta: 1, reason: 'guarantee_refund', reference: requestId },
    ]);
  });

  it('counts the month in UTC calendar months', () => {
    expect(new Date(utcMonthStart(Date.parse('2026-11-23T10:00:00Z'))).toISOString()).toBe(
      '2026-11-01T00:00:00.000Z',
    );
    expect(new Date(utcMonthStart(Date.parse('2026-12-01T00:00:00Z'))).toISOString()).toBe(
      '2026-12-01T00:00:00.000Z',
    );
  });
});

// Learning from outcomes on the real local D1 (docs/verdicts.md, "Learning from outcomes"): an
// account's own mailbox bounce answers its later verdicts of the address, and only its own; a
// domain whose accepted addresses bounce for several accounts answers accepted mailboxes risky.
import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { db, quotas } from '../../../test/fixtures.ts';
import { ACCEPTED, callerOf, newDomain, routeVia, scene } from '../../../test/verify-scene.ts';
import { listHistory } from '../../storage/verifications.ts';
import type { Caller } from '../keys/api-keys.ts';
import { accuracyOf } from './accuracy.ts';
import { apiEventKey, type OutcomeEvent, recordOutcomes } from './record.ts';

const USER_UNKNOWN =
  'smtp; 550 5.1.1 <{email}>: Recipient address rejected: User unknown in virtual mailbox table';
const POLICY_BLOCK = 'smtp; 550 5.7.1 Service unavailable; client [192.0.2.7] blocked using zen.spamhaus.org';
const HOUR = 3_600_000;

function report(
  caller: Caller,
  now: number,
  outcomes: { email: string; outcome: OutcomeEvent['outcome']; at: number; diagnostic?: string }[],
) {
  return recordOutcomes(
    { db: db(), quotas: quotas(), now, desks: env.ACCOUNT_DESK },
    { accountId: caller.accountId, apiKeyId: caller.apiKeyId, mode: 'live', source: 'api' },
    outcomes.map((outcome) => ({
      eventKey: apiEventKey(outcome.outcome, outcome.at),
      email: outcome.email,
      outcome: outcome.outcome,
      at: outcome.at,
      diagnostic: outcome.diagnostic?.replace('{email}', outcome.email) ?? null,
    })),
  );
}

describe("an account's own mailbox bounce", () => {
  it('answers its later verdict of the address undeliverable, with the date, until a delivery says otherwise', async () => {
    const domain = newDomain('learning.test');
    const { prober, verify, advance, now } = scene(routeVia(`mx.${domain}`));
    const accountA = await callerOf('live');
    const email = `ann@${domain}`;
    expect((await verify(accountA, email)).result.status).toBe('deliverable');
    const bouncedAt = now() + HOUR;
    advance(2 * HOUR);
    await report(accountA, now(), [
      { email, outcome: 'hard_bounce', at: bouncedAt, diagnostic: USER_UNKNOWN },
    ]);

    const probes = prober.probes.length;
    const learnt = await verify(accountA, email);
    expect(learnt.result).toMatchObject({
      status: 'undeliverable',
      subStatus: 'mailbox_not_found',
      isDeliverable: false,
      meta: {
        cached: false,
        learnt: {
          kind: 'mailbox_bounce',
          bouncedAt: new Date(bouncedAt).toISOString(),
          diagnostic: USER_UNKNOWN.replace('{email}', email),
        },
      },
    });
    // Answered from the bounce: no SMTP session, and none in the answer.
    expect(prober.probes).toHaveLength(probes);
    expect(learnt.result.evidence).toBeUndefined();

    // A later delivery of the address says the mailbox takes mail again.
    advance(HOUR);
    await report(accountA, now(), [{ email, outcome: 'delivered', at: now() - 1 }]);
    advance(60_000);
    const again = await verify(accountA, email);
    expect(again.result).toMatchObject({ status: 'deliverable', meta: { cached: false } });
    expect(again.result.meta.learnt).toBeUndefined();
    expect(prober.probes).toHaveLength(probes + 1);
  });

  it("is never another account's: B gets the mail server's answer, and nothing of A's bounce anywhere", async () => {
    const domain = newDomain('learning.test');
    const { verify, advance, now } = scene(routeVia(`mx.${domain}`));
    const [accountA, accountB] = [await callerOf('live'), await callerOf('live')];
    const email = `bob@${domain}`;
    await verify(accountA, email);
    advance(HOUR);
    await report(accountA, now(), [
      { email, outcome: 'hard_bounce', at: now() - 1, diagnostic: USER_UNKNOWN },
    ]);
    advance(HOUR);

    expect((await verify(accountA, email)).result.status).toBe('undeliverable');
    const b = await verify(accountB, email);
    expect(b.result).toMatchObject({ status: 'deliverable', subStatus: 'accepted_email' });
    expect(JSON.stringify(b.result)).not.toContain('bounce');
    expect(b.result.meta.learnt).toBeUndefined();
    const history = await listHistory(db(), accountB.accountId, { mode: 'live' }, { offset: 0, limit: 10 });
    expect(history.rows.map((row) => row.status)).toEqual(['deliverable']);
    const accuracy = await accuracyOf(db(), accountB.accountId, { from: now() - 30 * 24 * HOUR, to: now() });
    expect(Object.values(accuracy.byStatus).map((counts) => counts.matched)).toEqual([]);
    expect(JSON.stringify(accuracy)).not.toContain(email);
  });

  it("is not learnt from a policy bounce (5.7.x): the verdict stays the mail server's", async () => {
    const domain = newDomain('learning.test');
    const { verify, advance, now } = scene(routeVia(`mx.${domain}`));
    const account = await callerOf('live');
    const email = `cy@${domain}`;
    await verify(account, email);
    advance(HOUR);
    await report(account, now(), [
      { email, outcome: 'hard_bounce', at: now() - 1, diagnostic: POLICY_BLOCK },
    ]);
    advance(25 * HOUR);
    const after = await verify(account, email);
    expect(after.result).toMatchObject({ status: 'deliverable', meta: { cached: false } });
    expect(after.result.meta.learnt).toBeUndefined();
  });
});

describe('a domain that accepts then bounces', () => {
  it('is learnt from two accounts, never one, and then answers accepted mailboxes risky with the fact', async () => {
    const domain = newDomain('learning.test');
    const { prober, verify, advance, now } = scene(routeVia(`mx.${domain}`));
    prober.rcpt = ACCEPTED;
    const [accountA, accountB, accountC] = [
      await callerOf('live'),
      await callerOf('live'),
      await callerOf('live'),
    ];
    for (const local of ['a1', 'a2', 'a3']) await verify(accountA, `${local}@${domain}`);
    await verify(accountB, `b1@${domain}`);
    const before = await verify(accountC, `c0@${domain}`);
    expect(before.result.status).toBe('deliverable');
    advance(HOUR);

    // One account, however many bounces, changes nothing for the others.
    await report(
      accountA,
      now(),
      ['a1', 'a2', 'a3'].map((local) => ({
        email: `${local}@${domain}`,
        outcome: 'hard_bounce' as const,
        at: now() - 1,
        diagnostic: USER_UNKNOWN,
      })),
    );
    advance(60_000);
    expect((await verify(accountC, `c1@${domain}`)).result.status).toBe('deliverable');
    // A cached verdict answers again while the domain's facts hold.
    expect((await verify(accountC, `c0@${domain}`)).result.meta.cached).toBe(true);

    await report(accountB, now(), [
      { email: `b1@${domain}`, outcome: 'hard_bounce', at: now() - 1, diagnostic: USER_UNKNOWN },
    ]);
    advance(60_000);
    const later = await verify(accountC, `c2@${domain}`);
    expect(later.result).toMatchObject({
      status: 'risky',
      subStatus: 'accepts_then_bounces',
      isDeliverable: false,
      meta: {
        learnt: {
          kind: 'domain_accepts_then_bounces',
          bounces: 4,
          accounts: 2,
          lastBounceAt: new Date(now() - 60_000 - 1).toISOString(),
        },
      },
    });
    // No address of A's or B's is in it, and the verdict reached before is no longer answered.
    expect(JSON.stringify(later.result)).not.toMatch(/[ab]\d@/);
    const cachedBefore = await verify(accountC, `c0@${domain}`);
    expect(cachedBefore.result).toMatchObject({ status: 'risky', meta: { cached: false } });
  });
});

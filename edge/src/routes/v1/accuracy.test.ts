// GET /api/v1/accuracy: the counts behind each rate, by the status rcpt gave, by provider, by
// sub-status and by week, from the account's matched outcomes only.
import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { call, newCaller } from '../../../test/fixtures.ts';

const DAY = 86_400_000;
// Wednesday 2026-11-18 and Monday 2026-11-23, noon UTC.
const WEDNESDAY = Date.UTC(2026, 10, 18, 12);
const MONDAY = Date.UTC(2026, 10, 23, 12);

interface Outcome {
  outcome: 'delivered' | 'hard_bounce' | 'soft_bounce' | 'complaint';
  bounceKind?: 'mailbox' | 'policy' | 'other';
  verdict: [status: string, subStatus: string, provider: string] | null;
  at: number;
}

async function record(accountId: string, outcomes: Outcome[]): Promise<void> {
  await env.DB.batch(
    outcomes.map((outcome, index) =>
      env.DB.prepare(
        `INSERT INTO outcomes (id, account_id, api_key_id, source, event_key, email, outcome, at, bounce_kind,
           verdict_source, verdict_ref, verdict_at, verdict_status, verdict_sub_status, verdict_provider, created_at)
         VALUES (?1, ?2, NULL, 'api', ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?6)`,
      ).bind(
        crypto.randomUUID(),
        accountId,
        `e${index}`,
        `user${index}@example.test`,
        outcome.outcome,
        outcome.at,
        outcome.bounceKind ?? null,
        outcome.verdict ? 'single' : null,
        outcome.verdict ? crypto.randomUUID() : null,
        outcome.verdict ? outcome.at - DAY : null,
        outcome.verdict?.[0] ?? null,
        outcome.verdict?.[1] ?? null,
        outcome.verdict?.[2] ?? null,
      ),
    ),
  );
}

describe('GET /api/v1/accuracy', () => {
  it('counts each status against what it promised, by provider, sub-status and week; unmatched outcomes count nowhere', async () => {
    const caller = await newCaller({ scopes: ['read'] });
    const deliverable = ['deliverable', 'accepted_email', 'google'] as const;
    await record(caller.accountId, [
      { outcome: 'delivered', verdict: [...deliverable], at: WEDNESDAY },
      { outcome: 'delivered', verdict: [...deliverable], at: MONDAY },
      { outcome: 'hard_bounce', bounceKind: 'mailbox', verdict: [...deliverable], at: MONDAY },
      // A policy bounce says nothing of the mailbox: never wrong.
      {
        outcome: 'hard_bounce',
        bounceKind: 'policy',
        verdict: ['deliverable', 'accepted_email', 'mx.example.test'],
        at: MONDAY,
      },
      {
        outcome: 'hard_bounce',
        bounceKind: 'mailbox',
        verdict: ['risky', 'catch_all', 'google'],
        at: MONDAY,
      },
      { outcome: 'delivered', verdict: ['undeliverable', 'mailbox_not_found', 'google'], at: MONDAY },
      { outcome: 'soft_bounce', verdict: ['unknown', 'greylisted', 'google'], at: MONDAY },
      { outcome: 'hard_bounce', bounceKind: 'mailbox', verdict: null, at: MONDAY },
    ]);
    // Another account's outcomes are not this one's.
    const other = await newCaller({ scopes: ['read'] });
    await record(other.accountId, [{ outcome: 'delivered', verdict: [...deliverable], at: MONDAY }]);

    const query = `from=${new Date(WEDNESDAY - DAY).toISOString()}&to=${new Date(MONDAY + DAY).toISOString()}`;
    const response = await call(`/api/v1/accuracy?${query}`, { key: caller.apiKey });
    expect(response.status).toBe(200);
    const body = (await response.json()) as Record<string, never>;
    expect(body.byStatus).toEqual({
      deliverable: {
        matched: 4,
        delivered: 2,
        mailboxBounces: 1,
        policyBounces: 1,
        otherBounces: 0,
        softBounces: 0,
        complaints: 0,
        wrong: 1,
        wrongRate: 0.25,
      },
      risky: expect.objectContaining({ matched: 1, mailboxBounces: 1, wrong: 1, wrongRate: 1 }),
      undeliverable: expect.objectContaining({ matched: 1, delivered: 1, wrong: 1, wrongRate: 1 }),
      unknown: expect.objectContaining({ matched: 1, softBounces: 1, wrong: 0, wrongRate: null }),
    });
    const providers = body.byProvider as unknown as {
      provider: string;
      byStatus: Record<string, { matched: number }>;
    }[];
    expect(providers.map((entry) => entry.provider)).toEqual(['google', 'mx.example.test']);
    expect(providers[1]?.byStatus).toEqual({
      deliverable: expect.objectContaining({ matched: 1, policyBounces: 1, wrong: 0 }),
    });
    expect(body.bySubStatus).toContainEqual({
      status: 'risky',
      subStatus: 'catch_all',
      counts: expect.objectContaining({ matched: 1, wrong: 1 }),
    });
    const weeks = body.byWeek as unknown as {
      weekStart: string;
      byStatus: Record<string, { matched: number }>;
    }[];
    expect(weeks.map((week) => [week.weekStart, week.byStatus.deliverable?.matched])).toEqual([
      ['2026-11-16', 1],
      ['2026-11-23', 3],
    ]);
  });

  it('refuses a period backwards or too long with 400 VALIDATION_ERROR, and needs the read scope', async () => {
    const caller = await newCaller({ scopes: ['read'] });
    const backwards = await call(
      `/api/v1/accuracy?from=${new Date(MONDAY).toISOString()}&to=${new Date(WEDNESDAY).toISOString()}`,
      {
        key: caller.apiKey,
      },
    );
    expect(backwards.status).toBe(400);
    expect(await backwards.json()).toMatchObject({ success: false, code: 'VALIDATION_ERROR' });
    const long = await call(`/api/v1/accuracy?from=2020-01-01T00:00:00Z&to=2026-01-01T00:00:00Z`, {
      key: caller.apiKey,
    });
    expect(long.status).toBe(400);
    const notRead = await newCaller({ scopes: ['verify'] });
    expect((await call('/api/v1/accuracy', { key: notRead.apiKey })).status).toBe(403);
  });
});

// The ledger invariant under random interleavings of everything that moves money, on the real
// local D1: single verifications at the account's desk, several at once (some failing after the
// charge), the desk's flushes to D1 (giving its unspent credits back or not), uploads, result writes
// (partial, replayed, and abandoned halfway as by a consumer that throws after enqueueing its
// retries), recovery sweeps, job failures and greylist follow-up rounds (which charge the
// refunded addresses they answer, as far as the balance covers), purchases paid (their webhook
// replayed) and refunded in parts (as far as the balance holds the credits); and sign-up grants
// of accounts that share a mailbox, confirmed in any order and at once.

import { env } from 'cloudflare:workers';
import type { DnsOutcome } from '@rcpt/shared/verify/inputs';
import { normaliseMailbox } from '@rcpt/shared/verify/mailbox';
import { checkSyntax } from '@rcpt/shared/verify/syntax';
import type { VerifyDeps } from '@rcpt/shared/verify/verify-address';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { factsWorld } from '../../test/domain-facts.ts';
import { db, listsCountOf, listsRows, newCaller, quotas } from '../../test/fixtures.ts';
import { configOf } from '../config.ts';
import { recoverStuckJobs, UNANSWERED_VERIFICATION_MS } from '../cron/recovery.ts';
import { rowsFromJson } from '../services/batch/input.ts';
import { addressResult, createBatchJob } from '../services/batch/jobs.ts';
import type { BatchMessage } from '../services/batch/queue.ts';
import { startRecheckRound } from '../services/batch/recheck.ts';
import { recheckAnswerOf, recordRecheck } from '../services/batch/results.ts';
import { settleDepsOf } from '../services/batch-lifecycle.ts';
import type { Caller } from '../services/keys/api-keys.ts';
import { deskOf, settleDesk } from '../services/money/account-desk.ts';
import { sandboxVerify } from '../services/verify/sandbox.ts';
import { verifyForCaller } from '../services/verify/single-verification.ts';
import { confirmAccountEmail, insertUnconfirmedAccount } from './accounts.ts';
import { failJob, recordResults } from './job-results.ts';
import { applyRefund, grantPaidPurchase, insertPurchase } from './purchases.ts';

const MX: DnsOutcome = {
  kind: 'mx',
  dnsType: 'MX',
  mx: [{ host: 'mx.ledger.test', preference: 10, ips: ['127.0.0.1'] }],
};
const queue = { send: async () => {}, sendBatch: async () => {} } as unknown as Queue<BatchMessage>;
const LOCAL_PARTS = ['deliverable', 'undeliverable', 'risky', 'unknown', 'greylisted'];

function deps(hubFails: boolean): VerifyDeps {
  return {
    mailRoute: async () => MX,
    prober: {
      probe: async () => {
        if (hubFails) throw new Error('hub RPC failed');
        return { kind: 'unavailable', message: 'no prober' };
      },
    },
    mailFrom: 'verify@rcpt.test',
    helo: 'rcpt.test',
    timeoutMs: 3000,
  };
}

type Step =
  | { kind: 'single'; hubFails: boolean; calls: number }
  | { kind: 'flush'; release: boolean }
  | { kind: 'upload'; size: number }
  | { kind: 'record'; job: number; picks: number[]; refundable: boolean; replay: boolean }
  | { kind: 'fail'; job: number }
  | { kind: 'recheck'; job: number; known: boolean[]; replay: boolean }
  | { kind: 'recover'; minutesLater: number }
  | { kind: 'purchase'; credits: number; replay: boolean }
  | { kind: 'refund'; purchase: number; thirds: number; replay: boolean };

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({
    kind: fc.constant('single' as const),
    hubFails: fc.boolean(),
    calls: fc.integer({ min: 1, max: 4 }),
  }),
  fc.record({ kind: fc.constant('flush' as const), release: fc.boolean() }),
  fc.record({ kind: fc.constant('upload' as const), size: fc.integer({ min: 1, max: 5 }) }),
  fc.record({
    kind: fc.constant('record' as const),
    job: fc.nat(4),
    picks: fc.array(fc.nat(4), { maxLength: 5 }),
    refundable: fc.boolean(),
    replay: fc.boolean(),
  }),
  fc.record({ kind: fc.constant('fail' as const), job: fc.nat(4) }),
  fc.record({
    kind: fc.constant('recheck' as const),
    job: fc.nat(4),
    known: fc.array(fc.boolean(), { minLength: 5, maxLength: 5 }),
    replay: fc.boolean(),
  }),
  fc.record({ kind: fc.constant('recover' as const), minutesLater: fc.integer({ min: 0, max: 48 * 60 }) }),
  fc.record({
    kind: fc.constant('purchase' as const),
    credits: fc.integer({ min: 1, max: 20 }),
    replay: fc.boolean(),
  }),
  fc.record({
    kind: fc.constant('refund' as const),
    purchase: fc.nat(3),
    thirds: fc.integer({ min: 1, max: 3 }),
    replay: fc.boolean(),
  }),
);

async function run(steps: Step[]): Promise<string> {
  const account = await newCaller({ credits: 12 });
  const caller: Caller = {
    accountId: account.accountId,
    apiKeyId: account.keyId,
    mode: 'live',
    creditBalance: 12,
  };
  const jobs: { id: string; emails: string[] }[] = [];
  const purchases: { id: string; amount: number; refunded: number }[] = [];
  const now = Date.now();
  for (const action of steps) {
    if (action.kind === 'purchase') {
      const id = crypto.randomUUID();
      const amount = action.credits * 7;
      await insertPurchase(db(), {
        id,
        accountId: account.accountId,
        kind: 'checkout',
        credits: action.credits,
        amount,
        currency: 'usd',
        now,
      });
      const paid = { purchaseId: id, reference: `cs_${id}`, paymentIntentId: `pi_${id}`, now };
      await Promise.all(Array.from({ length: action.replay ? 2 : 1 }, () => grantPaidPurchase(db(), paid)));
      purchases.push({ id, amount, refunded: 0 });
    } else if (action.kind === 'refund') {
      const purchase = purchases[action.purchase % Math.max(1, purchases.length)];
      if (!purchase) continue;
      // Stripe's charge.refunded carries the charge's refunded total so far.
      const total = Math.min(
        purchase.amount,
        purchase.refunded + Math.ceil((purchase.amount * action.thirds) / 3),
      );
      const refund = {
        purchaseId: purchase.id,
        amountRefunded: total,
        reference: `ch_${purchase.id}:${total}`,
        now,
      };
      await Promise.all(Array.from({ length: action.replay ? 2 : 1 }, () => applyRefund(db(), refund)));
      purchase.refunded = total;
    } else if (action.kind === 'single') {
      // Calls at once, charged at the account's desk against the credits it took from D1.
      await Promise.all(
        Array.from(
          { length: action.calls },
          () =>
            verifyForCaller({
              db: db(),
              deps: deps(action.hubFails),
              facts: factsWorld(MX).store(),
              caller,
              email: 'someone@ledger.test',
              fresh: true,
              requestId: `req_${crypto.randomUUID()}`,
              quotas: quotas(),
              now,
              desk: deskOf(env.ACCOUNT_DESK, account.accountId),
            }).catch(() => undefined), // 402, or a failure after the charge (given back)
        ),
      );
    } else if (action.kind === 'flush') {
      await settleDesk(env.ACCOUNT_DESK, account.accountId, { release: action.release });
    } else if (action.kind === 'upload') {
      const emails = Array.from(
        { length: action.size },
        (_, i) => `${LOCAL_PARTS[i % 5]}+${jobs.length}.${i}@ledger.test`,
      );
      const response = await createBatchJob({
        db: db(),
        queue,
        caller,
        upload: rowsFromJson(emails),
        source: 'json',
        name: null,
        webhookUrl: null,
        maxWaitSeconds: null,
        recheck: true,
        quotas: quotas(),
        now,
      }).catch(() => null); // 402
      if (response) jobs.push({ id: response.jobId, emails });
    } else if (action.kind === 'recheck') {
      const job = jobs[action.job % Math.max(1, jobs.length)];
      if (!job) continue;
      const [state] = await rows<{ round: number; dueAt: number | null }>(
        'SELECT recheck_round AS round, recheck_due_at AS dueAt FROM jobs WHERE id = ?1',
        job.id,
      );
      if (state?.dueAt == null) continue;
      const settleDeps = settleDepsOf({
        db: db(),
        queue,
        config: configOf(env),
        inBackground: () => undefined,
      });
      await startRecheckRound(
        settleDeps,
        { kind: 'recheck', jobId: job.id, round: state.round, dueAt: state.dueAt },
        state.dueAt,
      );
      const asking = await listsRows<{ idx: number }>(
        "SELECT idx FROM job_addresses WHERE job_id = ?1 AND recheck = 'asking'",
        job.id,
      );
      const answers = asking.map(({ idx }) =>
        action.known[idx % 5]
          ? recheckAnswerOf(idx, sandboxVerify(checkSyntax('deliverable@ledger.test'), now), {
              retry: 'none',
              refundable: false,
            })
          : recheckAnswerOf(idx, sandboxVerify(checkSyntax('greylisted@ledger.test'), now), {
              retry: 'greylist',
              refundable: true,
            }),
      );
      await recordRecheck(settleDeps, job.id, answers, state.dueAt);
      if (action.replay) await recordRecheck(settleDeps, job.id, answers, state.dueAt);
    } else if (action.kind === 'record' || action.kind === 'fail') {
      const job = jobs[action.job % Math.max(1, jobs.length)];
      if (!job) continue;
      if (action.kind === 'fail') {
        await failJob(db(), job.id, 'failed in the property test', now);
        continue;
      }
      const idxs = [...new Set(action.picks.map((pick) => pick % job.emails.length))];
      const results = idxs.map((idx) => {
        const refundable = action.refundable && idx % 2 === 0;
        return {
          ...addressResult(idx, sandboxVerify(checkSyntax(job.emails[idx] ?? ''), now), refundable),
          recheckable: refundable,
        };
      });
      await recordResults(db(), job.id, results, now, 60_000);
      // A queue redelivery of the same message.
      if (action.replay) await recordResults(db(), job.id, results, now, 60_000);
    } else {
      const config = configOf(env);
      const later = now + action.minutesLater * 60_000 + UNANSWERED_VERIFICATION_MS;
      await recoverStuckJobs(
        {
          ...settleDepsOf({ db: db(), queue, config, inBackground: () => undefined }),
          facts: factsWorld(MX).store(),
        },
        later,
      );
    }
  }
  return account.accountId;
}

async function rows<T>(sql: string, ...binds: unknown[]): Promise<T[]> {
  return (
    await env.DB.prepare(sql)
      .bind(...binds)
      .all<T>()
  ).results;
}

async function checkInvariants(accountId: string): Promise<void> {
  // What the desk holds, spent and unspent, written to D1 and given back, as its idle alarm does.
  await settleDesk(env.ACCOUNT_DESK, accountId, { release: true });
  const [balance] = await rows<{ balance: number; ledger: number; reserved: number }>(
    `SELECT credit_balance AS balance, credits_reserved AS reserved,
       (SELECT SUM(delta) FROM credit_ledger WHERE account_id = ?1) AS ledger
     FROM accounts WHERE id = ?1`,
    accountId,
  );
  expect(balance?.balance).toBe(balance?.ledger);
  expect(balance?.balance).toBeGreaterThanOrEqual(0);
  expect(balance?.reserved).toBe(0);

  // No job charged, completed or refunded twice; a refund never exceeds its charge.
  const movements = await rows<{ reference: string; reason: string; n: number; total: number }>(
    `SELECT reference, reason, COUNT(*) AS n, SUM(delta) AS total FROM credit_ledger
     WHERE account_id = ?1 AND reason NOT IN ('signup_grant', 'recheck_charge') GROUP BY reference, reason`,
    accountId,
  );
  for (const movement of movements) expect(movement.n, `${movement.reason} ${movement.reference}`).toBe(1);
  const jobs = await rows<{
    id: string;
    status: string;
    finalized: number;
    totalEmails: number;
    charged: number;
    refunded: number;
  }>(
    `SELECT j.id, j.status, j.finalized, j.total_emails AS totalEmails, j.credits_charged AS charged,
       j.credits_refunded AS refunded
     FROM jobs j WHERE j.account_id = ?1`,
    accountId,
  );
  for (const job of jobs) {
    const done = await listsCountOf(
      "SELECT COUNT(*) AS n FROM job_addresses WHERE job_id = ?1 AND state = 'done'",
      job.id,
    );
    const withResult = await listsCountOf(
      'SELECT COUNT(*) AS n FROM job_addresses WHERE job_id = ?1 AND result_json IS NOT NULL',
      job.id,
    );
    const charge = movements.find((m) => m.reference === job.id && m.reason === 'bulk_charge');
    const refund = movements.find((m) => m.reference === job.id && m.reason === 'bulk_refund');
    // What follow-up rounds charged: rows naming the job and the round.
    const [rechecked] = await rows<{ total: number; rows: number; rounds: number }>(
      `SELECT COALESCE(-SUM(delta), 0) AS total, COUNT(*) AS rows, COUNT(DISTINCT reference) AS rounds
       FROM credit_ledger WHERE account_id = ?1 AND reason = 'recheck_charge' AND reference LIKE ?2 || ':round-%'`,
      accountId,
      job.id,
    );
    expect(-(charge?.total ?? 0) + (rechecked?.total ?? 0)).toBe(job.charged);
    // A known verdict is never free: every answer a round took for a refunded address was paid.
    const unpaid = await listsCountOf(
      'SELECT COUNT(*) AS n FROM job_addresses WHERE job_id = ?1 AND changed_in_round IS NOT NULL AND refundable = 1',
      job.id,
    );
    expect(unpaid).toBe(0);
    expect(refund?.total ?? 0).toBe(job.finalized ? job.refunded : 0);
    expect(job.refunded).toBeLessThanOrEqual(job.charged);
    expect(job.finalized === 1).toBe(job.status === 'completed' || job.status === 'failed');
    // Every charged address of a completed job has exactly one result.
    if (job.status === 'completed') {
      expect(done).toBe(job.totalEmails);
      expect(withResult).toBe(job.totalEmails);
    }
  }

  // Every charged single verification ends in exactly one of its result or its refund, once the
  // desk has flushed: a call given back at the desk never reaches the ledger, so every `verify`
  // row is an answered one, once.
  const singles = await rows<{ reference: string; answered: number; refunds: number }>(
    `SELECT l.reference,
       (SELECT COUNT(*) FROM verifications v WHERE v.id = l.reference AND v.status IS NOT NULL) AS answered,
       (SELECT COUNT(*) FROM credit_ledger r WHERE r.reference = l.reference AND r.reason = 'verify_refund') AS refunds
     FROM credit_ledger l WHERE l.account_id = ?1 AND l.reason = 'verify'`,
    accountId,
  );
  for (const single of singles) expect(single.answered + single.refunds, single.reference).toBe(1);

  // A paid purchase granted its credits once; its refunds took back what the purchase records,
  // never more than it granted.
  const purchases = await rows<{
    id: string;
    status: string;
    credits: number;
    takenBack: number;
    granted: number;
    refunds: number;
  }>(
    `SELECT p.id, p.status, p.credits, p.credits_taken_back AS takenBack,
       (SELECT COALESCE(SUM(delta), 0) FROM credit_ledger WHERE reference = 'cs_' || p.id AND reason = 'purchase') AS granted,
       (SELECT COALESCE(-SUM(delta), 0) FROM credit_ledger WHERE reference LIKE 'ch_' || p.id || ':%' AND reason = 'purchase_refund') AS refunds
     FROM purchases p WHERE p.account_id = ?1`,
    accountId,
  );
  for (const purchase of purchases) {
    expect(purchase.status, purchase.id).not.toBe('pending');
    expect(purchase.granted, purchase.id).toBe(purchase.credits);
    expect(purchase.refunds, purchase.id).toBe(purchase.takenBack);
    expect(purchase.takenBack, purchase.id).toBeLessThanOrEqual(purchase.credits);
  }
}

describe('the credit ledger', () => {
  it('balances, and charges, completes and refunds everything once, under any interleaving', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 10 }), async (steps) => {
        // A final sweep settles what the steps left open, as the cron does.
        const accountId = await run([...steps, { kind: 'recover', minutesLater: 48 * 60 }]);
        await checkInvariants(accountId);
      }),
      {
        numRuns: 12,
        // Follow-up rounds on a job whose refunded answers turn known: with credits left, and
        // after a second upload took them all.
        examples: [
          [
            [
              { kind: 'upload', size: 4 },
              { kind: 'record', job: 0, picks: [0, 1, 2, 3], refundable: true, replay: false },
              { kind: 'recheck', job: 0, known: [true, true, true, true, true], replay: true },
            ],
          ],
          // A purchase partly spent, then refunded in full in two parts, each replayed.
          [
            [
              { kind: 'purchase', credits: 9, replay: true },
              { kind: 'upload', size: 5 },
              { kind: 'refund', purchase: 0, thirds: 1, replay: true },
              { kind: 'upload', size: 5 },
              { kind: 'refund', purchase: 0, thirds: 3, replay: true },
            ],
          ],
          [
            [
              { kind: 'upload', size: 5 },
              { kind: 'record', job: 0, picks: [0, 1, 2, 3, 4], refundable: true, replay: false },
              { kind: 'upload', size: 5 },
              { kind: 'recheck', job: 0, known: [false, true, true, true, true], replay: false },
              { kind: 'recheck', job: 0, known: [true, true, true, true, true], replay: false },
            ],
          ],
        ],
      },
    );
    // A few seconds on an idle machine; the margin is for a loaded one.
  }, 60_000);

  it('grants each mailbox its free credits once, however many accounts of it confirm, in any order or at once', async () => {
    const spellings = (user: string) => [
      `${user}@gmail.com`,
      `${user.slice(0, 2)}.${user.slice(2)}@gmail.com`,
      `${user}+a@gmail.com`,
      `${user}+b@googlemail.com`,
      `${user}@example.com`,
      `${user}+c@example.com`,
    ];
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(fc.nat(5), { minLength: 1, maxLength: 6 }),
        fc.uniqueArray(fc.nat(5), { maxLength: 6 }),
        fc.array(fc.nat(2), { minLength: 12, maxLength: 12 }),
        async (firstUser, secondUser, waves) => {
          const users = [`a${crypto.randomUUID().slice(0, 8)}`, `b${crypto.randomUUID().slice(0, 8)}`];
          const emails = [
            ...firstUser.map((index) => spellings(users[0] ?? '')[index] ?? ''),
            ...secondUser.map((index) => spellings(users[1] ?? '')[index] ?? ''),
          ];
          const now = Date.now();
          const accounts = await Promise.all(
            emails.map(async (email) => {
              const id = crypto.randomUUID();
              await insertUnconfirmedAccount(db(), { id, email, passwordHash: 'unused', now });
              return { id, email };
            }),
          );
          // Each wave confirms its accounts at once; the waves run one after another.
          for (const wave of [0, 1, 2]) {
            await Promise.all(
              accounts
                .filter((_, index) => waves[index] === wave)
                .map((account) =>
                  confirmAccountEmail(db(), {
                    accountId: account.id,
                    email: account.email,
                    mailbox: normaliseMailbox(account.email),
                    credits: 100,
                    now,
                  }),
                ),
            );
          }
          const states = await Promise.all(
            accounts.map(async (account) => {
              const [state] = await rows<{
                balance: number;
                ledger: number;
                grants: number;
                confirmed: number;
              }>(
                `SELECT a.credit_balance AS balance, a.email_confirmed_at IS NOT NULL AS confirmed,
                   (SELECT COALESCE(SUM(delta), 0) FROM credit_ledger WHERE account_id = a.id) AS ledger,
                   (SELECT COUNT(*) FROM credit_ledger WHERE account_id = a.id AND reason = 'signup_grant') AS grants
                 FROM accounts a WHERE a.id = ?1`,
                account.id,
              );
              if (!state) throw new Error(`no account ${account.id}`);
              return { mailbox: normaliseMailbox(account.email), ...state };
            }),
          );
          for (const state of states) {
            expect(state.balance).toBe(state.ledger);
            expect(state.balance).toBe(state.grants * 100);
          }
          const mailboxes = new Set(states.map((state) => state.mailbox));
          for (const mailbox of mailboxes) {
            const ofMailbox = states.filter((state) => state.mailbox === mailbox);
            // Confirmed ones (wave 0–2 covers every account): exactly one grant per mailbox.
            expect(ofMailbox.every((state) => state.confirmed === 1)).toBe(true);
            expect(
              ofMailbox.reduce((sum, state) => sum + state.grants, 0),
              mailbox,
            ).toBe(1);
          }
        },
      ),
      { numRuns: 10 },
    );
  }, 60_000);
});

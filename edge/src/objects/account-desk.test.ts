// The account's desk (docs/money.md, "Where the balance lives"): a single call charged and
// answered there makes no round trip to D1 — counted on D1's own classes, so the Durable Objects'
// reads and writes count too — and a cached one of a key the isolate knows asks its desk beside
// its key's object, counted on the namespaces' own class; what the desk held for a call its key's
// object then refuses is given back (tried again when the first give-back is lost), as is a held
// charge nobody closed; an early start that fails leaves the call to the ordinary way; no concurrency overdraws
// the balance, a flush retried is applied once, history appears once flushed, and a revoked key
// fails on its next request.
import { runDurableObjectAlarm } from 'cloudflare:test';
import { env, exports } from 'cloudflare:workers';
import { hashSecret, issueSecret } from '@rcpt/shared/secret-tokens';
import { checkSyntax } from '@rcpt/shared/verify/syntax';
import type { VerifyDeps } from '@rcpt/shared/verify/verify-address';
import { describe, expect, it } from 'vitest';
import { factsWorld } from '../../test/domain-facts.ts';
import { failingCalls } from '../../test/failing-calls.ts';
import { failingD1 } from '../../test/failing-d1.ts';
import { reportFor, startFakeProber } from '../../test/fake-prober.ts';
import { balanceOf, call, db, ledgerOf, newCaller, quotas } from '../../test/fixtures.ts';
import { configOf } from '../config.ts';
import { keyRecordKeeper } from '../services/keys/api-keys.ts';
import { deskOf, settleDesk } from '../services/money/account-desk.ts';
import { utcDayStart } from '../services/money/quotas.ts';
import { domainFactsOf } from '../services/verify/deps.ts';
import { beginEarlyDeskCall, deskKeptCall, giveBackEarlyDeskCall } from '../services/verify/desk-call.ts';
import { verdictCacheKey } from '../services/verify/kept-verdicts.ts';
import { verifyForCaller } from '../services/verify/single-verification.ts';
import { keptVerdictTerms } from '../services/verify/verdict-cache.ts';
import { applyDeskFlush, type DeskHistoryRow, reserveCredits } from '../storage/desk-books.ts';
import { readDomainFacts } from '../storage/domain-facts.ts';
import { operatorTokens } from '../storage/schema.ts';
import { listHistory } from '../storage/verifications.ts';
import { DESK_OPEN_CHARGE_MS } from './account-desk.ts';
import { RATE_LIMIT, RATE_WINDOW_MS } from './key-limiter.ts';

type Counted = Record<string, (...args: unknown[]) => unknown>;

/**
 * Counts every round trip to D1 made in this isolate while `work` runs — the Worker's, and the
 * Durable Objects' (they run here too) — by wrapping the calls that reach D1 on the classes of
 * the binding, of a session and of a prepared statement.
 */
async function d1TripsDuring(work: () => Promise<void>): Promise<number> {
  let trips = 0;
  let inside = false;
  const session = env.DB.withSession('first-primary');
  const methods = new Map<object, Set<string>>();
  const add = (target: object, names: string[]) => {
    const prototype = Object.getPrototypeOf(target) as object;
    const known = methods.get(prototype) ?? new Set<string>();
    for (const name of names) known.add(name);
    methods.set(prototype, known);
  };
  add(env.DB, ['batch', 'exec']);
  add(session, ['batch']);
  add(env.DB.prepare('SELECT 1'), ['run', 'all', 'first', 'raw']);
  add(session.prepare('SELECT 1'), ['run', 'all', 'first', 'raw']);
  const restore: (() => void)[] = [];
  for (const [prototype, names] of methods) {
    for (const name of names) {
      const original = (prototype as Counted)[name];
      if (typeof original !== 'function') continue;
      (prototype as Counted)[name] = function (this: unknown, ...args: unknown[]) {
        // A class's method may call its parent's, also wrapped: one trip, counted once.
        if (inside) return original.apply(this, args);
        trips++;
        inside = true;
        try {
          return original.apply(this, args);
        } finally {
          inside = false;
        }
      };
      restore.push(() => {
        (prototype as Counted)[name] = original;
      });
    }
  }
  try {
    await work();
  } finally {
    for (const undo of restore) undo();
  }
  return trips;
}

/**
 * Every call made to a Durable Object while `work` runs, as `BINDING.method`: the namespaces' `get`
 * and `getByName` (one class for every binding) are wrapped to hand out stubs whose methods count.
 */
async function objectCallsDuring(work: () => Promise<void>): Promise<string[]> {
  const calls: string[] = [];
  const prototype = Object.getPrototypeOf(env.ACCOUNT_DESK) as Counted;
  const bindingOf = (namespace: unknown) =>
    Object.entries(env).find(([, binding]) => binding === namespace)?.[0] ?? 'unknown';
  const counting = (stub: object, name: string) =>
    new Proxy(stub, {
      get(target, property) {
        const value = Reflect.get(target, property);
        if (typeof property !== 'string' || property === 'then' || typeof value !== 'function') return value;
        return (...args: unknown[]) => {
          calls.push(`${name}.${property}`);
          // Reflect.apply: an RPC method's own `apply` would be a call to the object.
          return Reflect.apply(value, target, args);
        };
      },
    });
  let inside = false;
  const restore: (() => void)[] = [];
  for (const method of ['get', 'getByName']) {
    const original = prototype[method];
    if (typeof original !== 'function') throw new Error(`a namespace has no ${method}`);
    prototype[method] = function (this: unknown, ...args: unknown[]) {
      // getByName may go through get: one stub, counted once.
      if (inside) return Reflect.apply(original, this, args);
      inside = true;
      try {
        return counting(Reflect.apply(original, this, args) as object, bindingOf(this));
      } finally {
        inside = false;
      }
    };
    restore.push(() => {
      prototype[method] = original;
    });
  }
  try {
    await work();
  } finally {
    for (const undo of restore) undo();
  }
  return calls;
}

/** Runs `work` with a prober linked that accepts every address (RCPT 250). */
async function withAcceptingProber(work: () => Promise<void>): Promise<void> {
  const prober = await startFakeProber('default', (probe) => reportFor(probe, 250, '2.1.5', 'OK', 550));
  try {
    await work();
  } finally {
    prober.close();
  }
}

// Settled: what a call leaves running (the domain facts it learnt, the recharge check) is done
// before the next call's round trips are counted.
const verify = (apiKey: string, email: string, fresh = false) =>
  call('/api/v1/verify', { key: apiKey, json: { email, ...(fresh ? { fresh: true } : {}) }, settled: true });

describe('a single call at its account’s desk', () => {
  it('makes no round trip to D1 when answered from the verdict cache, and at most one when probed', async () => {
    await withAcceptingProber(async () => {
      const caller = await newCaller({ credits: 20 });
      const email = `trips-${crypto.randomUUID().slice(0, 8)}@accept.test`;
      // The first call reads the key and the domain, takes a block of credits: it is counted, so
      // the count sees what the objects do.
      const first = await d1TripsDuring(async () => {
        expect((await verify(caller.apiKey, email, true)).status).toBe(200);
      });
      expect(first).toBeGreaterThan(0);
      // The first call's answer is written to D1 by the desk's alarm a second later: written now,
      // so that a slow runner does not count that write in the next call's window.
      await settleDesk(env.ACCOUNT_DESK, caller.accountId);
      const probed = await d1TripsDuring(async () => {
        expect((await verify(caller.apiKey, email, true)).status).toBe(200);
      });
      expect(probed).toBeLessThanOrEqual(1);
      await settleDesk(env.ACCOUNT_DESK, caller.accountId);
      let body: { data: { meta: { cached: boolean } }; creditsRemaining: number } | undefined;
      const cached = await d1TripsDuring(async () => {
        const response = await verify(caller.apiKey, email);
        expect(response.status).toBe(200);
        body = await response.json();
      });
      expect(body?.data.meta.cached).toBe(true);
      expect(cached).toBe(0);
      expect(body?.creditsRemaining).toBe(17);
      // Settled, D1 holds all three charges and their history.
      expect(await balanceOf(caller.accountId)).toBe(17);
      expect((await ledgerOf(caller.accountId)).filter((row) => row.reason === 'verify')).toHaveLength(3);
    });
  });

  it('answers from the verdict cache after one round of object calls (the desk beside the key’s object), and makes two besides the probe otherwise', async () => {
    await withAcceptingProber(async () => {
      const caller = await newCaller({ credits: 20 });
      const email = `calls-${crypto.randomUUID().slice(0, 8)}@accept.test`;
      const first = await objectCallsDuring(async () => {
        expect((await verify(caller.apiKey, email)).status).toBe(200);
      });
      // The desk holds no verdict of a new address: it opens the charge in the same call.
      expect(first).toEqual([
        'KEY_LIMITER.admit',
        'ACCOUNT_DESK.answerKept',
        'PROBER_HUB.probe',
        'ACCOUNT_DESK.answer',
      ]);
      const probed = await objectCallsDuring(async () => {
        expect((await verify(caller.apiKey, email, true)).status).toBe(200);
      });
      // The key's record and its request rate, the charge, the probe, the answer.
      expect(probed).toEqual([
        'KEY_LIMITER.admit',
        'ACCOUNT_DESK.open',
        'PROBER_HUB.probe',
        'ACCOUNT_DESK.answer',
      ]);
      let body: { data: { meta: { cached: boolean } }; creditsRemaining: number } | undefined;
      const cached = await objectCallsDuring(async () => {
        const response = await verify(caller.apiKey, email);
        expect(response.status).toBe(200);
        expect(response.headers.get('X-RateLimit-Remaining')).toBe('97');
        body = await response.json();
      });
      expect(body?.data.meta.cached).toBe(true);
      // The key is known now: its desk is asked first, beside its object, and the charge it held
      // until the key was admitted is closed after the answer.
      expect(cached).toEqual(['ACCOUNT_DESK.answerKept', 'KEY_LIMITER.admit', 'ACCOUNT_DESK.answer']);
      expect(body?.creditsRemaining).toBe(17);
      await settleDesk(env.ACCOUNT_DESK, caller.accountId);
      const history = await listHistory(db(), caller.accountId, {}, { offset: 0, limit: 10 });
      expect(history.rows.map((row) => row.email)).toEqual([email, email, email]);
      expect((await ledgerOf(caller.accountId)).filter((row) => row.reason === 'verify')).toHaveLength(3);
    });
  });

  it('answers a verdict only D1 holds with the charge the desk opened for it: one desk call to open, one to answer', async () => {
    await withAcceptingProber(async () => {
      const caller = await newCaller({ credits: 10 });
      const email = `d1-${crypto.randomUUID().slice(0, 8)}@accept.test`;
      expect((await verify(caller.apiKey, email)).status).toBe(200);
      // Written to D1, and forgotten by the desk (as a reported outcome has it forget).
      await settleDesk(env.ACCOUNT_DESK, caller.accountId);
      await env.ACCOUNT_DESK.getByName(caller.accountId).forget('live', [email]);
      let body: { data: { status: string; meta: { cached: boolean } }; creditsRemaining: number } | undefined;
      const calls = await objectCallsDuring(async () => {
        const response = await verify(caller.apiKey, email);
        expect(response.status).toBe(200);
        body = await response.json();
      });
      expect(body?.data).toMatchObject({ status: 'deliverable', meta: { cached: true } });
      expect(calls).toEqual(['ACCOUNT_DESK.answerKept', 'KEY_LIMITER.admit', 'ACCOUNT_DESK.answer']);
      expect(body?.creditsRemaining).toBe(8);
      await settleDesk(env.ACCOUNT_DESK, caller.accountId);
      const history = await listHistory(db(), caller.accountId, {}, { offset: 0, limit: 10 });
      expect(history.rows.map((row) => row.status)).toEqual(['deliverable', 'deliverable']);
      expect(await balanceOf(caller.accountId)).toBe(8);
    });
  });

  it('never spends more than the balance under 1,000 concurrent calls on 100 credits', async () => {
    const caller = await newCaller({ credits: 100 });
    const desk = env.ACCOUNT_DESK.getByName(caller.accountId);
    const day = utcDayStart(Date.now());
    const answers = await Promise.all(
      Array.from({ length: 1_000 }, (_, index) =>
        desk.open({
          accountId: caller.accountId,
          id: `req_${crypto.randomUUID()}`,
          apiKeyId: caller.keyId,
          mode: 'live',
          email: `a${index}@example.test`,
          amount: 1,
          now: Date.now(),
          answer: {
            email: `a${index}@example.test`,
            address: null,
            status: 'undeliverable',
            subStatus: 'invalid_syntax',
            score: 0,
            resultJson: '{}',
          },
          bytes: 500,
          budget: { day, limit: quotas().storage },
        }),
      ),
    );
    const admitted = answers.filter((answer) => 'balance' in answer);
    expect(admitted).toHaveLength(100);
    expect(answers.filter((answer) => 'refused' in answer && answer.refused === 'credits')).toHaveLength(900);
    await settleDesk(env.ACCOUNT_DESK, caller.accountId, { release: true });
    expect(await balanceOf(caller.accountId)).toBe(0);
    const ledger = await ledgerOf(caller.accountId);
    expect(ledger.filter((row) => row.reason === 'verify')).toHaveLength(100);
    expect(ledger.reduce((sum, row) => sum + row.delta, 0)).toBe(0);
    const history = await listHistory(db(), caller.accountId, {}, { offset: 0, limit: 1 });
    expect(history.total).toBe(100);
  });

  it('gives back a charge whose call failed, and answers it in the history only once flushed', async () => {
    const caller = await newCaller({ credits: 5 });
    const live = {
      accountId: caller.accountId,
      apiKeyId: caller.keyId,
      mode: 'live' as const,
      creditBalance: 5,
    };
    const mx = {
      kind: 'mx' as const,
      dnsType: 'MX' as const,
      mx: [{ host: 'mx.desk.test', preference: 10, ips: ['127.0.0.1'] }],
    };
    const deps = (probe: NonNullable<VerifyDeps['prober']>['probe']): VerifyDeps => ({
      mailRoute: async () => mx,
      prober: { probe },
      mailFrom: 'verify@rcpt.test',
      helo: 'rcpt.test',
      timeoutMs: 3000,
    });
    const desk = env.ACCOUNT_DESK.getByName(caller.accountId);
    const run = (probe: NonNullable<VerifyDeps['prober']>['probe']) =>
      verifyForCaller({
        db: db(),
        deps: deps(probe),
        facts: factsWorld(mx).store(),
        caller: live,
        email: 'a@desk.test',
        requestId: `req_${crypto.randomUUID()}`,
        quotas: quotas(),
        now: Date.now(),
        desk,
      });
    await expect(
      run(async () => {
        throw new Error('ProberHub RPC failed');
      }),
    ).rejects.toMatchObject({ code: 'INTERNAL_ERROR' });
    const answered = await run(async () => ({ kind: 'unavailable', message: 'no prober' }));
    expect(answered.creditsRemaining).toBe(4);
    // Not flushed yet: D1 shows neither the charge nor the row.
    const unflushed = await listHistory(db(), caller.accountId, {}, { offset: 0, limit: 10 });
    expect(unflushed.total).toBe(0);
    await desk.settle();
    const flushed = await listHistory(db(), caller.accountId, {}, { offset: 0, limit: 10 });
    expect(flushed.rows.map((row) => row.subStatus)).toEqual(['smtp_unavailable']);
    expect(await balanceOf(caller.accountId)).toBe(4);
    expect((await ledgerOf(caller.accountId)).map((row) => row.reason)).toEqual(['signup_grant', 'verify']);
  });

  it('applies a flush retried after its answer was lost once', async () => {
    const caller = await newCaller({ credits: 10 });
    const day = utcDayStart(Date.now());
    const budget = { day, limit: null };
    await reserveCredits(db(), caller.accountId, 10, budget);
    const row = (id: string): DeskHistoryRow => ({
      id,
      apiKeyId: caller.keyId,
      createdAt: Date.now(),
      email: 'a@example.test',
      address: 'a@example.test',
      status: 'deliverable',
      subStatus: 'accepted_email',
      score: 90,
      resultJson: '{}',
      amount: 1,
      bytes: 600,
      day,
    });
    const flush = {
      batchId: `batch-${crypto.randomUUID()}`,
      accountId: caller.accountId,
      rows: [row(`req_${crypto.randomUUID()}`), row(`req_${crypto.randomUUID()}`)],
      now: Date.now(),
      budget,
    };
    const first = await applyDeskFlush(db(), flush);
    const again = await applyDeskFlush(db(), flush);
    expect(first).toMatchObject({ applied: true, standing: { reserved: 8, free: 0 } });
    expect(again).toMatchObject({ applied: false, standing: { reserved: 8, free: 0 } });
    expect(await ledgerOf(caller.accountId)).toEqual([
      { delta: 10, reason: 'signup_grant', reference: caller.accountId },
      { delta: -1, reason: 'verify', reference: flush.rows[0]?.id },
      { delta: -1, reason: 'verify', reference: flush.rows[1]?.id },
    ]);
    const counted = await env.DB.prepare('SELECT bytes FROM storage_days WHERE account_id = ? AND day = ?')
      .bind(caller.accountId, day)
      .first<{ bytes: number }>();
    expect(counted?.bytes).toBe(1200);
    const balances = await env.DB.prepare(
      'SELECT credit_balance AS balance, (SELECT SUM(delta) FROM credit_ledger WHERE account_id = ?1) AS ledger FROM accounts WHERE id = ?1',
    )
      .bind(caller.accountId)
      .first<{ balance: number; ledger: number }>();
    expect(balances).toEqual({ balance: 8, ledger: 8 });
  });
});

describe('a call begun at its desk before its key was admitted', () => {
  /** A live caller whose key this isolate knows, with the verdict of `email` kept at its desk. */
  async function knownCallerWithVerdict(email: string) {
    const caller = await newCaller({ credits: 10 });
    await withAcceptingProber(async () => {
      expect((await verify(caller.apiKey, email)).status).toBe(200);
    });
    return caller;
  }

  it('gives back what the desk held when the key turns out revoked: 401, nothing charged', async () => {
    const email = `revoked-${crypto.randomUUID().slice(0, 8)}@accept.test`;
    const caller = await knownCallerWithVerdict(email);
    await env.DB.prepare('UPDATE api_keys SET revoked_at = ? WHERE id = ?')
      .bind(Date.now(), caller.keyId)
      .run();
    await keyRecordKeeper(env.KEY_LIMITER, await hashSecret(caller.apiKey)).forget();
    const calls = await objectCallsDuring(async () => {
      const refused = await verify(caller.apiKey, email);
      expect(refused.status).toBe(401);
      expect(await refused.json()).toMatchObject({ code: 'INVALID_API_KEY' });
    });
    expect(calls).toEqual(['ACCOUNT_DESK.answerKept', 'KEY_LIMITER.admit', 'ACCOUNT_DESK.refund']);
    await settleDesk(env.ACCOUNT_DESK, caller.accountId, { release: true });
    expect(await balanceOf(caller.accountId)).toBe(9);
    expect((await ledgerOf(caller.accountId)).filter((row) => row.reason === 'verify')).toHaveLength(1);
    // Forgotten as known: its next call waits for the key's object before anything else.
    const next = await objectCallsDuring(async () => {
      expect((await verify(caller.apiKey, email)).status).toBe(401);
    });
    expect(next).toEqual(['KEY_LIMITER.admit']);
  });

  it('gives back what the desk held when the key is over its request rate: 429, nothing charged', async () => {
    const email = `limited-${crypto.randomUUID().slice(0, 8)}@accept.test`;
    const caller = await knownCallerWithVerdict(email);
    const limiter = keyRecordKeeper(env.KEY_LIMITER, await hashSecret(caller.apiKey));
    while ((await limiter.hit(RATE_LIMIT, RATE_WINDOW_MS)).allowed) {
      // until the key's minute is used up
    }
    const refused = await verify(caller.apiKey, email);
    expect(refused.status).toBe(429);
    expect(await refused.json()).toMatchObject({ code: 'RATE_LIMITED' });
    await settleDesk(env.ACCOUNT_DESK, caller.accountId, { release: true });
    expect(await balanceOf(caller.accountId)).toBe(9);
    const history = await listHistory(db(), caller.accountId, {}, { offset: 0, limit: 10 });
    expect(history.total).toBe(1);
  });

  it('gives back a held charge that was never closed once it is older than an open charge may be', async () => {
    const email = `held-${crypto.randomUUID().slice(0, 8)}@accept.test`;
    const caller = await knownCallerWithVerdict(email);
    const desk = env.ACCOUNT_DESK.getByName(caller.accountId);
    const key = verdictCacheKey(checkSyntax(email));
    if (!key) throw new Error('no cache key');
    // Asked as the early lookup asks, at a time past the open charges' limit, and never closed.
    const now = Date.now() - DESK_OPEN_CHARGE_MS - 1_000;
    const id = `req_${crypto.randomUUID()}`;
    const input = {
      caller: { accountId: caller.accountId, apiKeyId: caller.keyId, mode: 'live' as const },
      requestId: id,
      now,
      email,
    };
    const terms = await keptVerdictTerms(null, key, { now, evidence: false, sandbox: false });
    const held = await desk.answerKept({
      ...deskKeptCall(input, key, { evidence: false, budget: { day: utcDayStart(now), limit: null }, terms }),
      hold: true,
    });
    expect(held.result).toMatchObject({ email, meta: { cached: true } });
    expect(held.admission).toMatchObject({ balance: 8 });
    expect(await runDurableObjectAlarm(desk)).toBe(true);
    // Given back: it can no longer be closed, and the balance is whole again.
    expect(
      await desk.answer(id, {
        email,
        address: key.address,
        status: 'deliverable',
        subStatus: 'accepted_email',
        score: 90,
        resultJson: '{}',
      }),
    ).toBe(false);
    await settleDesk(env.ACCOUNT_DESK, caller.accountId, { release: true });
    expect(await balanceOf(caller.accountId)).toBe(9);
  });

  it('answers the ordinary way, charged once, when its early start fails (a domain fact not written)', async () => {
    const email = `early-fails-${crypto.randomUUID().slice(0, 8)}@accept.test`;
    const caller = await knownCallerWithVerdict(email);
    const domain = 'accept.test';
    // The isolate holds the domain's facts with a route whose TTL ran out: the early start asks
    // DNS again and writes the route to D1, which fails once, as a passing outage does.
    await env.DB.prepare('UPDATE domain_facts SET route_expires_at = ? WHERE domain = ?')
      .bind(Date.now() - 1_000, domain)
      .run();
    domainFactsOf(db(), configOf(env), undefined, { snapshot: true }).know(
      domain,
      await readDomainFacts(db(), domain),
    );
    const broken = failingD1(env.DB, /^\s*INSERT INTO domain_facts/, { times: 1 });
    let body: { data: { meta: { cached: boolean } }; creditsRemaining: number } | undefined;
    const calls = await objectCallsDuring(async () => {
      const response = await call('/api/v1/verify', {
        key: caller.apiKey,
        json: { email },
        bindings: { DB: broken },
        settled: true,
      });
      expect(response.status).toBe(200);
      body = await response.json();
    });
    // Nothing was asked of the desk before the admission, so nothing is given back after it.
    expect(calls).toEqual(['KEY_LIMITER.admit', 'ACCOUNT_DESK.answerKept']);
    expect(body?.data.meta.cached).toBe(true);
    expect(body?.creditsRemaining).toBe(8);
    await settleDesk(env.ACCOUNT_DESK, caller.accountId, { release: true });
    expect(await balanceOf(caller.accountId)).toBe(8);
    expect((await ledgerOf(caller.accountId)).filter((row) => row.reason === 'verify')).toHaveLength(2);
  });

  it('gives back what the desk held when the first give-back fails, without waiting for the alarm', async () => {
    const email = `give-back-${crypto.randomUUID().slice(0, 8)}@accept.test`;
    const caller = await knownCallerWithVerdict(email);
    const facts = domainFactsOf(db(), configOf(env), undefined, { snapshot: true });
    await facts.facts('accept.test');
    const early = await beginEarlyDeskCall({
      desk: deskOf(env.ACCOUNT_DESK, caller.accountId),
      facts,
      caller: { accountId: caller.accountId, apiKeyId: caller.keyId, mode: 'live' },
      email,
      evidence: false,
      requestId: `req_${crypto.randomUUID()}`,
      now: Date.now(),
      quotas: quotas(),
    });
    if (!early) throw new Error('the early lookup was not begun');
    expect(await early.answer).toMatchObject({
      result: { meta: { cached: true } },
      admission: { balance: 8 },
    });
    // The first refund is lost on its way, as a call whose connection dropped is.
    const lost = failingCalls('refund', 1);
    await giveBackEarlyDeskCall(early, () => lost.of(deskOf(env.ACCOUNT_DESK, caller.accountId)));
    expect(lost.failed).toBe(1);
    // Given back now, not by the alarm: the balance is whole once the desk settles.
    await settleDesk(env.ACCOUNT_DESK, caller.accountId, { release: true });
    expect(await balanceOf(caller.accountId)).toBe(9);
    expect((await ledgerOf(caller.accountId)).filter((row) => row.reason === 'verify')).toHaveLength(1);
  });
});

describe('a revoked key at the edge', () => {
  it('fails on its next request once the edge is told (POST /internal/keys/forget), though its record was kept', async () => {
    const caller = await newCaller({ mode: 'test' });
    const account = () => call('/api/v1/account', { key: caller.apiKey });
    expect((await account()).status).toBe(200);
    // Revoked in D1 by an operator's script: the record the edge keeps still lets it in.
    await env.DB.prepare('UPDATE api_keys SET revoked_at = ? WHERE id = ?')
      .bind(Date.now(), caller.keyId)
      .run();
    expect((await account()).status).toBe(200);
    const operator = await issueSecret('operatorToken');
    await db().insert(operatorTokens).values({
      id: crypto.randomUUID(),
      name: 'ops',
      tokenHash: operator.hash,
      prefix: operator.prefix,
      createdAt: Date.now(),
    });
    const forget = (authorization: string, body: unknown) =>
      exports.default.fetch('http://edge.test/internal/keys/forget', {
        method: 'POST',
        headers: { authorization, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const keyHashes = [await hashSecret(caller.apiKey)];
    // Only an operator may, with well-formed hashes.
    expect((await forget(`Bearer ${caller.apiKey}`, { keyHashes })).status).toBe(401);
    const malformed = await forget(`Bearer ${operator.secret}`, { keyHashes: ['not a hash'] });
    expect(malformed.status).toBe(400);
    expect(await malformed.json()).toMatchObject({ code: 'VALIDATION_ERROR' });
    expect((await account()).status).toBe(200);
    // The script then tells the edge: the next request fails.
    const told = await forget(`Bearer ${operator.secret}`, { keyHashes });
    expect(told.status).toBe(200);
    expect(await told.json()).toEqual({ forgotten: 1 });
    const refused = await account();
    expect(refused.status).toBe(401);
    expect(await refused.json()).toMatchObject({ code: 'INVALID_API_KEY' });
  });
});

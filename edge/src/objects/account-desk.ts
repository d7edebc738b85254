// AccountDesk: one Durable Object per account (named by the account id) that keeps the account's
// hot state for single calls in its own SQLite storage (docs/money.md, "Where the balance lives"):
// the verdict cache, a block of credits taken from D1's balance, and an outbox of the calls it
// answered. A call its cache answers is looked up, charged and recorded in one call here. A single call then needs no round trip to D1's primary: the desk charges it against
// the block, exactly, because an object runs one call at a time between its awaits and every
// decision here is made without one. What the desk did reaches D1 from the outbox in batches
// (storage/desk-books.ts), each applied once; readers of history or of the balance ask the desk
// to flush first (`settle`).
import { DurableObject } from 'cloudflare:workers';
import type { VerificationResult } from '@rcpt/shared/contract/api';
import { type MeterVars, meter, meterFrom } from '../meter.ts';
import {
  historyAnswer,
  type KeptVerdictTerms,
  keptAnswer,
  type VerdictCacheKey,
} from '../services/verify/kept-verdicts.ts';
import {
  applyDeskFlush,
  type DeskBudget,
  type DeskHistoryRow,
  type DeskStanding,
  releaseCredits,
  reserveCredits,
} from '../storage/desk-books.ts';
import { accountDb, shardsOf } from '../storage/shards.ts';
import type { StorageLimit } from '../storage/storage-budget.ts';
import { type HistoryAnswer, historyRowBytes } from '../storage/verifications.ts';

/** Credits a desk takes from the balance at a time: one D1 write pays for this many calls. */
export const DESK_CREDIT_BLOCK = 100;
/** A refill starts in the background when fewer credits than this are left in the block. */
const REFILL_BELOW = DESK_CREDIT_BLOCK / 4;
/** How soon after a call its history row is written to D1 (the outbox's alarm). */
export const DESK_FLUSH_DELAY_MS = 1_000;
/** Calls written in one D1 batch at most (a JSON parameter of about 2 KB a call). */
const FLUSH_ROWS = 200;
/**
 * A charge not answered within this long is given back: its request died (the Worker's own time
 * limits end it long before; docs/money.md, "Where the balance lives": every charged call ends
 * in exactly one of its result or its refund).
 */
export const DESK_OPEN_CHARGE_MS = 5 * 60_000;
/** A desk not called for this long gives its unspent credits back to the balance. */
export const DESK_IDLE_MS = 60_000;

/** A single call's answer as its history row keeps it. */
export type DeskAnswer = HistoryAnswer;

export interface DeskCall {
  accountId: string;
  id: string;
  apiKeyId: string | null;
  /** The verdict cache's mode: a test key's verdicts are never a live key's. */
  mode: 'live' | 'test';
  email: string;
  /** Credits charged: 1 for a live or publishable call, 0 for a test key's. */
  amount: number;
  now: number;
  /** The answer when known already (a cached verdict, a test key's); else the charge stays open. */
  answer?: DeskAnswer;
  /** The row's bytes against the storage budget (its answer's, or its bound). */
  bytes: number;
  /** Null: the row was booked against another budget (a publishable key's own). */
  budget: DeskBudget | null;
}

/** A call that a verdict the desk keeps may answer: the call as `open` takes it, less its answer. */
export interface DeskKeptCall extends Omit<DeskCall, 'answer' | 'bytes' | 'email'> {
  key: VerdictCacheKey;
  /** Verdicts reached before this are past any lifetime (VERDICT_LIFETIME_MS). */
  since: number;
  terms: KeptVerdictTerms;
  /**
   * When no verdict here holds, the call's charge is opened instead, as `open` opens it without
   * an answer: the call's email and its row's bytes bound.
   */
  orOpen?: { email: string; bytes: number };
  /**
   * The call's key is not admitted yet (it is being checked beside this call): a verdict that
   * holds is answered, but its charge is left open, for `answer` to close once the key is
   * admitted or `refund` to give back if it is not, as any open charge (DESK_OPEN_CHARGE_MS).
   */
  hold?: boolean;
}

/**
 * The kept verdict as answered, with the charge's admission and the history row's bytes; or none,
 * whether the desk held a verdict of the address at all (one that no longer holds: D1's history
 * has none newer), and the admission of the charge opened instead (`orOpen`).
 */
export type DeskKeptAnswer =
  | { result: VerificationResult; admission: DeskAdmission; bytes: number }
  | { result: null; held: boolean; admission?: DeskAdmission };

/** The desk's answer to a call: the credits left after it, or why it was refused. */
export type DeskAdmission =
  /** `synced`: the call asked D1 (for credits or the day's storage) before it was admitted. */
  | { balance: number; synced: boolean }
  | { refused: 'credits' | 'storage'; storageUsed: number; storageLimit: number; available: number };

interface DeskState {
  accountId: string;
  /** Credits the desk holds in D1 (`credits_reserved`), spent or not. */
  reserved: number;
  /** The balance less every desk's reservation when D1 last answered. */
  free: number;
  /** The day's storage as D1 last counted it, and the budget it was counted under (as JSON). */
  storage: { day: number; used: number; limit: number; budget: string } | null;
  lastCallAt: number;
}

const STATE_KEY = 'state';

export class AccountDesk extends DurableObject<Env> {
  #syncing: Promise<void> | null = null;
  #d1Queue: Promise<unknown> = Promise.resolve();

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    ctx.storage.sql.exec(`CREATE TABLE IF NOT EXISTS outbox (
      id TEXT PRIMARY KEY, seq INTEGER NOT NULL, open INTEGER NOT NULL, amount INTEGER NOT NULL,
      bytes INTEGER NOT NULL, day INTEGER NOT NULL, created_at INTEGER NOT NULL, row TEXT NOT NULL,
      batch TEXT)`);
    ctx.storage.sql.exec(`CREATE TABLE IF NOT EXISTS verdicts (
      mode TEXT NOT NULL, address TEXT NOT NULL, created_at INTEGER NOT NULL, result TEXT NOT NULL,
      PRIMARY KEY (mode, address))`);
  }

  /**
   * A call answered from the verdict the desk keeps for its address, when that verdict still
   * holds on `terms` (kept-verdicts.ts): charged and recorded with its history row as `open`
   * does, in this one call. `result: null`: no verdict here holds, and the charge was opened (with
   * `orOpen`) or nothing was charged.
   */
  async answerKept(call: DeskKeptCall): Promise<DeskKeptAnswer> {
    this.#meter();
    const row = this.ctx.storage.sql
      .exec<{ result: string }>(
        'SELECT result FROM verdicts WHERE mode = ? AND address = ? AND created_at >= ?',
        call.mode,
        call.key.address,
        call.since,
      )
      .toArray()[0];
    const result = row ? keptAnswer(row.result, call.terms) : null;
    if (!result) {
      const held = row !== undefined;
      if (!call.orOpen) return { result: null, held };
      return { result: null, held, admission: await this.#open({ ...call, ...call.orOpen }) };
    }
    const answer = historyAnswer(result, call.key);
    const bytes = historyRowBytes(call, answer, answer.email);
    const held = call.hold ? {} : { answer };
    return { result, bytes, admission: await this.#open({ ...call, email: answer.email, ...held, bytes }) };
  }

  /**
   * Forgets the verdicts kept for `addresses`: an outcome reported for one may change its answer
   * (docs/verdicts.md, "Learning from outcomes"), which the next call reads from D1.
   */
  forget(mode: 'live' | 'test', addresses: readonly string[]): void {
    this.#meter();
    for (const address of addresses)
      this.ctx.storage.sql.exec('DELETE FROM verdicts WHERE mode = ? AND address = ?', mode, address);
  }

  /**
   * Charges a call and opens its history row in the outbox, or records it answered at once when
   * its answer is known: both or neither, as one step of this object. Refused when the credits
   * or the day's storage budget do not cover it, after asking D1 once for more.
   */
  open(call: DeskCall): Promise<DeskAdmission> {
    this.#meter();
    return this.#open(call);
  }

  async #open(call: DeskCall): Promise<DeskAdmission> {
    const state = this.#state(call.accountId);
    state.lastCallAt = call.now;
    this.#save(state);
    let refusal = this.#refusal(call);
    const synced = refusal !== null;
    if (refusal) {
      await this.#sync(call.budget, refusal === 'credits' ? DESK_CREDIT_BLOCK : 0);
      refusal = this.#refusal(call);
    }
    if (refusal) {
      const storage = this.#state(call.accountId).storage;
      return {
        refused: refusal,
        storageUsed: (storage?.used ?? 0) + this.#pendingBytes(call.budget?.day ?? 0),
        storageLimit: storage?.limit ?? 0,
        available: this.#remaining(),
      };
    }
    const open = call.answer === undefined;
    this.ctx.storage.sql.exec(
      'INSERT INTO outbox (id, seq, open, amount, bytes, day, created_at, row) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
      call.id,
      this.#nextSeq(),
      open ? 1 : 0,
      call.amount,
      call.bytes,
      call.budget?.day ?? 0,
      call.now,
      JSON.stringify({ apiKeyId: call.apiKeyId, email: call.email, mode: call.mode }),
    );
    if (call.answer) this.#keep(call.id, call.mode, call.now, call.answer);
    await this.#schedule();
    if (this.#unspent() < REFILL_BELOW && call.amount > 0 && this.#state().free > 0) {
      // Taken before the block runs out, so the next calls find their credits here.
      this.#sync(call.budget, DESK_CREDIT_BLOCK).catch(() => undefined);
    }
    return { balance: this.#remaining(), synced };
  }

  /** Closes an open charge with its answer. False when it was not open (refunded, or answered). */
  answer(id: string, answer: DeskAnswer): boolean {
    this.#meter();
    const row = this.#row(id);
    if (row?.open !== 1) return false;
    this.ctx.storage.sql.exec('UPDATE outbox SET open = 0 WHERE id = ?', id);
    this.#keep(id, JSON.parse(row.row).mode, row.created_at, answer);
    return true;
  }

  /** Gives an open charge back, once: its row leaves the outbox unwritten. */
  refund(id: string): boolean {
    this.#meter();
    const row = this.#row(id);
    if (row?.open !== 1) return false;
    this.ctx.storage.sql.exec('DELETE FROM outbox WHERE id = ?', id);
    return true;
  }

  /**
   * The verdict a call answered `timeout_exceeded` went on to reach, kept for the next call. False
   * when its row was written to D1 already: the caller keeps it there.
   */
  keepLate(id: string, mode: 'live' | 'test', answer: DeskAnswer): boolean {
    this.#meter();
    const row = this.#row(id);
    if (answer.address !== null)
      this.#keepVerdict(mode, answer.address, row?.created_at ?? Date.now(), answer);
    if (!row || row.open === 1 || row.batch !== null) return false;
    const stored = JSON.parse(row.row) as { answer?: DeskAnswer };
    if (stored.answer?.subStatus !== 'timeout_exceeded') return false;
    this.ctx.storage.sql.exec(
      'UPDATE outbox SET row = ? WHERE id = ?',
      JSON.stringify({ ...stored, answer }),
      id,
    );
    return true;
  }

  /**
   * Writes every answered call to D1 now; with `release`, gives the unspent credits back too, so
   * that D1's balance is the account's whole balance and its free credits all of it. Readers of
   * history or of the balance call this first.
   */
  async settle(options: { release?: boolean } = {}): Promise<void> {
    this.#meter();
    if (!this.ctx.storage.kv.get<DeskState>(STATE_KEY)) return;
    while (await this.#flushOnce()) {
      // until the outbox holds only open charges
    }
    if (options.release) await this.#release();
  }

  override async alarm(): Promise<void> {
    this.#meter();
    const now = Date.now();
    // A charge whose request died is given back (docs/money.md, "Where the balance lives").
    this.ctx.storage.sql.exec(
      'DELETE FROM outbox WHERE open = 1 AND created_at < ?',
      now - DESK_OPEN_CHARGE_MS,
    );
    this.ctx.storage.sql.exec(
      'DELETE FROM verdicts WHERE created_at < ?',
      now - 7 * 86_400_000, // longer than any verdict's lifetime (docs/verdicts.md)
    );
    await this.settle({ release: now - (this.#state().lastCallAt ?? 0) >= DESK_IDLE_MS });
    await this.#schedule(true);
  }

  #meter(): void {
    meterFrom(this.env as MeterVars);
    meter({ doRequests: 1 });
  }

  #state(accountId?: string): DeskState {
    const stored = this.ctx.storage.kv.get<DeskState>(STATE_KEY);
    if (stored) return stored;
    if (!accountId) throw new Error('the desk has no account yet');
    return { accountId, reserved: 0, free: 0, storage: null, lastCallAt: 0 };
  }

  #save(state: DeskState): void {
    this.ctx.storage.kv.put(STATE_KEY, state);
  }

  #row(id: string) {
    return this.ctx.storage.sql
      .exec<{ open: number; row: string; created_at: number; batch: string | null }>(
        'SELECT open, row, created_at, batch FROM outbox WHERE id = ?',
        id,
      )
      .toArray()[0];
  }

  #nextSeq(): number {
    const row = this.ctx.storage.sql.exec<{ seq: number | null }>('SELECT MAX(seq) AS seq FROM outbox').one();
    return (row.seq ?? 0) + 1;
  }

  /** Credits charged and not yet written to D1 (open charges count: they may still be answered). */
  #spent(): number {
    return (
      this.ctx.storage.sql.exec<{ spent: number | null }>('SELECT SUM(amount) AS spent FROM outbox').one()
        .spent ?? 0
    );
  }

  #unspent(): number {
    return this.#state().reserved - this.#spent();
  }

  /** The account's credits as a caller sees them: D1's free credits and what the desk holds unspent. */
  #remaining(): number {
    return this.#state().free + this.#unspent();
  }

  #pendingBytes(day: number): number {
    return (
      this.ctx.storage.sql
        .exec<{ bytes: number | null }>('SELECT SUM(bytes) AS bytes FROM outbox WHERE day = ?', day)
        .one().bytes ?? 0
    );
  }

  #refusal(call: DeskCall): 'credits' | 'storage' | null {
    if (call.amount > 0 && this.#unspent() < call.amount) return 'credits';
    const { budget } = call;
    if (budget?.limit) {
      const storage = this.#state(call.accountId).storage;
      // Another day, or a budget the deployment changed since: D1 counts again.
      if (!storage || storage.day !== budget.day || storage.budget !== JSON.stringify(budget.limit))
        return 'storage';
      if (storage.used + this.#pendingBytes(budget.day) + call.bytes > storage.limit) return 'storage';
    }
    return null;
  }

  /** The answer stored in the outbox row, and the verdict kept for the cache. */
  #keep(id: string, mode: 'live' | 'test', createdAt: number, answer: DeskAnswer): void {
    const row = this.#row(id);
    if (row) {
      const stored = JSON.parse(row.row) as Record<string, unknown>;
      this.ctx.storage.sql.exec(
        'UPDATE outbox SET row = ? WHERE id = ?',
        JSON.stringify({ ...stored, answer }),
        id,
      );
    }
    if (answer.address !== null) this.#keepVerdict(mode, answer.address, createdAt, answer);
  }

  #keepVerdict(mode: 'live' | 'test', address: string, createdAt: number, answer: DeskAnswer): void {
    this.ctx.storage.sql.exec(
      `INSERT INTO verdicts (mode, address, created_at, result) VALUES (?, ?, ?, ?)
       ON CONFLICT (mode, address) DO UPDATE SET created_at = excluded.created_at, result = excluded.result
       WHERE excluded.created_at >= verdicts.created_at`,
      mode,
      address,
      createdAt,
      answer.resultJson,
    );
  }

  /** Runs D1 operations one after another: the reservation the desk knows is D1's. */
  #serially<T>(work: () => Promise<T>): Promise<T> {
    const run = this.#d1Queue.then(work, work);
    this.#d1Queue = run.catch(() => undefined);
    return run;
  }

  /** The database of the desk's account (storage/shards.ts): read once an isolate. */
  #db() {
    return accountDb(shardsOf(this.env), this.#state().accountId);
  }

  /** Asks D1 for `block` more credits and the day's storage, joining a request already under way. */
  #sync(budget: DeskBudget | null, block: number): Promise<void> {
    this.#syncing ??= this.#serially(async () => {
      const state = this.#state();
      const day = budget?.day ?? state.storage?.day ?? 0;
      const limit = budget?.limit ?? null;
      const standing = await reserveCredits(await this.#db(), state.accountId, block, { day, limit });
      this.#take(standing, day, limit);
    }).finally(() => {
      this.#syncing = null;
    });
    return this.#syncing;
  }

  /** D1's answer taken in: the reservation and free credits, and the day's storage under `budget`. */
  #take(standing: DeskStanding, day: number, budget: StorageLimit | null): void {
    const state = this.#state();
    state.reserved = standing.reserved;
    state.free = standing.free;
    if (budget)
      state.storage = {
        day,
        used: standing.storageUsed,
        limit: standing.storageLimit,
        budget: JSON.stringify(budget),
      };
    else if (state.storage?.day === day) state.storage = { ...state.storage, used: standing.storageUsed };
    this.#save(state);
  }

  /** Writes the oldest answered calls to D1 as one batch, once. False when there was none. */
  #flushOnce(): Promise<boolean> {
    return this.#serially(async () => {
      const state = this.#state();
      let batch = this.ctx.storage.sql
        .exec<{ batch: string }>('SELECT batch FROM outbox WHERE batch IS NOT NULL LIMIT 1')
        .toArray()[0]?.batch;
      if (!batch) {
        const first = this.ctx.storage.sql
          .exec<{ seq: number }>('SELECT MIN(seq) AS seq FROM outbox WHERE open = 0')
          .one().seq;
        if (first === null) return false;
        // Named once, before it is sent: a retry after a lost answer sends the same batch.
        batch = `${state.accountId}:${crypto.randomUUID()}`;
        this.ctx.storage.sql.exec(
          'UPDATE outbox SET batch = ? WHERE id IN (SELECT id FROM outbox WHERE open = 0 ORDER BY seq LIMIT ?)',
          batch,
          FLUSH_ROWS,
        );
      }
      const rows = this.ctx.storage.sql
        .exec<{ id: string; amount: number; bytes: number; day: number; created_at: number; row: string }>(
          'SELECT id, amount, bytes, day, created_at, row FROM outbox WHERE batch = ? ORDER BY seq',
          batch,
        )
        .toArray()
        .map((row): DeskHistoryRow => {
          const stored = JSON.parse(row.row) as { apiKeyId: string | null; answer: DeskAnswer };
          return {
            id: row.id,
            apiKeyId: stored.apiKeyId,
            createdAt: row.created_at,
            ...stored.answer,
            amount: row.amount,
            bytes: row.bytes,
            day: row.day,
          };
        });
      const day = state.storage?.day ?? 0;
      const { standing } = await applyDeskFlush(await this.#db(), {
        batchId: batch,
        accountId: state.accountId,
        rows,
        now: Date.now(),
        budget: { day, limit: null },
      });
      this.ctx.storage.sql.exec('DELETE FROM outbox WHERE batch = ?', batch);
      this.#take(standing, day, null);
      return true;
    });
  }

  /** Gives the credits not spent back to D1's free credits. */
  #release(): Promise<void> {
    return this.#serially(async () => {
      const state = this.#state();
      const unspent = this.#unspent();
      if (unspent <= 0) return;
      const day = state.storage?.day ?? 0;
      const standing = await releaseCredits(await this.#db(), state.accountId, unspent, { day, limit: null });
      this.#take(standing, day, null);
    });
  }

  /** The outbox's alarm: soon while calls wait to be written, later while credits are held. */
  async #schedule(fromAlarm = false): Promise<void> {
    const waiting = this.ctx.storage.sql.exec<{ n: number }>('SELECT COUNT(*) AS n FROM outbox').one().n;
    const held = this.#state().reserved > 0;
    if (waiting === 0 && !held) return;
    const current = fromAlarm ? null : await this.ctx.storage.getAlarm();
    if (current !== null) return;
    await this.ctx.storage.setAlarm(Date.now() + (waiting > 0 ? DESK_FLUSH_DELAY_MS : DESK_IDLE_MS));
  }
}

// A single verification for an API caller: charge (live keys), verify — or answer the
// account's live verdict again (docs/verdicts.md, "Cached answers") — and record in history, all
// at the account's desk (docs/money.md, "Where the balance lives"). Every charged request ends in
// exactly one of its result or its refund: the desk opens the charge with its history row, the
// answer closes it, and any failure in between gives it back — here, or by the desk's alarm if
// the refund fails too.
import type { VerificationResult } from '@rcpt/shared/contract/api';
import { ApiError } from '@rcpt/shared/errors';
import type { MailboxBounce } from '@rcpt/shared/verify/learnt';
import { checkSyntax } from '@rcpt/shared/verify/syntax';
import { type VerifyDeps, verifyAddress } from '@rcpt/shared/verify/verify-address';
import { errorFields, log } from '../../logger.ts';
import type { Db } from '../../storage/db.ts';
import {
  type HistoryAnswer,
  type HistoryBudget,
  type HistoryRefusal,
  historyRowBytes,
  keepLateVerdict,
} from '../../storage/verifications.ts';
import type { Caller } from '../keys/api-keys.ts';
import type { AccountDeskStub } from '../money/account-desk.ts';
import { insufficientCredits, type Quotas, quotaExceeded, utcDayStart } from '../money/quotas.ts';
import {
  type DeskInput,
  deskCall,
  deskKeptCall,
  deskRow,
  type EarlyDeskCall,
  SINGLE_VERIFICATION_CREDITS,
  takeEarlyDeskCall,
} from './desk-call.ts';
import type { DomainFactsStore } from './domain-facts.ts';
import {
  historyAnswer,
  type KeptVerdictTerms,
  keptAnswer,
  keptUnder,
  type VerdictCacheKey,
  verdictCacheKey,
} from './kept-verdicts.ts';
import { accountBounce, bounceAnswer, withLearntDomain } from './learnt-verdicts.ts';
import { sandboxVerify } from './sandbox.ts';
import { type KeptRead, keptVerdictTerms, readKeptVerdict } from './verdict-cache.ts';

export interface SingleVerification {
  result: VerificationResult;
  creditsRemaining: number;
  /** True when the account's desk charged it from its block, with no write to D1's balance. */
  balanceUnmoved?: boolean;
}

export async function verifyForCaller(input: {
  db: Db;
  deps: VerifyDeps;
  /** The shared domain facts that `deps` reads and feeds. */
  facts: DomainFactsStore;
  caller: Caller;
  email: string;
  /** Verify now even when the account has a live verdict for the address (which this one replaces). */
  fresh?: boolean;
  /** The answer carries its evidence (docs/verdicts.md, "Evidence"); `deps` must ask the prober for it. */
  evidence?: boolean;
  requestId: string;
  /** The account's quotas: every history row counts against the storage budget of the day. */
  quotas: Quotas;
  /**
   * A publishable key's call (docs/publishable-keys.md, "What the page sees"): the account's
   * verdict cache is neither read nor fed, its row was booked against the key's own storage
   * budget, and a 402 does not tell the page's visitor the account's balance.
   */
  publishable?: boolean;
  now: number;
  /**
   * The caller's budget (ms on Date.now's clock): by then the answer is what is known, refunded
   * when the table says so, and the verification goes on in `background` for the next call.
   */
  answerBy?: number;
  /** Keeps work going after the answer (the Worker's `waitUntil`). */
  background?: (work: Promise<unknown>) => void;
  /**
   * The account's desk (docs/money.md, "Where the balance lives"): the call is charged, recorded
   * and answered from the cache there, with no round trip to D1's primary.
   */
  desk: AccountDeskStub;
  /** The desk's lookup for this call, begun beside its key's admission (early-desk.ts). */
  early?: EarlyDeskCall;
}): Promise<SingleVerification> {
  const { db, caller, requestId, now } = input;
  const evidence = input.evidence ?? false;
  const publishable = input.publishable ?? false;
  // Parsed once: the cache key, the sandbox and the verification all take the parsed address.
  const address = checkSyntax(input.email);
  // Without a cache key nothing is looked up, and the history row keeps no address to look up.
  const key = publishable ? null : verdictCacheKey(address);
  // The account's own hard bounce of the mailbox answers for it (docs/verdicts.md, "Learning from
  // outcomes"); never through a publishable key, whose visitor must not learn what the account sent.
  const withBounce = key !== null && !publishable && caller.mode === 'live';
  const budget: HistoryBudget = { day: utcDayStart(now), limit: input.quotas.storage };
  const found = key && !input.fresh ? await fromCache(input, key, { withBounce, evidence, budget }) : null;
  const bounce =
    found?.bounce ??
    (withBounce && key && !found ? await accountBounce(db, caller.accountId, key.address) : null);
  const cached = found?.cached ?? null;
  if (caller.mode === 'test') {
    if (cached && found?.opened && !found.open) {
      // The desk answered it and recorded it already.
      if ('refused' in found.opened) throw storageRefused(found.opened, now);
      return { result: cached, creditsRemaining: found.opened.balance };
    }
    const result = cached ?? sandboxVerify(address, now);
    const answer = historyAnswer(result, key);
    const bytes = historyRowBytes(deskRow(input), answer, answer.email);
    const admitted = await input.desk.open({
      ...deskCall(input, 0),
      email: answer.email,
      bytes,
      answer,
      budget,
    });
    if ('refused' in admitted) throw storageRefused(admittedRefusal(admitted, bytes), now);
    return { result, creditsRemaining: admitted.balance };
  }
  // A cached answer is charged as any answer is, and recorded in the same transaction.
  const opening = {
    id: requestId,
    accountId: caller.accountId,
    apiKeyId: caller.apiKeyId,
    email: input.email,
    amount: SINGLE_VERIFICATION_CREDITS,
    now,
    evidence,
    ...(cached ? { answer: historyAnswer(cached, key) } : {}),
  };
  // The desk charged the call already: with the cached answer it gave, or opened for the answer to come.
  const opened = found?.opened ?? (await openAtDesk(input.desk, input, opening, publishable ? null : budget));
  if ('refused' in opened) {
    if (opened.refused === 'storage') throw storageRefused(opened, now);
    if (publishable) throw new ApiError('INSUFFICIENT_CREDITS');
    // What the desk has not written yet is written first: D1 then tells the whole balance.
    await input.desk.settle();
    throw await insufficientCredits(db, caller.accountId, SINGLE_VERIFICATION_CREDITS);
  }
  const creditsRemaining = opened.balance;
  const unmoved = 'synced' in opened && opened.synced === false ? { balanceUnmoved: true } : {};
  const books = deskBooks(input.desk, caller.mode, db);
  if (cached && found?.held) {
    // The desk answered before the key was admitted and held the charge open: closed with the
    // answer off the call's path. A close that never arrives is given back as any open charge is
    // (objects/account-desk.ts, DESK_OPEN_CHARGE_MS): never charged without its answer.
    const closing = books.answer(requestId, historyAnswer(cached, key));
    if (input.background) input.background(closing);
    else await closing;
    return { result: cached, creditsRemaining, ...unmoved };
  }
  if (cached && !found?.open) return { result: cached, creditsRemaining, ...unmoved };
  try {
    let result: VerificationResult;
    // A verdict D1 held, for the charge the desk opened when it held none: closed with it.
    if (cached) result = cached;
    else {
      let reached: VerificationResult;
      if (bounce) reached = await bounceAnswer(input.deps, address, bounce, Date.now);
      else {
        const verification = await verifyAddress(
          input.deps,
          address,
          input.answerBy === undefined ? {} : { answerBy: input.answerBy },
        );
        reached = verification.result;
        if (verification.completion)
          input.background?.(keepLate(books, requestId, key, verification.completion));
      }
      result = await withLearntDomain(input.facts, reached, now);
    }
    // SPEC: a single verification costs 1 credit whatever it answers, `timeout_exceeded` included.
    if (await books.answer(requestId, historyAnswer(result, key)))
      return { result, creditsRemaining, ...unmoved };
    throw new Error(`verification ${requestId} was closed before its answer was recorded`);
  } catch (cause) {
    const refunded = await books.refund(requestId).catch(() => false);
    log.error('single verification failed after the charge', {
      requestId,
      refunded,
      ...errorFields(cause),
    });
    // If the refund failed as well, the desk's alarm gives the open charge back (DESK_OPEN_CHARGE_MS).
    throw new ApiError('INTERNAL_ERROR', { details: { creditRefunded: true } });
  }
}

/**
 * The verdict of a verification that went on after its call was answered `timeout_exceeded`,
 * kept in the call's history row for the next call (docs/verdicts.md, "A time budget per call").
 */
async function keepLate(
  books: CallBooks,
  requestId: string,
  key: VerdictCacheKey | null,
  completion: Promise<{ result: VerificationResult }>,
): Promise<void> {
  try {
    const { result } = await completion;
    if (keptUnder(key, result)) await books.keepLate(requestId, historyAnswer(result, key));
  } catch (cause) {
    log.error('a verification that went on after its answer failed', { requestId, ...errorFields(cause) });
  }
}

function storageRefused(refusal: HistoryRefusal, now: number): ApiError {
  return quotaExceeded({
    quota: 'storage_bytes_per_day',
    limit: refusal.storageLimit,
    used: refusal.storageUsed,
    requested: refusal.bytes,
    now,
  });
}

/** Where an open charge is closed: with its answer, by its refund, or given a late verdict. */
interface CallBooks {
  answer(id: string, answer: HistoryAnswer): Promise<boolean>;
  refund(id: string): Promise<boolean>;
  keepLate(id: string, answer: HistoryAnswer): Promise<boolean>;
}

function deskBooks(desk: AccountDeskStub, mode: Caller['mode'], db: Db): CallBooks {
  return {
    answer: (id, answer) => desk.answer(id, answer),
    refund: (id) => desk.refund(id),
    // A row the desk has written to D1 already keeps its late verdict there.
    keepLate: async (id, answer) =>
      (await desk.keepLate(id, mode, answer)) || keepLateVerdict(db, id, answer),
  };
}

type VerifyInput = Parameters<typeof verifyForCaller>[0];

/** The account's kept verdict of `key` as this call answers it, and what answering it took. */
interface CacheFound {
  cached: VerificationResult | null;
  /** The account's bounce of the address, when asked and read (docs/verdicts.md, "Learning from outcomes"). */
  bounce: MailboxBounce | null;
  /**
   * Set when the desk charged the call in the same call: with the cached answer it gave, or, for
   * a live key's call it had no verdict for, opened for the answer to come (`open`).
   */
  opened?: { balance: number; synced: boolean } | HistoryRefusal;
  open?: boolean;
  /** The cached answer's charge was held open until the key was admitted (early-desk.ts). */
  held?: boolean;
}

/**
 * The account's kept verdict of `key`: its desk's, looked up, charged and recorded in one call
 * when it still holds (docs/money.md, "Where the balance lives"), else D1's. The domain's facts
 * decide whether a verdict holds, so they are at hand before the desk is asked: from the
 * isolate's snapshot, or read from D1 in the same round trip as D1's verdict.
 */
async function fromCache(
  input: VerifyInput,
  key: VerdictCacheKey,
  call: { withBounce: boolean; evidence: boolean; budget: HistoryBudget },
): Promise<CacheFound> {
  const { db, caller, now, desk } = input;
  // Test keys' answers come from no DNS, so no domain fact bears on them.
  const facts = caller.mode === 'test' ? null : input.facts;
  const read = () =>
    readKeptVerdict({
      db,
      facts,
      accountId: caller.accountId,
      mode: caller.mode,
      key,
      now,
      withBounce: call.withBounce,
    });
  let stored = facts && !facts.known(key.domain) ? await read() : null;
  // Read once, and only when a verdict is to be answered against them.
  let termsRead: Promise<KeptVerdictTerms> | undefined;
  const terms = () =>
    (termsRead ??= keptVerdictTerms(facts, key, {
      now,
      evidence: call.evidence,
      sandbox: caller.mode === 'test',
    }));
  // The lookup begun beside the key's admission, if it was this call's; else asked now.
  const early = takeEarlyDeskCall(input.early, { caller, email: input.email, evidence: call.evidence });
  const asked = early?.call ?? deskKeptCall(input, key, { ...call, terms: await terms() });
  const { orOpen } = asked;
  const kept = await (early?.answer ?? desk.answerKept(asked));
  if (kept.result) {
    const { admission } = kept;
    const opened = 'refused' in admission ? admittedRefusal(admission, kept.bytes) : admission;
    return { cached: kept.result, bounce: null, opened, ...(asked.hold ? { held: true } : {}) };
  }
  const { admission } = kept;
  const charged =
    admission && orOpen
      ? {
          opened: 'refused' in admission ? admittedRefusal(admission, orOpen.bytes) : admission,
          open: true,
        }
      : {};
  // The desk keeps an address's latest verdict, so D1's history holds none newer; and a verdict
  // the desk holds has no bounce after it: a reported outcome has it forgotten (record.ts). A
  // refused call reads nothing more.
  if (kept.held || (admission && 'refused' in admission)) return { cached: null, bounce: null, ...charged };
  stored ??= await read();
  return { ...(await keptFrom(stored, terms)), ...charged };
}

/** D1's verdict as this call answers it: none while the account's bounce of the address stands. */
async function keptFrom(stored: KeptRead, terms: () => Promise<KeptVerdictTerms>): Promise<CacheFound> {
  const { resultJson, bounce } = stored;
  return { cached: resultJson === null || bounce ? null : keptAnswer(resultJson, await terms()), bounce };
}

/** The charge at the account's desk, or why it was refused, with the bytes its row would take. */
async function openAtDesk(
  desk: AccountDeskStub,
  input: DeskInput,
  opening: { email: string; amount: number; evidence: boolean; answer?: HistoryAnswer },
  budget: HistoryBudget | null,
): Promise<{ balance: number; synced: boolean } | HistoryRefusal> {
  const bytes = historyRowBytes(deskRow(input), opening.answer, opening.email, opening.evidence);
  const admitted = await desk.open({
    ...deskCall(input, opening.amount),
    email: opening.email,
    bytes,
    ...(opening.answer ? { answer: opening.answer } : {}),
    budget,
  });
  return 'refused' in admitted ? admittedRefusal(admitted, bytes) : admitted;
}

function admittedRefusal(
  admitted: { refused: 'credits' | 'storage'; storageUsed: number; storageLimit: number },
  bytes: number,
): HistoryRefusal {
  return {
    refused: admitted.refused,
    storageUsed: admitted.storageUsed,
    storageLimit: admitted.storageLimit,
    bytes,
  };
}

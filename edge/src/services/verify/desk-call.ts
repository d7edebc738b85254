// How a single call is put to its account's desk (objects/account-desk.ts): the call's charge
// and row as the desk takes them, and the lookup of its kept verdict, which a call of a key this
// isolate knows begins beside the key's admission instead of after it (middleware/early-desk.ts).

import { checkSyntax } from '@rcpt/shared/verify/syntax';
import { errorFields, log } from '../../logger.ts';
import type { DeskKeptAnswer, DeskKeptCall } from '../../objects/account-desk.ts';
import { type HistoryBudget, historyRowBytes } from '../../storage/verifications.ts';
import type { Caller } from '../keys/api-keys.ts';
import type { AccountDeskStub } from '../money/account-desk.ts';
import { type Quotas, utcDayStart } from '../money/quotas.ts';
import type { DomainFactsStore } from './domain-facts.ts';
import { type KeptVerdictTerms, type VerdictCacheKey, verdictCacheKey } from './kept-verdicts.ts';
import { keptSince, keptVerdictTerms } from './verdict-cache.ts';

/** docs/money.md: one credit whatever the answer, taken before any work is done. */
export const SINGLE_VERIFICATION_CREDITS = 1;

/** Who makes the call, and which call it is. */
export interface DeskInput {
  caller: Pick<Caller, 'accountId' | 'apiKeyId' | 'mode'>;
  requestId: string;
  now: number;
}

export function deskRow(input: DeskInput) {
  return { id: input.requestId, accountId: input.caller.accountId, apiKeyId: input.caller.apiKeyId };
}

/** The call as the desk takes it, less its email and bytes (known with its answer). */
export function deskCall(input: DeskInput, amount: number) {
  const { caller } = input;
  return {
    accountId: caller.accountId,
    id: input.requestId,
    apiKeyId: caller.apiKeyId,
    mode: caller.mode,
    amount,
    now: input.now,
  };
}

/**
 * What the desk is asked for a call's kept verdict of `key`: answered and charged if one holds;
 * if none does, a live call's charge opened for its answer to come, and a test key's nothing
 * (its answer is recorded answered, once known).
 */
export function deskKeptCall(
  input: DeskInput & { email: string },
  key: VerdictCacheKey,
  call: { evidence: boolean; budget: HistoryBudget; terms: KeptVerdictTerms },
): DeskKeptCall {
  const live = input.caller.mode === 'live';
  return {
    ...deskCall(input, live ? SINGLE_VERIFICATION_CREDITS : 0),
    key,
    since: keptSince(input.now),
    terms: call.terms,
    budget: call.budget,
    ...(live
      ? {
          orOpen: {
            email: input.email,
            bytes: historyRowBytes(deskRow(input), undefined, input.email, call.evidence),
          },
        }
      : {}),
  };
}

/**
 * A live call's desk lookup asked before its key was admitted: with `hold`, so that what it
 * charged stays open until the call takes it over (`takeEarlyDeskCall`) or it is given back
 * (`giveBackEarlyDeskCall`).
 */
export interface EarlyDeskCall {
  call: DeskKeptCall;
  email: string;
  evidence: boolean;
  answer: Promise<DeskKeptAnswer>;
  taken: boolean;
}

/**
 * Begins the desk's lookup for a live call of a key known to this isolate, before the key is
 * admitted; null when the call is not one the desk can answer from its verdicts alone: an
 * address without a cache key, or a domain whose facts this isolate does not hold (the call
 * reads D1 for them first).
 */
export async function beginEarlyDeskCall(input: {
  desk: AccountDeskStub;
  facts: DomainFactsStore;
  caller: DeskInput['caller'];
  email: string;
  evidence: boolean;
  requestId: string;
  now: number;
  quotas: Quotas;
}): Promise<EarlyDeskCall | null> {
  if (input.caller.mode !== 'live') return null;
  const key = verdictCacheKey(checkSyntax(input.email));
  if (!key || !input.facts.known(key.domain)) return null;
  const { now, evidence } = input;
  const terms = await keptVerdictTerms(input.facts, key, { now, evidence, sandbox: false });
  const call = {
    ...deskKeptCall(input, key, {
      evidence,
      budget: { day: utcDayStart(now), limit: input.quotas.storage },
      terms,
    }),
    hold: true,
  };
  const answer = input.desk.answerKept(call);
  // Whoever takes the answer, or gives it back, sees its failure; none goes unhandled meanwhile.
  answer.catch(() => undefined);
  return { call, email: input.email, evidence, answer, taken: false };
}

/**
 * The early lookup, taken over by the call it was begun for: the same account, key, address and
 * evidence. Null when there is none, or it was another call's (it is given back then).
 */
export function takeEarlyDeskCall(
  early: EarlyDeskCall | undefined,
  call: { caller: DeskInput['caller']; email: string; evidence: boolean },
): EarlyDeskCall | null {
  if (!early || early.taken) return null;
  const same =
    early.call.accountId === call.caller.accountId &&
    early.call.apiKeyId === call.caller.apiKeyId &&
    early.call.mode === call.caller.mode &&
    early.email === call.email &&
    early.evidence === call.evidence;
  if (!same) return null;
  early.taken = true;
  return early;
}

/**
 * Attempts at giving back what an early lookup held before the desk's alarm is left to (its
 * DESK_OPEN_CHARGE_MS). A refund names the call's id and gives back an open charge only, so a
 * second attempt after a first whose answer was lost gives nothing back twice.
 */
const GIVE_BACK_ATTEMPTS = 2;

/**
 * Gives back what an early lookup charged, unless its call took it over. Each attempt asks a new
 * stub of the desk, as Cloudflare's Durable Objects error handling advises after a failed call,
 * and an object that says it is overloaded is not asked again.
 */
export async function giveBackEarlyDeskCall(
  early: EarlyDeskCall,
  desk: () => AccountDeskStub,
): Promise<void> {
  if (early.taken) return;
  early.taken = true;
  const answer = await early.answer.catch(() => null);
  // Refused, or failed before charging: nothing to give back. Else the charge is still open.
  if (!answer?.admission || 'refused' in answer.admission) return;
  for (let attempt = 1; ; attempt++) {
    try {
      await desk().refund(early.call.id);
      return;
    } catch (cause) {
      if (attempt < GIVE_BACK_ATTEMPTS && !(cause as { overloaded?: boolean }).overloaded) continue;
      log.warn('an early desk call was not given back; the desk gives it back when it expires', {
        requestId: early.call.id,
        attempts: attempt,
        error: errorFields(cause).error,
      });
      return;
    }
  }
}

// Recording outcomes (docs/verdicts.md, "Outcomes"): each address normalised as a verification's,
// each bounce's diagnostic read with the reply table, each outcome matched to its verdict, and
// the new ones stored in one transaction within the account's storage budget. A replayed event
// finds its row and is answered from it, counted once. Outcomes are free.

import {
  MAX_DIAGNOSTIC_LENGTH,
  type OutcomeInput,
  type OutcomeKind,
  type OutcomesResponse,
  type RecordedOutcome,
  type SubStatus,
  type VerificationStatus,
} from '@rcpt/shared/contract/api';
import { ApiError } from '@rcpt/shared/errors';
import { readBounceDiagnostic } from '@rcpt/shared/verify/bounce-diagnostic';
import { checkSyntax } from '@rcpt/shared/verify/syntax';
import type { DataMode } from '../../storage/api-keys.ts';
import type { Db } from '../../storage/db.ts';
import {
  insertOutcomes,
  type OutcomeRow,
  recordedOutcomes,
  verdictCandidates,
} from '../../storage/outcomes.ts';
import { rowBytes } from '../../storage/storage-budget.ts';
import { type AccountDesks, forgetDeskVerdicts } from '../money/account-desk.ts';
import { refundBouncedDeliverables } from '../money/guarantee.ts';
import { type Quotas, quotaExceeded, utcDayStart } from '../money/quotas.ts';
import { learnFromOutcomes } from './learning.ts';
import { latestVerdicts, OUTCOME_MATCH_WINDOW_MS } from './matching.ts';

/** One outcome as reported, before it is read. */
export interface OutcomeEvent {
  /** What makes it one event: a sending service's event id, or `<outcome>@<time>` (see `apiEventKey`). */
  eventKey: string;
  email: string;
  outcome: OutcomeKind;
  at: number;
  diagnostic: string | null;
}

export interface OutcomeReporter {
  accountId: string;
  /** The API key that reported it; null for the dashboard and the sending services' endpoints. */
  apiKeyId: string | null;
  mode: DataMode;
  source: OutcomeRow['source'];
}

/**
 * The event key of an outcome given through the API or the dashboard: the same address, outcome
 * and time are one event, however often they are sent.
 */
export function apiEventKey(outcome: OutcomeKind, at: number): string {
  return `${outcome}@${new Date(at).toISOString()}`;
}

/** Outcomes as the API and the dashboard's CSV give them (validated `OutcomeInput`s), as events. */
export function reportedOutcomes(outcomes: readonly OutcomeInput[]): OutcomeEvent[] {
  return outcomes.map((outcome) => {
    const at = Date.parse(outcome.at);
    return {
      eventKey: apiEventKey(outcome.outcome, at),
      email: outcome.email,
      outcome: outcome.outcome,
      at,
      diagnostic: outcome.diagnostic ?? null,
    };
  });
}

/** An outcome whose address does not parse is a 400 naming it: nothing of the request is stored. */
function normalised(events: readonly OutcomeEvent[]): OutcomeEvent[] {
  return events.map((event, index) => {
    const syntax = checkSyntax(event.email);
    if (!syntax.valid) {
      throw new ApiError('VALIDATION_ERROR', {
        message: `outcomes.${index}.email is not an address: ${syntax.reason}`,
        details: { issues: [{ path: `outcomes.${index}.email`, message: syntax.reason }] },
      });
    }
    if (!Number.isFinite(event.at)) {
      throw new ApiError('VALIDATION_ERROR', { message: `outcomes.${index}.at is not a time.` });
    }
    const diagnostic = event.diagnostic?.trim().slice(0, MAX_DIAGNOSTIC_LENGTH) || null;
    return { ...event, email: syntax.email, diagnostic };
  });
}

/** The answer to the reporter, and the guarantee's credits the new outcomes gave back (docs/money.md). */
export interface RecordedOutcomes {
  answer: OutcomesResponse;
  guaranteeRefunds: number;
}

export async function recordOutcomes(
  deps: {
    db: Db;
    quotas: Quotas;
    now: number;
    /** The accounts' desks: each forgets its verdicts of the addresses reported (account-desk.ts). */
    desks?: AccountDesks;
  },
  reporter: OutcomeReporter,
  reported: readonly OutcomeEvent[],
): Promise<RecordedOutcomes> {
  const { db, now } = deps;
  const events = normalised(reported);
  const keyOf = (event: { eventKey: string; email: string }) => `${event.eventKey}\n${event.email}`;
  const before = new Map(
    (await recordedOutcomes(db, reporter.accountId, events)).map((row) => [keyOf(row), row]),
  );
  // New events, each once (a request may repeat one).
  const fresh = new Map<string, { event: OutcomeEvent; index: number }>();
  events.forEach((event, index) => {
    if (!before.has(keyOf(event)) && !fresh.has(keyOf(event))) fresh.set(keyOf(event), { event, index });
  });
  const freshEvents = [...fresh.values()];
  const verdicts = latestVerdicts(
    await verdictCandidates(db, {
      accountId: reporter.accountId,
      mode: reporter.mode,
      windowMs: OUTCOME_MATCH_WINDOW_MS,
      outcomes: freshEvents.map(({ event }) => event),
    }),
  );
  const rows = freshEvents.map(({ event }, position) => {
    const verdict = verdicts.get(position) ?? null;
    const bounce = event.outcome.endsWith('_bounce') ? readBounceDiagnostic(event.diagnostic) : null;
    const row: OutcomeRow = {
      id: crypto.randomUUID(),
      accountId: reporter.accountId,
      apiKeyId: reporter.apiKeyId,
      source: reporter.source,
      eventKey: event.eventKey,
      email: event.email,
      outcome: event.outcome,
      at: event.at,
      diagnostic: event.diagnostic,
      bounceSubStatus: bounce?.subStatus ?? null,
      bounceKind: bounce?.kind ?? null,
      verdictSource: verdict?.source ?? null,
      verdictRef: verdict?.ref ?? null,
      verdictAt: verdict?.at ?? null,
      verdictStatus: verdict?.status ?? null,
      verdictSubStatus: verdict?.subStatus ?? null,
      verdictProvider: verdict?.provider ?? null,
      createdAt: now,
    };
    return { ...row, bytes: rowBytes(...Object.values(row)) };
  });
  const day = utcDayStart(now);
  const refused = await insertOutcomes(db, reporter.accountId, rows, { day, limit: deps.quotas.storage });
  if (refused !== null) {
    throw quotaExceeded({
      quota: 'storage_bytes_per_day',
      limit: refused.limitBytes,
      used: refused.usedBytes,
      requested: rows.reduce((sum, row) => sum + row.bytes, 0),
      now,
    });
  }
  // What the database holds now: a row another request stored meanwhile is its answer too.
  const stored = new Map(
    (await recordedOutcomes(db, reporter.accountId, events)).map((row) => [keyOf(row), row]),
  );
  // The rows this request stored: what is learnt from, and what claims the guarantee, once.
  const storedHere = rows.filter((row) => stored.get(keyOf(row))?.id === row.id);
  await learnFromOutcomes(db, reporter.mode, storedHere, now);
  // The next call of a reported address reads D1, where what the outcome taught is.
  if (deps.desks)
    await forgetDeskVerdicts(deps.desks, reporter.accountId, reporter.mode, [
      ...new Set(storedHere.map((row) => row.email)),
    ]);
  const guaranteeRefunds = await refundBouncedDeliverables(db, storedHere, now);
  const insertedIds = new Set(rows.map((row) => row.id));
  const answered = new Set<string>();
  const outcomes = events.map((event) => {
    const row = stored.get(keyOf(event));
    if (!row) throw new Error('an outcome was neither stored nor found');
    const duplicate = !insertedIds.has(row.id) || answered.has(row.id);
    answered.add(row.id);
    return { ...recordedOutcome(row), duplicate };
  });
  const answer: OutcomesResponse = {
    success: true,
    recorded: outcomes.filter((outcome) => !outcome.duplicate).length,
    duplicates: outcomes.filter((outcome) => outcome.duplicate).length,
    matched: outcomes.filter((outcome) => outcome.verdict !== null).length,
    outcomes,
  };
  return { answer, guaranteeRefunds };
}

function recordedOutcome(row: OutcomeRow): Omit<RecordedOutcome, 'duplicate'> {
  return {
    email: row.email,
    outcome: row.outcome,
    at: new Date(row.at).toISOString(),
    diagnostic: row.diagnostic,
    bounce:
      row.bounceKind === null
        ? null
        : { kind: row.bounceKind, subStatus: row.bounceSubStatus as SubStatus | null },
    verdict:
      row.verdictSource === null
        ? null
        : {
            source: row.verdictSource,
            id: row.verdictRef as string,
            status: row.verdictStatus as VerificationStatus,
            subStatus: row.verdictSubStatus as SubStatus,
            verifiedAt: new Date(row.verdictAt as number).toISOString(),
          },
  };
}

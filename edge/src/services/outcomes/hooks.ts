// A sending service's webhook at the account's endpoint (docs/verdicts.md, "Outcomes"): checked
// by that service's own scheme before anything of the body is believed, then recorded as the
// account's outcomes like the API's. A refused request records nothing.
import { OutcomeProvider } from '@rcpt/shared/contract/api';
import { ApiError } from '@rcpt/shared/errors';
import type { Db } from '../../storage/db.ts';
import { findOutcomeEndpoint, recordHookNonce } from '../../storage/outcomes.ts';
import { openStored } from '../accounts/secret-box.ts';
import { type AccountDesks, settleDesk } from '../money/account-desk.ts';
import { digestOf } from '../money/idempotency.ts';
import type { Quotas } from '../money/quotas.ts';
import { mailgunOutcomes, parseMailgunBody, verifyMailgunSignature } from './mailgun.ts';
import { postmarkOutcomes, verifyPostmarkRequest } from './postmark.ts';
import { type OutcomeEvent, recordOutcomes } from './record.ts';
import { sendgridOutcomes, verifySendgridRequest } from './sendgrid.ts';
import { confirmSnsSubscription, parseSnsMessage, sesOutcomes, verifySnsMessage } from './ses-sns.ts';

/** The largest webhook body read: SendGrid batches events, a few hundred KB at most. */
export const MAX_HOOK_BYTES = 1024 * 1024;

export interface HookDeps {
  db: Db;
  quotas: Quotas;
  secretsKey: string | undefined;
  fetch: typeof fetch;
  snsTestOrigin: string | undefined;
  now: number;
  /** The accounts' desks: the single calls they answered are matched once written to D1. */
  desks?: AccountDesks;
}

export interface HookAnswer {
  received: true;
  recorded: number;
  duplicates: number;
  /** Credits the guarantee gave back for these outcomes (docs/money.md, "The guarantee"). */
  refunded: number;
  /** SNS: the subscription was confirmed. */
  subscriptionConfirmed?: true;
}

export async function receiveOutcomeHook(
  deps: HookDeps,
  request: { provider: string; endpointId: string; headers: Headers; body: string },
): Promise<HookAnswer> {
  const provider = OutcomeProvider.safeParse(request.provider);
  const endpoint = provider.success ? await findOutcomeEndpoint(deps.db, request.endpointId) : null;
  if (!endpoint || endpoint.provider !== provider.data)
    throw new ApiError('NOT_FOUND', { message: 'No such outcome endpoint.' });
  let events: OutcomeEvent[];
  switch (endpoint.provider) {
    case 'ses': {
      const message = parseSnsMessage(request.body);
      await verifySnsMessage(message, { fetch: deps.fetch, testOrigin: deps.snsTestOrigin });
      if (message.TopicArn !== endpoint.credential)
        throw new ApiError('OUTCOME_HOOK_UNAUTHORIZED', {
          message: "SNS: the message is of another topic than this endpoint's; nothing was recorded.",
        });
      if (message.Type === 'SubscriptionConfirmation') {
        await confirmSnsSubscription(message, { fetch: deps.fetch, testOrigin: deps.snsTestOrigin });
        return { received: true, recorded: 0, duplicates: 0, refunded: 0, subscriptionConfirmed: true };
      }
      events = message.Type === 'Notification' ? sesOutcomes(message) : [];
      break;
    }
    case 'sendgrid':
      await verifySendgridRequest(request, endpoint.credential);
      events = sendgridOutcomes(request.body);
      break;
    case 'postmark':
      await verifyPostmarkRequest(request.headers, endpoint.credential);
      events = postmarkOutcomes(request.body);
      break;
    case 'mailgun': {
      const body = parseMailgunBody(request.body);
      const signingKey = await openStored(deps.db, deps.secretsKey, endpoint.credential, {
        table: 'outcome_endpoints',
        column: 'credential',
        rowId: endpoint.id,
      });
      await verifyMailgunSignature(body, signingKey, deps.now);
      // Outcomes are read before the token is kept: a malformed event keeps nothing.
      events = mailgunOutcomes(body);
      const seen = await recordHookNonce(deps.db, {
        endpointId: endpoint.id,
        nonce: body.signature.token,
        bodyDigest: await digestOf(new TextEncoder().encode(request.body)),
        now: deps.now,
      });
      if (seen === 'other')
        throw new ApiError('OUTCOME_HOOK_UNAUTHORIZED', {
          message:
            'Mailgun: this signature was already used with another body (a replay); nothing was recorded.',
        });
      break;
    }
  }
  if (events.length === 0) return { received: true, recorded: 0, duplicates: 0, refunded: 0 };
  // Outcomes are matched with the history in D1: the account's desk writes its calls first.
  if (deps.desks) await settleDesk(deps.desks, endpoint.accountId);
  const { answer, guaranteeRefunds } = await recordOutcomes(
    { db: deps.db, quotas: deps.quotas, now: deps.now, ...(deps.desks ? { desks: deps.desks } : {}) },
    { accountId: endpoint.accountId, apiKeyId: null, mode: 'live', source: endpoint.provider },
    events,
  );
  return {
    received: true,
    recorded: answer.recorded,
    duplicates: answer.duplicates,
    refunded: guaranteeRefunds,
  };
}

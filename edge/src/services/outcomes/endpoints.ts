// The account's endpoints for the sending services' webhooks (docs/verdicts.md, "Outcomes"): one
// per service set-up, its id in the URL, its credential what that service's scheme checks.
import type { OutcomeEndpoint, OutcomeEndpointRequest } from '@rcpt/shared/contract/api';
import { ApiError } from '@rcpt/shared/errors';
import { issueSecret, toBase64Url } from '@rcpt/shared/secret-tokens';
import type { Config } from '../../config.ts';
import type { Db } from '../../storage/db.ts';
import {
  insertOutcomeEndpoint,
  listOutcomeEndpoints,
  type OutcomeEndpointRow,
  revokeOutcomeEndpoint,
} from '../../storage/outcomes.ts';
import { seal } from '../accounts/secret-box.ts';
import { POSTMARK_USERNAME } from './postmark.ts';
import { importSendgridKey } from './sendgrid.ts';

/** Most endpoints an account has at once: one per sending service and stream is plenty. */
export const MAX_OUTCOME_ENDPOINTS = 10;

export const OUTCOME_HOOK_PATH = '/hooks/outcomes/:provider/:endpointId';

export function endpointView(
  row: Pick<OutcomeEndpointRow, 'id' | 'provider' | 'createdAt'>,
  origin: string,
): OutcomeEndpoint {
  return {
    id: row.id,
    provider: row.provider,
    url: `${origin}/hooks/outcomes/${row.provider}/${row.id}`,
    createdAt: new Date(row.createdAt).toISOString(),
  };
}

export interface CreatedEndpoint {
  endpoint: OutcomeEndpoint;
  /** Postmark's credentials, shown once; null for the other services. */
  basicAuth: { username: string; password: string } | null;
}

export interface EndpointDeps {
  db: Db;
  secretsKey: string | undefined;
  /** The origin the endpoint's URL names: the one the request came to. */
  origin: string;
  now: number;
}

/** What making an endpoint needs, from the request's database, config and URL. */
export function endpointDepsOf(
  db: Db,
  config: Pick<Config, 'SECRETS_KEY'>,
  requestUrl: string,
): EndpointDeps {
  return { db, secretsKey: config.SECRETS_KEY, origin: new URL(requestUrl).origin, now: Date.now() };
}

export async function createOutcomeEndpoint(
  deps: EndpointDeps,
  accountId: string,
  request: OutcomeEndpointRequest,
): Promise<CreatedEndpoint> {
  // 16 random bytes: the URL cannot be guessed, on top of each service's own check.
  const id = `oe_${toBase64Url(crypto.getRandomValues(new Uint8Array(16)))}`;
  let credential: string;
  let basicAuth: CreatedEndpoint['basicAuth'] = null;
  switch (request.provider) {
    case 'ses':
      credential = request.topicArn;
      break;
    case 'sendgrid':
      if (!(await importSendgridKey(request.publicKey)))
        throw new ApiError('VALIDATION_ERROR', {
          message: "publicKey is not SendGrid's verification key (base64 of a P-256 public key).",
        });
      credential = request.publicKey.replace(/\s+/g, '');
      break;
    case 'postmark': {
      const password = await issueSecret('outcomeHookPassword');
      credential = password.hash;
      basicAuth = { username: POSTMARK_USERNAME, password: password.secret };
      break;
    }
    case 'mailgun':
      credential = await seal(deps.secretsKey, request.signingKey, {
        table: 'outcome_endpoints',
        column: 'credential',
        rowId: id,
      });
      break;
  }
  const row = { id, accountId, provider: request.provider, credential, createdAt: deps.now };
  if (!(await insertOutcomeEndpoint(deps.db, row, MAX_OUTCOME_ENDPOINTS))) {
    throw new ApiError('CONFLICT', {
      message: `An account has at most ${MAX_OUTCOME_ENDPOINTS} outcome endpoints; revoke one to add another.`,
    });
  }
  return { endpoint: endpointView(row, deps.origin), basicAuth };
}

export async function outcomeEndpointsOf(
  db: Db,
  accountId: string,
  origin: string,
): Promise<OutcomeEndpoint[]> {
  return (await listOutcomeEndpoints(db, accountId)).map((row) => endpointView(row, origin));
}

export async function revokeEndpoint(db: Db, accountId: string, id: string, now: number): Promise<void> {
  if (!(await revokeOutcomeEndpoint(db, accountId, id, now))) throw new ApiError('NOT_FOUND');
}

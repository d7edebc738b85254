// Idempotency keys (docs/money.md, "Retries of a paid request"): the first answer to a key is
// kept and a retry with the same request gets it again, not run (nor charged) again. Keys are
// scoped per account and key mode, the publishable keys apart; the request is identified by a
// SHA-256 fingerprint of its operation, content type, query and raw body, hashed as the body
// streams in (the checksum of the entire payload, one of the fingerprints
// draft-ietf-httpapi-idempotency-key-header §2.4 lists), so no copy of an upload is ever held to
// identify it.
import { ApiError } from '@rcpt/shared/errors';
import { hashSecret } from '@rcpt/shared/secret-tokens';
import { errorFields, log } from '../../logger.ts';
import type { Db } from '../../storage/db.ts';
import {
  claimIdempotencyKey,
  type HeldKey,
  type IdempotencyScope,
  keepIdempotentAnswer,
  releaseIdempotencyKey,
} from '../../storage/idempotency.ts';
import { utcDayStart } from './quotas.ts';

export interface IdempotentAnswer {
  status: number;
  body: unknown;
  /** True when this is the kept answer of an earlier request with the same key. */
  replayed: boolean;
}

function hex(digest: ArrayBuffer): string {
  return [...new Uint8Array(digest)].map((byte) => byte.toString(16).padStart(2, '0')).join('');
}

/**
 * The body passed through SHA-256 as it is read (workerd's `crypto.DigestStream`): read
 * `body` instead of the request's, then `digest()` once it was read to the end.
 */
export function digestingBody(source: ReadableStream<Uint8Array> | null): {
  body: ReadableStream<Uint8Array>;
  digest: () => Promise<string>;
} {
  const hasher = new crypto.DigestStream('SHA-256');
  const writer = hasher.getWriter();
  const body = (source ?? new Blob([]).stream()).pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      async transform(chunk, controller) {
        await writer.write(chunk);
        controller.enqueue(chunk);
      },
      async flush() {
        await writer.close();
      },
    }),
  );
  return { body, digest: async () => hex(await hasher.digest) };
}

/** SHA-256 of a body already read whole (a small JSON body), as `digestingBody` would give it. */
export async function digestOf(bytes: Uint8Array): Promise<string> {
  return hex(await crypto.subtle.digest('SHA-256', bytes));
}

/** What identifies a request under its key: the operation, how the body is encoded, the query, the body. */
export function requestFingerprint(parts: {
  operation: string;
  contentType: string | undefined;
  query: string;
  bodyDigest: string;
}): Promise<string> {
  return hashSecret(
    JSON.stringify([parts.operation, parts.contentType ?? '', parts.query, parts.bodyDigest]),
  );
}

/**
 * Runs `run` once per idempotency key of the account and mode. Only a 200 answer is kept: a
 * refusal (4xx: no credits, a quota, …) and rcpt's own failure (5xx, after which the charge was
 * refunded) did nothing, so the key is freed and a retry runs afresh (docs/money.md).
 */
export async function answerOnce(
  db: Db,
  request: {
    accountId: string;
    mode: IdempotencyScope;
    key: string | undefined;
    /** requestFingerprint of the request; read only when there is a key. */
    fingerprint: () => Promise<string>;
    /** The ledger reference `run` charges under (a request id, a job id). */
    chargeReference: string;
    now: number;
  },
  run: () => Promise<unknown>,
): Promise<IdempotentAnswer> {
  const { key } = request;
  if (key === undefined) return { status: 200, body: await run(), replayed: false };
  const held: HeldKey = { accountId: request.accountId, mode: request.mode, key };
  const fingerprint = await request.fingerprint();
  const claim = await claimIdempotencyKey(db, {
    ...held,
    fingerprint,
    now: request.now,
    chargeReference: request.chargeReference,
  });
  if (claim.kind === 'other-request') throw new ApiError('IDEMPOTENCY_KEY_REUSED');
  if (claim.kind === 'running') throw new ApiError('IDEMPOTENCY_KEY_IN_USE');
  if (claim.kind === 'charged') {
    // Its answer was lost (rcpt failed to keep it, or died before): running it again would
    // charge twice, so it is never run again under this key (docs/money.md).
    throw new ApiError('IDEMPOTENCY_KEY_IN_USE', {
      message:
        'The first request with this Idempotency-Key was charged, but its answer could not be kept; it is not run ' +
        'again. `details.chargedAs` names it: the request id of a verification (in the history) or the job id of an upload.',
      details: { chargedAs: claim.reference },
    });
  }
  if (claim.kind === 'answered') {
    return { status: claim.status, body: JSON.parse(claim.body) as unknown, replayed: true };
  }
  let body: unknown;
  try {
    body = await run();
  } catch (error) {
    await releaseIdempotencyKey(db, held).catch(() => undefined);
    throw error;
  }
  try {
    await keepIdempotentAnswer(db, {
      ...held,
      fingerprint,
      status: 200,
      body: JSON.stringify(body),
      day: utcDayStart(request.now),
    });
  } catch (cause) {
    // The request itself succeeded and its answer goes out. A retry finds the key held, and once
    // its lock lapses, charged: it is refused, never run (and charged) again.
    log.error('idempotent answer not kept', errorFields(cause));
  }
  return { status: 200, body, replayed: false };
}

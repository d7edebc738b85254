// A single call of an API key this isolate has admitted before starts its account's desk beside
// the key's admission (apiKeyAuth) instead of after it: one round trip to a Durable Object for a
// cached answer instead of two (docs/architecture.md, "A single call"). Whether the key may be
// used is still decided by its object: the desk holds what it charged open until the call takes
// it over, and this middleware gives it back when the request ends without that (a revoked key,
// a rate limit, any refusal on the way). Only a live secret key's call whose key, scope and client
// address this isolate already knows to pass, without an Idempotency-Key, on a JSON body that
// is a valid request not asking `fresh`, begins early; every other request goes as before. The
// early start only saves a round trip: when it fails (a domain fact's write to D1, say), the
// request goes the ordinary way, which charges it once, in its turn.
import { VerifyRequest } from '@rcpt/shared/contract/api';
import { isWellFormedSecret } from '@rcpt/shared/secret-tokens';
import type { Context } from 'hono';
import { createMiddleware } from 'hono/factory';
import type { AppEnv } from '../app-env.ts';
import { errorFields, log } from '../logger.ts';
import { keyHoldsScope } from '../services/keys/api-keys.ts';
import { addressAdmitted } from '../services/keys/key-limits.ts';
import { knownKey } from '../services/keys/known-keys.ts';
import { deskOf } from '../services/money/account-desk.ts';
import { quotasOf } from '../services/money/quotas.ts';
import {
  beginEarlyDeskCall,
  type EarlyDeskCall,
  giveBackEarlyDeskCall,
} from '../services/verify/desk-call.ts';
import { presentedKeyHash } from './auth.ts';
import { clientAddressOf } from './client-address.ts';
import { readJsonBody } from './json-body.ts';

export const earlyDesk = createMiddleware<AppEnv>(async (c, next) => {
  const early = await begin(c).catch((cause: unknown) => {
    // Thrown before the desk was called (its answer's failure is the call's to see): nothing held.
    log.warn('the early desk call was not begun; the request goes the ordinary way', {
      requestId: c.get('requestId'),
      error: errorFields(cause).error,
    });
    return null;
  });
  if (!early) return next();
  c.set('earlyDesk', early);
  try {
    await next();
  } finally {
    const { desks, inBackground } = c.get('services');
    inBackground(giveBackEarlyDeskCall(early, () => deskOf(desks, early.call.accountId)));
  }
});

async function begin(c: Context<AppEnv>): Promise<EarlyDeskCall | null> {
  const presented = c.req.header('x-api-key');
  if (c.req.method !== 'POST' || presented === undefined || !isWellFormedSecret(presented)) return null;
  if (c.req.header('idempotency-key') !== undefined) return null;
  const known = knownKey(await presentedKeyHash(c, presented));
  if (known?.limits.kind !== 'secret' || known.caller.mode !== 'live') return null;
  if (!keyHoldsScope(known.limits, ['verify'], { publishableKeys: false })) return null;
  if (!addressAdmitted(known.limits, clientAddressOf(c))) return null;
  // A body the route refuses is refused there, in its turn: the read's outcome is kept for it.
  const read = await readJsonBody(c).then(
    () => true,
    () => false,
  );
  if (!read) return null;
  const request = VerifyRequest.safeParse(await c.req.json());
  if (!request.success || request.data.fresh) return null;
  const { desks, facts, config } = c.get('services');
  return beginEarlyDeskCall({
    desk: deskOf(desks, known.caller.accountId),
    facts,
    caller: known.caller,
    email: request.data.email,
    evidence: request.data.evidence ?? false,
    requestId: c.get('requestId'),
    now: Date.now(),
    quotas: quotasOf(config),
  });
}

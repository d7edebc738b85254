// POST /internal/keys/forget: an API key revoked outside the edge (`npm run admin -- key revoke`,
// which writes D1 itself) stops working on its next request: the operator's script names the
// revoked keys' hashes here, and their KeyLimiter objects forget the records they keep
// (docs/architecture.md, "Authentication"). Called with an operator token, never an API key.
import { ApiError } from '@rcpt/shared/errors';
import type { Hono } from 'hono';
import { z } from 'zod';
import type { AppEnv } from '../../app-env.ts';
import { validationError } from '../../middleware/error-handler.ts';
import { operatorOf } from '../../services/fleet/operator-view.ts';
import { forgetKeyRecords } from '../../services/keys/api-keys.ts';
import { bearerSecretOf } from './bearer-secret.ts';

export const KEYS_FORGET_PATH = '/internal/keys/forget';

/** At most this many keys at once: a revocation names one, a script a few. */
const MAX_KEYS = 100;

const ForgetRequest = z.object({
  keyHashes: z
    .array(z.string().regex(/^[0-9a-f]{64}$/, 'a key hash is 64 lower-case hex digits (SHA-256)'))
    .min(1)
    .max(MAX_KEYS),
});

export function registerKeysForget(app: Hono<AppEnv>): void {
  app.post(KEYS_FORGET_PATH, async (c) => {
    const token = bearerSecretOf(c.req.header('authorization'), 'operatorToken');
    if (!token) {
      throw new ApiError('UNAUTHORIZED', {
        message: 'An operator token is required (Authorization: Bearer rko_…).',
      });
    }
    const services = c.get('services');
    if (!(await operatorOf(services, token, Date.now())))
      throw new ApiError('UNAUTHORIZED', { message: 'The operator token is invalid or revoked.' });
    const parsed = ForgetRequest.safeParse(await c.req.json().catch(() => null));
    if (!parsed.success) throw validationError(parsed.error.issues);
    await forgetKeyRecords(services.limiters, parsed.data.keyHashes);
    return c.json({ forgotten: parsed.data.keyHashes.length });
  });
}

import { validationError } from '@rcpt/shared/errors';
import type { Hono } from 'hono';
import { z } from 'zod';
import type { AppEnv } from '../../app-env.ts';
import { forgetKeyRecords } from '../../services/keys/api-keys.ts';
import { requireOperator } from './bearer-secret.ts';

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
    await requireOperator(c);
    const services = c.get('services');
    const parsed = ForgetRequest.safeParse(await c.req.json().catch(() => null));
    if (!parsed.success) throw validationError(parsed.error);
    await forgetKeyRecords(services.limiters, parsed.data.keyHashes);
    return c.json({ forgotten: parsed.data.keyHashes.length });
  });
}

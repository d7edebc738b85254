// The internal routes authenticate machines and operators with a secret of one kind in
// `Authorization: Bearer …`; anything else is refused before a database lookup.
import { ApiError } from '@rcpt/shared/errors';
import { isWellFormedSecret, type SecretKind, secretKindOf } from '@rcpt/shared/secret-tokens';
import type { Context } from 'hono';
import type { AppEnv } from '../../app-env.ts';
import { operatorOf } from '../../services/fleet/operator-view.ts';

/** The secret of `kind` the header carries, or null when it carries none (or one of another kind). */
export function bearerSecretOf(authorization: string | undefined, kind: SecretKind): string | null {
  const secret = /^Bearer (\S+)$/.exec(authorization ?? '')?.[1];
  if (!secret || secretKindOf(secret) !== kind || !isWellFormedSecret(secret)) return null;
  return secret;
}

/** The operator whose token the request carries, or 401 UNAUTHORIZED (none, another kind, revoked). */
export async function requireOperator(c: Context<AppEnv>): Promise<{ id: string }> {
  const token = bearerSecretOf(c.req.header('authorization'), 'operatorToken');
  if (!token) {
    throw new ApiError('UNAUTHORIZED', {
      message: 'An operator token is required (Authorization: Bearer rko_…).',
    });
  }
  const operator = await operatorOf(c.get('services'), token, Date.now());
  if (!operator) throw new ApiError('UNAUTHORIZED', { message: 'The operator token is invalid or revoked.' });
  return operator;
}

// The internal routes authenticate machines and operators with a secret of one kind in
// `Authorization: Bearer …`; anything else is refused before a database lookup.
import { isWellFormedSecret, type SecretKind, secretKindOf } from '@rcpt/shared/secret-tokens';

/** The secret of `kind` the header carries, or null when it carries none (or one of another kind). */
export function bearerSecretOf(authorization: string | undefined, kind: SecretKind): string | null {
  const secret = /^Bearer (\S+)$/.exec(authorization ?? '')?.[1];
  if (!secret || secretKindOf(secret) !== kind || !isWellFormedSecret(secret)) return null;
  return secret;
}

// Secrets handed to people and machines: API keys, prober and operator tokens (and publishable
// keys, which are made the same way but are meant for web pages: docs/publishable-keys.md). 32 random bytes,
// shown once, stored only as a SHA-256 hash plus a short visible prefix (for dashboards).
// WebCrypto only, so the edge, the prober and the operator scripts share one implementation.

export const SECRET_KINDS = {
  liveKey: 'rk_live_',
  testKey: 'rk_test_',
  publishableKey: 'rk_pub_',
  proberToken: 'rkp_',
  operatorToken: 'rko_',
  session: 'rks_',
  outcomeHookPassword: 'rkh_',
} as const;
export type SecretKind = keyof typeof SECRET_KINDS;

/** How many characters of the secret after its kind marker are shown as its prefix. */
const VISIBLE_CHARS = 4;

export interface IssuedSecret {
  secret: string; // shown once
  hash: string; // stored
  prefix: string; // stored and shown, e.g. rk_live_ab12
}

export async function issueSecret(kind: SecretKind): Promise<IssuedSecret> {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  const secret = `${SECRET_KINDS[kind]}${toBase64Url(bytes)}`;
  return {
    secret,
    hash: await hashSecret(secret),
    prefix: secret.slice(0, SECRET_KINDS[kind].length + VISIBLE_CHARS),
  };
}

/** SHA-256 of the secret, lower-case hex: what is stored and looked up. */
export async function hashSecret(secret: string): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(secret));
  return [...new Uint8Array(digest)].map((byte) => byte.toString(16).padStart(2, '0')).join('');
}

/** Which kind of secret this string claims to be, by its marker; null if none. */
export function secretKindOf(secret: string): SecretKind | null {
  for (const [kind, marker] of Object.entries(SECRET_KINDS) as [SecretKind, string][]) {
    if (secret.startsWith(marker)) return kind;
  }
  return null;
}

/** Whether `secret` has the exact shape issueSecret produces (cheap rejection before any lookup). */
export function isWellFormedSecret(secret: string): boolean {
  const kind = secretKindOf(secret);
  return kind !== null && /^[A-Za-z0-9_-]{43}$/.test(secret.slice(SECRET_KINDS[kind].length));
}

/** RFC 4648 §5 base64url, without padding. */
export function toBase64Url(bytes: Uint8Array): string {
  let binary = '';
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

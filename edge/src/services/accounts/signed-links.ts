// Links that carry their own proof, sent by email: `<account id>.<expiry ms>.<MAC>`, the MAC an
// HMAC-SHA256 (RFC 2104) over the account id, a value the link is bound to and the expiry,
// under a key derived from the deployment's SECRETS_KEY with HKDF (RFC 5869) for one purpose
// alone. So a link cannot be altered, forged, or used for another purpose, and it ends when
// the value it is bound to changes (an email confirmation link is bound to the account's
// address, a password reset link to its password hash, so it works once).
import { ApiError } from '@rcpt/shared/errors';
import { toBase64Url } from '@rcpt/shared/secret-tokens';
import { fromBase64 } from './secret-box.ts';

export type LinkPurpose = 'email confirmation' | 'password reset';

export interface LinkToken {
  accountId: string;
  expiresAt: number;
  mac: Uint8Array;
}

const keys = new Map<string, Promise<CryptoKey>>();

function linkKey(secretsKey: string | undefined, purpose: LinkPurpose): Promise<CryptoKey> {
  if (!secretsKey) {
    throw new ApiError('SERVICE_UNAVAILABLE', {
      message: 'Email links are not configured on this deployment (SECRETS_KEY).',
    });
  }
  const cacheKey = `${purpose}\n${secretsKey}`;
  let key = keys.get(cacheKey);
  if (!key) {
    key = crypto.subtle.importKey('raw', fromBase64(secretsKey), 'HKDF', false, ['deriveKey']).then((base) =>
      crypto.subtle.deriveKey(
        {
          name: 'HKDF',
          hash: 'SHA-256',
          salt: new Uint8Array(0),
          info: new TextEncoder().encode(`rcpt ${purpose} link v1`),
        },
        base,
        { name: 'HMAC', hash: 'SHA-256', length: 256 },
        false,
        ['sign'],
      ),
    );
    keys.set(cacheKey, key);
  }
  return key;
}

async function linkMac(
  secretsKey: string | undefined,
  purpose: LinkPurpose,
  input: { accountId: string; boundTo: string; expiresAt: number },
): Promise<Uint8Array> {
  const signed = new TextEncoder().encode(`${input.accountId}\n${input.boundTo}\n${input.expiresAt}`);
  return new Uint8Array(await crypto.subtle.sign('HMAC', await linkKey(secretsKey, purpose), signed));
}

/** The token of a link for this account, bound to `boundTo`, good until `expiresAt`. */
export async function signLink(
  secretsKey: string | undefined,
  purpose: LinkPurpose,
  input: { accountId: string; boundTo: string; expiresAt: number },
): Promise<string> {
  const mac = toBase64Url(await linkMac(secretsKey, purpose, input));
  return `${input.accountId}.${input.expiresAt}.${mac}`;
}

/** The parts of a token, or null when it is not one. */
export function parseLinkToken(token: string): LinkToken | null {
  const match = /^([0-9a-f-]{36})\.(\d{13})\.([A-Za-z0-9_-]{43})$/.exec(token);
  if (!match) return null;
  const [, accountId = '', expiry = '', mac = ''] = match;
  return {
    accountId,
    expiresAt: Number(expiry),
    mac: fromBase64(mac.replace(/-/g, '+').replace(/_/g, '/')),
  };
}

/**
 * Whether the token's MAC is the one for `boundTo`, compared in constant time. Callers compute
 * it for an unknown account too (with an empty `boundTo`), so both take the same work.
 */
export async function linkMatches(
  secretsKey: string | undefined,
  purpose: LinkPurpose,
  token: LinkToken,
  boundTo: string,
): Promise<boolean> {
  const expected = await linkMac(secretsKey, purpose, {
    accountId: token.accountId,
    boundTo,
    expiresAt: token.expiresAt,
  });
  return token.mac.byteLength === expected.byteLength && crypto.subtle.timingSafeEqual(token.mac, expected);
}

// Secrets the edge must use again (webhook signing secrets) are stored sealed with AES-256-GCM
// under the deployment's SECRETS_KEY, never in clear.
import { ApiError } from '@rcpt/shared/errors';

const keys = new Map<string, Promise<CryptoKey>>();

function keyFor(secretsKey: string | undefined): Promise<CryptoKey> {
  if (!secretsKey) {
    throw new ApiError('SERVICE_UNAVAILABLE', {
      message: 'Webhooks are not configured on this deployment (SECRETS_KEY).',
    });
  }
  let key = keys.get(secretsKey);
  if (!key) {
    const raw = Uint8Array.from(atob(secretsKey), (character) => character.charCodeAt(0));
    if (raw.byteLength !== 32) throw new Error('SECRETS_KEY must be 32 bytes, base64');
    key = crypto.subtle.importKey('raw', raw, 'AES-GCM', false, ['encrypt', 'decrypt']);
    keys.set(secretsKey, key);
  }
  return key;
}

export async function seal(secretsKey: string | undefined, plaintext: string): Promise<string> {
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const sealed = await crypto.subtle.encrypt(
    { name: 'AES-GCM', iv },
    await keyFor(secretsKey),
    new TextEncoder().encode(plaintext),
  );
  return `v1.${toBase64(iv)}.${toBase64(new Uint8Array(sealed))}`;
}

export async function open(secretsKey: string | undefined, sealed: string): Promise<string> {
  const [version, iv, data] = sealed.split('.');
  if (version !== 'v1' || !iv || !data) throw new Error('unknown sealed secret format');
  const plaintext = await crypto.subtle.decrypt(
    { name: 'AES-GCM', iv: fromBase64(iv) },
    await keyFor(secretsKey),
    fromBase64(data),
  );
  return new TextDecoder().decode(plaintext);
}

export function toBase64(bytes: Uint8Array): string {
  let binary = '';
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary);
}

export function fromBase64(text: string): Uint8Array {
  return Uint8Array.from(atob(text), (character) => character.charCodeAt(0));
}

// Secrets the edge must use again (webhook signing secrets, customers' Turnstile secret keys) are
// stored sealed with AES-256-GCM, never in clear.
//
// The sealing key is derived from the deployment's SECRETS_KEY with HKDF-SHA256 (RFC 5869) under
// its own info label, as the keys of signed links are under theirs (signed-links.ts): no key
// serves two purposes, and SECRETS_KEY itself is used by none. Each sealed value carries where it
// is stored — table, column and row id — as AES-GCM associated data (NIST SP 800-38D §5.2.1), so
// a value copied into another row or column (by a bug, or by someone who can write the database
// but not read SECRETS_KEY) does not open there.
//
// Format `v2.<iv>.<ciphertext>`. Values sealed before (`v1`: the raw SECRETS_KEY as the AES key,
// no associated data) still open; `open` then hands back the same secret sealed as v2, and the
// caller stores it in place of the old value (a conditional write), so each row moves to v2 the
// first time it is used. A deployment that wants no v1 row left re-saves its webhook secrets
// (rotating them) and its publishable keys' Turnstile secrets.
import { ApiError } from '@rcpt/shared/errors';
import { errorFields, log } from '../../logger.ts';
import type { Db } from '../../storage/db.ts';
import { replaceSealedSecret, type SealedPlace } from '../../storage/sealed-secrets.ts';

export type { SealedPlace };

export interface OpenedSecret {
  plaintext: string;
  /** The secret sealed anew (v2) when the stored value was of an older format; store it in place. */
  resealed: string | null;
}

const SEAL_INFO = 'rcpt secret box v2';

const sealingKeys = new Map<string, Promise<CryptoKey>>();
const legacyKeys = new Map<string, Promise<CryptoKey>>();

function rawSecretsKey(secretsKey: string | undefined): Uint8Array {
  if (!secretsKey) {
    throw new ApiError('SERVICE_UNAVAILABLE', {
      message: 'Stored secrets are not configured on this deployment (SECRETS_KEY).',
    });
  }
  const raw = fromBase64(secretsKey);
  if (raw.byteLength !== 32) throw new Error('SECRETS_KEY must be 32 bytes, base64');
  return raw;
}

/** The AES-GCM key of v2 values: HKDF of SECRETS_KEY under the secret box's own label. */
function sealingKey(secretsKey: string | undefined): Promise<CryptoKey> {
  const raw = rawSecretsKey(secretsKey);
  let key = sealingKeys.get(secretsKey as string);
  if (!key) {
    key = crypto.subtle.importKey('raw', raw, 'HKDF', false, ['deriveKey']).then((base) =>
      crypto.subtle.deriveKey(
        {
          name: 'HKDF',
          hash: 'SHA-256',
          salt: new Uint8Array(0),
          info: new TextEncoder().encode(SEAL_INFO),
        },
        base,
        { name: 'AES-GCM', length: 256 },
        false,
        ['encrypt', 'decrypt'],
      ),
    );
    sealingKeys.set(secretsKey as string, key);
  }
  return key;
}

/** The key of v1 values, read only: SECRETS_KEY itself. */
function legacyKey(secretsKey: string | undefined): Promise<CryptoKey> {
  const raw = rawSecretsKey(secretsKey);
  let key = legacyKeys.get(secretsKey as string);
  if (!key) {
    key = crypto.subtle.importKey('raw', raw, 'AES-GCM', false, ['decrypt']);
    legacyKeys.set(secretsKey as string, key);
  }
  return key;
}

function associatedData(place: SealedPlace): Uint8Array {
  return new TextEncoder().encode(`${place.table}.${place.column}:${place.rowId}`);
}

export async function seal(
  secretsKey: string | undefined,
  plaintext: string,
  place: SealedPlace,
): Promise<string> {
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const sealed = await crypto.subtle.encrypt(
    { name: 'AES-GCM', iv, additionalData: associatedData(place) },
    await sealingKey(secretsKey),
    new TextEncoder().encode(plaintext),
  );
  return `v2.${toBase64(iv)}.${toBase64(new Uint8Array(sealed))}`;
}

/** Opens a value sealed for `place`; throws when it was sealed for another place or key. */
export async function open(
  secretsKey: string | undefined,
  sealed: string,
  place: SealedPlace,
): Promise<OpenedSecret> {
  const [version, iv, data] = sealed.split('.');
  if (!iv || !data) throw new Error('unknown sealed secret format');
  if (version === 'v2') {
    const plaintext = await crypto.subtle.decrypt(
      { name: 'AES-GCM', iv: fromBase64(iv), additionalData: associatedData(place) },
      await sealingKey(secretsKey),
      fromBase64(data),
    );
    return { plaintext: new TextDecoder().decode(plaintext), resealed: null };
  }
  if (version !== 'v1') throw new Error('unknown sealed secret format');
  const plaintext = new TextDecoder().decode(
    await crypto.subtle.decrypt(
      { name: 'AES-GCM', iv: fromBase64(iv) },
      await legacyKey(secretsKey),
      fromBase64(data),
    ),
  );
  return { plaintext, resealed: await seal(secretsKey, plaintext, place) };
}

/**
 * Opens the secret stored at `place`, and stores it sealed anew when it was in an older format
 * (a failure to store is logged: the secret is still good, and the next use tries again).
 */
export async function openStored(
  db: Db,
  secretsKey: string | undefined,
  sealed: string,
  place: SealedPlace,
): Promise<string> {
  const opened = await open(secretsKey, sealed, place);
  if (opened.resealed !== null) {
    await replaceSealedSecret(db, place, sealed, opened.resealed).catch((cause: unknown) => {
      log.error('sealed secret not moved to the current format', {
        table: place.table,
        ...errorFields(cause),
      });
    });
  }
  return opened.plaintext;
}

export function toBase64(bytes: Uint8Array): string {
  let binary = '';
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary);
}

export function fromBase64(text: string): Uint8Array {
  return Uint8Array.from(atob(text), (character) => character.charCodeAt(0));
}

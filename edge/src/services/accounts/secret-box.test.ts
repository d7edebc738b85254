// Sealed secrets: a key of their own derived from SECRETS_KEY, bound to the row and column that
// store them, and values sealed the older way still open and move to the current format.
import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { db, newCaller } from '../../../test/fixtures.ts';
import { configOf } from '../../config.ts';
import { fromBase64, open, openStored, type SealedPlace, seal, toBase64 } from './secret-box.ts';
import { signLink } from './signed-links.ts';

const SECRETS_KEY = configOf(env).SECRETS_KEY;
const ALICE: SealedPlace = { table: 'accounts', column: 'webhook_secret', rowId: 'account-alice' };
const BOB: SealedPlace = { table: 'accounts', column: 'webhook_secret', rowId: 'account-bob' };
const KEY: SealedPlace = { table: 'api_keys', column: 'turnstile_secret', rowId: 'account-alice' };

/** A value sealed as rcpt sealed them before: SECRETS_KEY itself as the AES key, nothing bound. */
async function sealedTheOldWay(plaintext: string): Promise<string> {
  const key = await crypto.subtle.importKey('raw', fromBase64(SECRETS_KEY ?? ''), 'AES-GCM', false, [
    'encrypt',
  ]);
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const data = await crypto.subtle.encrypt({ name: 'AES-GCM', iv }, key, new TextEncoder().encode(plaintext));
  return `v1.${toBase64(iv)}.${toBase64(new Uint8Array(data))}`;
}

describe('secret box', () => {
  it('opens a value only where it was sealed: another row or column refuses it', async () => {
    const sealed = await seal(SECRETS_KEY, 'whsec_alice', ALICE);
    expect(sealed.startsWith('v2.')).toBe(true);
    expect(await open(SECRETS_KEY, sealed, ALICE)).toEqual({ plaintext: 'whsec_alice', resealed: null });
    // Copied into Bob's row, or into a key's Turnstile column, it does not open.
    await expect(open(SECRETS_KEY, sealed, BOB)).rejects.toThrow();
    await expect(open(SECRETS_KEY, sealed, KEY)).rejects.toThrow();
  });

  it('seals under a key derived for it alone, not SECRETS_KEY itself', async () => {
    const sealed = await seal(SECRETS_KEY, 'whsec_alice', ALICE);
    const [, iv = '', data = ''] = sealed.split('.');
    const raw = await crypto.subtle.importKey('raw', fromBase64(SECRETS_KEY ?? ''), 'AES-GCM', false, [
      'decrypt',
    ]);
    const bound = new TextEncoder().encode('accounts.webhook_secret:account-alice');
    for (const additionalData of [undefined, bound]) {
      await expect(
        crypto.subtle.decrypt(
          { name: 'AES-GCM', iv: fromBase64(iv), ...(additionalData ? { additionalData } : {}) },
          raw,
          fromBase64(data),
        ),
      ).rejects.toThrow();
    }
    // The links' keys are derived under their own labels: a link still signs (and differs per purpose).
    const input = { accountId: crypto.randomUUID(), boundTo: 'x', expiresAt: Date.now() + 60_000 };
    expect(await signLink(SECRETS_KEY, 'password reset', input)).not.toBe(
      await signLink(SECRETS_KEY, 'email confirmation', input),
    );
  });

  it('opens a value sealed the older way and hands it back in the current format', async () => {
    const old = await sealedTheOldWay('whsec_legacy');
    const opened = await open(SECRETS_KEY, old, ALICE);
    expect(opened.plaintext).toBe('whsec_legacy');
    expect(opened.resealed?.startsWith('v2.')).toBe(true);
    expect((await open(SECRETS_KEY, opened.resealed ?? '', ALICE)).plaintext).toBe('whsec_legacy');
  });

  it('moves a stored older value to the current format the first time it is used, in place', async () => {
    const { accountId } = await newCaller({ credits: 0 });
    const old = await sealedTheOldWay('whsec_stored');
    await env.DB.prepare('UPDATE accounts SET webhook_secret = ?2 WHERE id = ?1').bind(accountId, old).run();
    const place: SealedPlace = { table: 'accounts', column: 'webhook_secret', rowId: accountId };
    expect(await openStored(db(), SECRETS_KEY, old, place)).toBe('whsec_stored');
    const stored = await env.DB.prepare('SELECT webhook_secret AS sealed FROM accounts WHERE id = ?1')
      .bind(accountId)
      .first<{ sealed: string }>();
    expect(stored?.sealed.startsWith('v2.')).toBe(true);
    expect(await open(SECRETS_KEY, stored?.sealed ?? '', place)).toEqual({
      plaintext: 'whsec_stored',
      resealed: null,
    });
  });
});

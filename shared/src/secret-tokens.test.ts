import { describe, expect, it } from 'vitest';
import { hashSecret, issueSecret, isWellFormedSecret, secretKindOf } from './secret-tokens.ts';

describe('issueSecret', () => {
  it.each([
    ['liveKey', 'rk_live_'],
    ['testKey', 'rk_test_'],
    ['publishableKey', 'rk_pub_'],
    ['proberToken', 'rkp_'],
  ] as const)(
    '%s secrets start with %s, are well formed and hash to the stored hash',
    async (kind, marker) => {
      const issued = await issueSecret(kind);
      expect(issued.secret.startsWith(marker)).toBe(true);
      expect(issued.prefix).toBe(issued.secret.slice(0, marker.length + 4));
      expect(isWellFormedSecret(issued.secret)).toBe(true);
      expect(secretKindOf(issued.secret)).toBe(kind);
      expect(issued.hash).toBe(await hashSecret(issued.secret));
      expect(issued.hash).toMatch(/^[0-9a-f]{64}$/);
    },
  );

  it('never issues the same secret twice', async () => {
    const secrets = new Set(
      await Promise.all(Array.from({ length: 50 }, async () => (await issueSecret('liveKey')).secret)),
    );
    expect(secrets.size).toBe(50);
  });
});

describe('hashSecret', () => {
  it('is SHA-256 hex', async () => {
    // FIPS 180-2 test vector for "abc".
    expect(await hashSecret('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });
});

describe('isWellFormedSecret', () => {
  it.each([
    ['', false],
    ['rk_live_', false],
    ['rk_live_short', false],
    [' rk_live_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', false],
    ['rk_live_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA ', false],
    ['rk_live_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', true],
    ['rk_prod_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', false],
    ['rk_test_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA+/=', false],
  ])('%j → %s', (secret, expected) => {
    expect(isWellFormedSecret(secret)).toBe(expected);
  });
});

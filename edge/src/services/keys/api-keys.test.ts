import { describe, expect, it } from 'vitest';
import { keyHoldsScope, parseAllowedCidrs, parseAllowedOrigins } from './api-keys.ts';

describe('parseAllowedCidrs', () => {
  it('reads blocks one per line or comma-separated, canonical and without repeats', () => {
    expect(parseAllowedCidrs('203.0.113.0/24\n 2001:DB8::/32, 203.0.113.0/24 ,198.51.100.7')).toEqual({
      blocks: ['203.0.113.0/24', '2001:db8::/32', '198.51.100.7/32'],
    });
  });

  it('an empty list is no limit', () => {
    expect(parseAllowedCidrs('  \n ')).toEqual({ blocks: null });
  });

  it.each([['203.0.113.7/24'], ['10.0.0.0/40'], ['office']])(
    'names the entry that is not a block: %s',
    (entry) => {
      const parsed = parseAllowedCidrs(`198.51.100.0/24\n${entry}`);
      expect('problem' in parsed && parsed.problem).toContain(entry);
    },
  );

  it('refuses more than 50 blocks', () => {
    const many = Array.from({ length: 51 }, (_, index) => `10.0.${index}.0/24`).join('\n');
    expect(parseAllowedCidrs(many)).toHaveProperty('problem');
  });
});

describe('parseAllowedOrigins', () => {
  it('keeps scheme, host and port as a browser serialises them', () => {
    expect(
      parseAllowedOrigins('https://Shop.Example.com/\nhttp://127.0.0.1:8080, https://shop.example.com:443'),
    ).toEqual({ origins: ['https://shop.example.com', 'http://127.0.0.1:8080'] });
  });

  it.each([
    ['https://shop.example.com/signup', 'a path'],
    ['https://shop.example.com/?a=1', 'a query'],
    ['https://user@shop.example.com', 'credentials'],
    ['ftp://shop.example.com', 'not a web scheme'],
    ['shop.example.com', 'no scheme'],
    ['null', 'the opaque origin'],
  ])('refuses %s (%s)', (entry) => {
    expect(parseAllowedOrigins(entry)).toHaveProperty('problem');
  });

  it('needs at least one origin', () => {
    expect(parseAllowedOrigins('')).toHaveProperty('problem');
  });
});

describe('keyHoldsScope', () => {
  const operation = { publishableKeys: false };
  it.each([
    [null, ['read'], true],
    [['verify'], ['verify'], true],
    [['verify'], ['bulk', 'read'], false],
    [['bulk'], ['bulk', 'read'], true],
    [[], ['verify'], false],
  ] as const)('a key with %j may call an operation open to %j: %s', (scopes, anyOf, holds) => {
    expect(keyHoldsScope({ kind: 'secret', scopes }, anyOf, operation)).toBe(holds);
  });

  it('a publishable key calls only an operation that takes publishable keys', () => {
    const key = { kind: 'publishable', scopes: ['verify'] } as const;
    expect(keyHoldsScope(key, ['verify'], { publishableKeys: true })).toBe(true);
    expect(keyHoldsScope(key, ['verify'], { publishableKeys: false })).toBe(false);
  });
});

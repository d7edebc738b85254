import { describe, expect, it } from 'vitest';
import { MAX_DOMAIN_LENGTH, MAX_LABEL_LENGTH, type MailDomain, parseMailDomain } from './domain.ts';

// checkSyntax's table covers the domain through whole addresses; these rows pin the parts a
// caller of parseMailDomain sees directly: the normalised name and the literal flag.
describe('parseMailDomain', () => {
  it.each<[string, MailDomain]>([
    ['Example.COM', { valid: true, domain: 'example.com', ipLiteral: false }], // RFC 5321 §2.4: case folded
    ['bücher.test', { valid: true, domain: 'xn--bcher-kva.test', ipLiteral: false }], // UTS #46 §4.2: A-label
    ['[192.0.2.1]', { valid: true, domain: '[192.0.2.1]', ipLiteral: true }], // RFC 5321 §4.1.3: IPv4 literal kept
    ['[IPV6:2001:DB8::1]', { valid: true, domain: '[IPv6:2001:db8::1]', ipLiteral: true }], // RFC 5234 §2.3: tag spelled one way
    ['[IPv6:::ffff:192.0.2.1]', { valid: true, domain: '[IPv6:::ffff:192.0.2.1]', ipLiteral: true }], // RFC 5321 §4.1.3: IPv6v4-comp
    ['', { valid: false, reason: 'Nothing comes after the @.' }], // RFC 5321 §4.1.2: Domain is not empty
    ['a_b.com', { valid: false, reason: 'The domain contains "_", which is not allowed in a domain name.' }], // RFC 1035 §2.3.1
  ])('parses %j', (raw, expected) => {
    expect(parseMailDomain(raw)).toEqual(expected);
  });

  it('accepts a name of 253 characters and refuses 254 (RFC 1035 §2.3.4)', () => {
    const name = (length: number) =>
      `${'a'.repeat(63)}.${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(length - 192)}`;
    expect(parseMailDomain(name(MAX_DOMAIN_LENGTH))).toMatchObject({ valid: true });
    expect(parseMailDomain(name(MAX_DOMAIN_LENGTH + 1))).toMatchObject({
      valid: false,
      reason: expect.stringMatching(/253/),
    });
  });

  it('measures a label after conversion to an A-label (RFC 5890 §2.3.2.1)', () => {
    // 58 × "ü" is 58 characters as typed but 64 as the A-label "xn--tdaaa…"; 57 make 63.
    expect(parseMailDomain(`${'ü'.repeat(58)}.com`)).toMatchObject({
      valid: false,
      reason: expect.stringMatching(/63/),
    });
    expect(parseMailDomain(`${'ü'.repeat(57)}.com`)).toMatchObject({ valid: true });
    expect(MAX_LABEL_LENGTH).toBe(63);
  });
});

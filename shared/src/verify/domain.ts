// The domain of an address (the part after the last '@') as mail servers accept it: a host
// name of LDH labels in A-label form (RFC 5321 §4.1.2, RFC 1035 §2.3.1, RFC 5890 §2.3.2.1), or an
// address literal in brackets (RFC 5321 §4.1.3). Internationalised names are converted with
// UTS #46 through the WHATWG URL host parser, which both Node and Workers ship; that parser is
// lenient about things that are not host names ('_', empty labels, numbers), so its output is
// validated again here.

/** RFC 1035 §2.3.4: 255 octets on the wire is 253 characters written out without the root dot. */
export const MAX_DOMAIN_LENGTH = 253;
/** RFC 1035 §2.3.4: a label is at most 63 octets. */
export const MAX_LABEL_LENGTH = 63;

export type MailDomain =
  | { valid: true; domain: string; ipLiteral: boolean }
  | { valid: false; reason: string };

// A plain ASCII host name that needs no conversion: only letters, digits, hyphens and dots,
// and no "xn--" label whose Punycode must be checked.
const PLAIN_ASCII_DOMAIN = /^[A-Za-z0-9.-]+$/;
const ACE_PREFIX = /(?:^|\.)xn--/i;
// RFC 1123 §2.1: "the highest-level component label will be alphabetic"; IDN TLDs are A-labels.
const TOP_LEVEL_LABEL = /^(?:[a-z]+|xn--[a-z0-9-]+)$/;
const DOTTED_NUMBERS = /^[0-9.]+$/;
const NON_ASCII = /[\u0080-\uffff]/;
// UTS #46 §2.3: the full stops that separate labels, and hyphen-minus with its fullwidth form.
const UTS46_DOTS = /[.\u3002\uff0e\uff61]/;
const HYPHENS: ReadonlySet<string> = new Set(['-', '\uff0d']);

/** Validates the part after the '@' and returns it lower-cased, in A-label form. */
export function parseMailDomain(raw: string): MailDomain {
  if (raw === '') return reject('Nothing comes after the @.');
  if (raw.charCodeAt(0) === 0x5b /* [ */) return parseAddressLiteral(raw);
  if (PLAIN_ASCII_DOMAIN.test(raw) && !ACE_PREFIX.test(raw)) return checkHostName(raw.toLowerCase());

  // Any other ASCII character is refused before the URL parser sees it: the parser would
  // percent-decode '%41', cut the host at '/', '?' or '#', and keep '_' or '*'.
  const stray = firstCharacterOutsideHostName(raw);
  if (stray !== null) return reject(describeStrayCharacter(stray));
  // Empty labels are checked on the raw text too: UTS #46 maps them through unchanged, but
  // the reason is clearer before conversion.
  const structure = checkDots(raw);
  if (structure !== null) return reject(structure);
  // RFC 5891 §4.2.3.1: a U-label neither starts nor ends with a hyphen. The URL parser does not
  // check this (CheckHyphens=false), and the A-label it makes ("xn---bcher-kva") no longer shows it.
  for (const label of raw.split(UTS46_DOTS)) {
    if (HYPHENS.has(label.charAt(0))) return reject(`The domain part "${label}" starts with a hyphen.`);
    if (HYPHENS.has(label.charAt(label.length - 1))) {
      return reject(`The domain part "${label}" ends with a hyphen.`);
    }
  }

  let hostname: string;
  try {
    hostname = new URL(`http://${raw}`).hostname;
  } catch {
    return reject(
      NON_ASCII.test(raw)
        ? 'The domain is not a valid internationalised domain name.'
        : 'The domain has an "xn--" label that is not valid Punycode.',
    );
  }
  // UTS #46 maps look-alikes to ASCII (fullwidth '＿' becomes '_', '。' becomes '.'), so the
  // converted name is held to the same rules as one typed in ASCII.
  if (!PLAIN_ASCII_DOMAIN.test(hostname)) {
    const mapped = firstCharacterOutsideHostName(hostname);
    return reject(
      mapped === null
        ? 'The domain is not a valid internationalised domain name.'
        : describeStrayCharacter(mapped),
    );
  }
  return checkHostName(hostname);
}

/** Checks a lower-case host name of [a-z0-9.-]: dots, lengths, hyphens, the top label. */
function checkHostName(domain: string): MailDomain {
  const structure = checkDots(domain);
  if (structure !== null) return reject(structure);
  if (domain.length > MAX_DOMAIN_LENGTH) {
    return reject(`The domain is longer than ${MAX_DOMAIN_LENGTH} characters.`);
  }
  const labels = domain.split('.');
  // RFC 5321 §2.3.5: a domain in an address is fully qualified; a single label ("localhost",
  // "com") is a local alias at best, not an address anyone else can deliver to.
  if (labels.length < 2) return reject('The domain needs at least one dot, as in example.com.');
  for (const label of labels) {
    if (label.length > MAX_LABEL_LENGTH) {
      return reject(`A part of the domain is longer than ${MAX_LABEL_LENGTH} characters.`);
    }
    // RFC 1035 §2.3.1 as relaxed by RFC 1123 §2.1: letters, digits and hyphens (both callers
    // have checked the characters); a label may start with a digit but neither starts nor
    // ends with a hyphen.
    if (label.startsWith('-')) return reject(`The domain part "${label}" starts with a hyphen.`);
    if (label.endsWith('-')) return reject(`The domain part "${label}" ends with a hyphen.`);
  }
  const topLevel = labels[labels.length - 1] ?? '';
  if (!TOP_LEVEL_LABEL.test(topLevel)) {
    if (DOTTED_NUMBERS.test(domain)) {
      // RFC 5321 §4.1.3: a bare IP address is not a domain; it must be written as a literal.
      return reject('The domain looks like an IP address; write one in brackets, as in user@[192.0.2.1].');
    }
    return reject('The top-level domain (the last part) must be letters only.');
  }
  return { valid: true, domain, ipLiteral: false };
}

/** Reports a leading, trailing or doubled dot, or null when the dots are well placed. */
function checkDots(domain: string): string | null {
  if (domain.startsWith('.')) return 'The domain starts with a dot.';
  // RFC 5321 §4.1.2: Domain = sub-domain *("." sub-domain); the root's trailing dot is not part
  // of an address.
  if (domain.endsWith('.')) return 'The domain ends with a dot.';
  if (domain.includes('..')) return 'The domain has two dots in a row.';
  return null;
}

// RFC 5321 §4.1.3: address-literal = "[" ( IPv4-address-literal / IPv6-address-literal /
// General-address-literal ) "]".
const IPV4_LITERAL = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;
const TAGGED_LITERAL = /^([A-Za-z0-9-]*[A-Za-z0-9]):(.*)$/s;
const IPV6_HEX = /^[0-9A-Fa-f]{1,4}$/;

function parseAddressLiteral(raw: string): MailDomain {
  if (!raw.endsWith(']') || raw.length < 2) return reject('The address literal does not end with "]".');
  const inner = raw.slice(1, -1);
  if (isIpv4Literal(inner)) return { valid: true, domain: raw, ipLiteral: true };
  if (isIpv6Literal(inner)) {
    return reject('An IPv6 address literal needs the "IPv6:" tag, as in [IPv6:2001:db8::1].');
  }
  const tagged = TAGGED_LITERAL.exec(inner);
  if (tagged === null) return reject('The address literal is not an IPv4 or IPv6 address.');
  // RFC 5234 §2.3: ABNF strings are case-insensitive, so "ipv6:" is the same tag as "IPv6:".
  if (tagged[1]?.toLowerCase() !== 'ipv6') {
    // RFC 5321 §4.1.3: a General-address-literal needs a tag registered with IANA; none is.
    return reject('The address literal has an unknown tag; only IPv6: is defined.');
  }
  const address = tagged[2] ?? '';
  if (!isIpv6Literal(address)) return reject('The address literal is not a valid IPv6 address.');
  return { valid: true, domain: `[IPv6:${address.toLowerCase()}]`, ipLiteral: true };
}

/** RFC 5321 §4.1.3: Snum = 1*3DIGIT, a decimal value from 0 through 255. */
function isIpv4Literal(text: string): boolean {
  const match = IPV4_LITERAL.exec(text);
  if (match === null) return false;
  for (let group = 1; group <= 4; group++) if (Number(match[group]) > 255) return false;
  return true;
}

/**
 * RFC 5321 §4.1.3 IPv6-addr: eight groups (IPv6-full), or six plus a dotted IPv4 address
 * (IPv6v4-full); with "::", which stands for at least two groups of zeros, at most six
 * groups (IPv6-comp), or four plus the IPv4 address (IPv6v4-comp).
 */
function isIpv6Literal(text: string): boolean {
  let groupsText = text;
  let groupsAvailable = 8;
  const lastColon = text.lastIndexOf(':');
  if (text.includes('.', lastColon)) {
    if (lastColon < 0 || !isIpv4Literal(text.slice(lastColon + 1))) return false;
    groupsAvailable = 6;
    // Keep the colon before the IPv4 part when it belongs to a "::".
    groupsText = text[lastColon - 1] === ':' ? text.slice(0, lastColon + 1) : text.slice(0, lastColon);
  }
  const halves = groupsText.split('::');
  if (halves.length > 2) return false;
  const groups = halves.map((half) => (half === '' ? [] : half.split(':')));
  for (const half of groups) for (const group of half) if (!IPV6_HEX.test(group)) return false;
  const count = groups.reduce((sum, half) => sum + half.length, 0);
  return halves.length === 1 ? count === groupsAvailable : count <= groupsAvailable - 2;
}

/** The first character that cannot appear in a host name before or after conversion. */
function firstCharacterOutsideHostName(text: string): string | null {
  for (const character of text) {
    const code = character.codePointAt(0) ?? 0;
    if (code >= 0x80) continue;
    if (
      (code >= 0x61 && code <= 0x7a) ||
      (code >= 0x41 && code <= 0x5a) ||
      (code >= 0x30 && code <= 0x39) ||
      code === 0x2d ||
      code === 0x2e
    ) {
      continue;
    }
    return character;
  }
  return null;
}

function describeStrayCharacter(character: string): string {
  const code = character.codePointAt(0) ?? 0;
  if (code < 0x20 || code === 0x7f) return 'The domain contains a control character.';
  if (character === ' ') return 'The domain contains a space.';
  if (character === '@') return 'The domain contains a second @.';
  if (character === '[' || character === ']') {
    return 'An address literal must be the whole domain, in brackets, as in user@[192.0.2.1].';
  }
  return `The domain contains "${character}", which is not allowed in a domain name.`;
}

function reject(reason: string): MailDomain {
  return { valid: false, reason };
}

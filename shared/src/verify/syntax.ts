// Address syntax as mail servers accept it on the wire: the RFC 5321 §4.1.2 Mailbox, that is
// Local-part "@" ( Domain / address-literal ), with RFC 6531 §3.3's UTF-8 extension. RFC 5322's
// comments, folding white space and obsolete forms (§4.4) are refused: RFC 5321 has no place
// for them in a RCPT TO, so an address that needs them cannot be delivered to.

import { parseMailDomain } from './domain.ts';
import type { SyntaxResult } from './inputs.ts';

/** RFC 5321 §4.5.3.1.1: a local part is at most 64 octets. */
export const MAX_LOCAL_PART_OCTETS = 64;
/**
 * RFC 5321 §4.5.3.1.3: a path is at most 256 octets including its angle brackets, so the
 * address inside is at most 254.
 */
export const MAX_ADDRESS_OCTETS = 254;

// RFC 5322 §3.2.3 atext, and RFC 6531 §3.3 "atext =/ UTF8-non-ascii". Non-ASCII controls
// (RFC 5198 §2 rules the C1 range out of text), spaces and invisible format characters are
// refused as their ASCII counterparts are (atext has no space or control); ZWNJ and ZWJ stay,
// since some scripts need them inside words.
const ATEXT = "A-Za-z0-9!#$%&'*+/=?^_`{|}~-";
const UTF8_ATEXT = `(?:[${ATEXT}]|(?![\\p{Cc}\\p{Cs}\\p{White_Space}]|(?![\\u200c\\u200d])\\p{Cf})[\\u0080-\\u{10ffff}])`;
const ASCII_DOT_ATOM = new RegExp(`^[${ATEXT}]+(?:\\.[${ATEXT}]+)*$`);
const UTF8_DOT_ATOM = new RegExp(`^${UTF8_ATEXT}+(?:\\.${UTF8_ATEXT}+)*$`, 'u');
const NON_ASCII = /[\u0080-\uffff]/;
const LONE_SURROGATE = /\p{Cs}/u;
const CONTROL = /\p{Cc}/u;
const UNICODE_SPACE = /\p{White_Space}/u;
const INVISIBLE = /(?![\u200c\u200d])\p{Cf}/u;

interface LocalPartFacts {
  quoted: boolean;
  needsSmtpUtf8: boolean;
  octets: number;
}

/**
 * Checks and normalises an address: trims it, lower-cases the domain and converts it to
 * A-labels (UTS #46), keeps the local part as written. Never throws.
 */
export function checkSyntax(input: string): SyntaxResult {
  const email = input.trim();
  const at = email.lastIndexOf('@');
  const localPart = at < 0 ? '' : email.slice(0, at);
  const rawDomain = at < 0 ? '' : email.slice(at + 1);
  const reject = (reason: string): SyntaxResult => ({
    valid: false,
    given: email,
    email,
    localPart,
    domain: rawDomain,
    reason,
  });

  if (email === '') return reject('The address is empty.');
  if (at < 0) return reject('The address has no @.');
  const local = checkLocalPart(localPart);
  if (typeof local === 'string') return reject(local);
  const domain = parseMailDomain(rawDomain);
  if (!domain.valid) return reject(domain.reason);
  // The domain is ASCII after conversion, so its length in characters is its length in octets.
  if (local.octets + 1 + domain.domain.length > MAX_ADDRESS_OCTETS) {
    return reject(`The address is longer than ${MAX_ADDRESS_OCTETS} bytes.`);
  }
  return {
    valid: true,
    given: email,
    email: `${localPart}@${domain.domain}`,
    localPart,
    domain: domain.domain,
    quotedLocalPart: local.quoted,
    ipLiteral: domain.ipLiteral,
    needsSmtpUtf8: local.needsSmtpUtf8,
  };
}

/** The local part's facts, or the reason it is not valid. */
function checkLocalPart(localPart: string): LocalPartFacts | string {
  if (localPart === '') return 'Nothing comes before the @.';
  const facts =
    localPart.charCodeAt(0) === 0x22 /* " */ ? checkQuotedString(localPart) : checkDotString(localPart);
  if (typeof facts === 'string') return facts;
  if (facts.octets > MAX_LOCAL_PART_OCTETS) {
    return `The part before the @ is longer than ${MAX_LOCAL_PART_OCTETS} bytes.`;
  }
  return facts;
}

/** RFC 5321 §4.1.2: Dot-string = Atom *("." Atom). */
function checkDotString(localPart: string): LocalPartFacts | string {
  if (ASCII_DOT_ATOM.test(localPart)) {
    return { quoted: false, needsSmtpUtf8: false, octets: localPart.length };
  }
  if (NON_ASCII.test(localPart) && UTF8_DOT_ATOM.test(localPart)) {
    return { quoted: false, needsSmtpUtf8: true, octets: utf8Length(localPart) };
  }
  return describeDotStringFault(localPart);
}

/** Why a dot-string failed, most specific fault first. */
function describeDotStringFault(localPart: string): string {
  if (localPart.startsWith('.')) return 'The part before the @ starts with a dot.';
  if (localPart.endsWith('.')) return 'The part before the @ ends with a dot.';
  if (localPart.includes('..')) return 'The part before the @ has two dots in a row.';
  // RFC 5322 §4.4 obs-local-part (word *("." word)) allows quoted words between dots, as in
  // a."b".c; RFC 5321 §4.1.2 does not: quotes must enclose the whole local part.
  if (localPart.includes('"')) {
    return 'The part before the @ mixes quoted and unquoted text (an obsolete form).';
  }
  if (localPart.includes('@')) {
    return 'The address has more than one @; an @ before the domain must be quoted.';
  }
  // RFC 5322 §3.2.2: comments are CFWS, which RFC 5321 addresses do not carry.
  if (localPart.includes('(') || localPart.includes(')')) {
    return 'The part before the @ contains a comment or a parenthesis.';
  }
  if (CONTROL.test(localPart)) return 'The part before the @ contains a control character.';
  if (LONE_SURROGATE.test(localPart)) return 'The part before the @ is not valid Unicode text.';
  if (UNICODE_SPACE.test(localPart)) {
    return 'The part before the @ contains a space; spaces need the part to be quoted.';
  }
  if (INVISIBLE.test(localPart)) return 'The part before the @ contains an invisible formatting character.';
  for (const character of localPart) {
    if (character !== '.' && !ASCII_DOT_ATOM.test(character) && !NON_ASCII.test(character)) {
      return `The part before the @ contains "${character}", which is only allowed inside quotes.`;
    }
  }
  return 'The part before the @ is not valid.';
}

/**
 * RFC 5321 §4.1.2: Quoted-string = DQUOTE *QcontentSMTP DQUOTE, where qtextSMTP is printable
 * ASCII and space except '"' and '\', quoted-pairSMTP is '\' and one printable ASCII character
 * or space, and RFC 6531 §3.3 adds UTF8-non-ascii to qtextSMTP.
 */
function checkQuotedString(localPart: string): LocalPartFacts | string {
  let needsSmtpUtf8 = false;
  const last = localPart.length - 1;
  for (let index = 1; index <= last; index++) {
    const code = localPart.charCodeAt(index);
    if (code === 0x22 /* " */) {
      if (index === last) return { quoted: true, needsSmtpUtf8, octets: utf8Length(localPart) };
      return 'The part before the @ mixes quoted and unquoted text (an obsolete form).';
    }
    if (code === 0x5c /* \ */) {
      const escaped = localPart.charCodeAt(index + 1);
      // RFC 5321 §4.1.2 quoted-pairSMTP = %d92 %d32-126; the escape is ASCII-only even under
      // RFC 6531.
      if (!(escaped >= 0x20 && escaped <= 0x7e) || index + 1 === last) {
        return index + 1 >= last
          ? 'The quoted part before the @ is not closed.'
          : 'A backslash inside the quotes must be followed by a printable ASCII character.';
      }
      index++;
      continue;
    }
    if (code < 0x20 || code === 0x7f) return 'The part before the @ contains a control character.';
    if (code >= 0x80) {
      needsSmtpUtf8 = true;
      // A lone UTF-16 surrogate cannot be written in UTF-8 (RFC 3629 §3); C1 controls are not
      // text (RFC 5198 §2).
      if (code >= 0xd800 && code <= 0xdfff) {
        const next = localPart.charCodeAt(index + 1);
        if (code > 0xdbff || !(next >= 0xdc00 && next <= 0xdfff)) {
          return 'The part before the @ is not valid Unicode text.';
        }
        index++;
      } else if (code <= 0x9f) {
        return 'The part before the @ contains a control character.';
      }
    }
  }
  return 'The quoted part before the @ is not closed.';
}

/** Octets of a well-formed string in UTF-8 (RFC 3629), without allocating. */
function utf8Length(text: string): number {
  let octets = 0;
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index);
    if (code < 0x80) octets += 1;
    else if (code < 0x800) octets += 2;
    else if (code >= 0xd800 && code <= 0xdbff) {
      octets += 4; // a surrogate pair is one code point above U+FFFF
      index++;
    } else octets += 3;
  }
  return octets;
}

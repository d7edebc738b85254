import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { SyntaxResult } from './inputs.ts';
import { checkSyntax, MAX_ADDRESS_OCTETS, MAX_LOCAL_PART_OCTETS } from './syntax.ts';

type Flags = { quoted?: boolean; ipLiteral?: boolean; smtpUtf8?: boolean };

// Lengths at and just over the limits, built rather than typed.
const local64 = 'a'.repeat(64);
const label63 = 'b'.repeat(63);
// 63 + 1 + 63 + 1 + 63 + 1 + 60 = 252 characters; with "x@" the address is exactly 254.
const domain252 = `${'c'.repeat(63)}.${'d'.repeat(63)}.${'e'.repeat(63)}.${'f'.repeat(60)}`;

// [input, normalised email, flags]; every row names the clause it checks.
const VALID: [input: string, email: string, flags: Flags][] = [
  ['alice@example.com', 'alice@example.com', {}], // RFC 5321 §4.1.2: Dot-string of one Atom
  ['alice.smith@example.com', 'alice.smith@example.com', {}], // RFC 5322 §3.2.3: dot-atom-text
  ['a@example.com', 'a@example.com', {}], // RFC 5322 §3.2.3: Atom = 1*atext, one is enough
  ['a.b.c.d.e@example.com', 'a.b.c.d.e@example.com', {}], // RFC 5321 §4.1.2: Atom *("." Atom)
  ['user+tag@example.com', 'user+tag@example.com', {}], // RFC 5322 §3.2.3: '+' is atext (RFC 5233 subaddress)
  ["o'brien@example.com", "o'brien@example.com", {}], // RFC 5322 §3.2.3: apostrophe is atext
  ['user-name@example.com', 'user-name@example.com', {}], // RFC 5322 §3.2.3: hyphen is atext
  ['user_name@example.com', 'user_name@example.com', {}], // RFC 5322 §3.2.3: underscore is atext
  ['!#$%&*+-/=?^_`{|}~@example.com', '!#$%&*+-/=?^_`{|}~@example.com', {}], // RFC 5322 §3.2.3: every special atext
  ['1234567890@example.com', '1234567890@example.com', {}], // RFC 5322 §3.2.3: digits are atext
  ['{x}@example.com', '{x}@example.com', {}], // RFC 5322 §3.2.3: braces are atext
  ['x=y@example.com', 'x=y@example.com', {}], // RFC 5322 §3.2.3: '=' is atext
  ['x@a.bc', 'x@a.bc', {}], // RFC 1035 §2.3.1: one-letter label
  ['x@a.b', 'x@a.b', {}], // RFC 1035 §2.3.1: one-letter labels throughout
  ['x@sub.domain.example.com', 'x@sub.domain.example.com', {}], // RFC 5321 §4.1.2: Domain = sub-domain *("." sub-domain)
  ['x@a.b.c.d.e.f.g.example.com', 'x@a.b.c.d.e.f.g.example.com', {}], // RFC 5321 §4.1.2: many sub-domains
  ['x@example.co.uk', 'x@example.co.uk', {}], // RFC 5321 §4.1.2: under a two-label public suffix
  ['x@3com.com', 'x@3com.com', {}], // RFC 1123 §2.1: a label may start with a digit
  ['x@123.example', 'x@123.example', {}], // RFC 1123 §2.1: an all-digit label below the top is fine
  ['x@a-b.com', 'x@a-b.com', {}], // RFC 1035 §2.3.1: hyphen inside a label
  ['x@a--b.com', 'x@a--b.com', {}], // RFC 1035 §2.3.1: consecutive hyphens inside a label
  ['x@ab--cd.com', 'x@ab--cd.com', {}], // RFC 5890 §2.3.1: reserved-LDH label is still LDH
  ['x@example.museum', 'x@example.museum', {}], // RFC 1035 §2.3.1: a long alphabetic TLD
  ['x@example.test', 'x@example.test', {}], // RFC 6761 §6.2: a reserved TLD is not a syntax error
  ['x@example.invalid', 'x@example.invalid', {}], // RFC 6761 §6.4: reserved, still well-formed
  ['x@example.unknowntld', 'x@example.unknowntld', {}], // RFC 1123 §2.1: an undelegated TLD is well-formed
  ['x@example.xn--p1ai', 'x@example.xn--p1ai', {}], // RFC 5890 §2.3.2.1: an A-label TLD
  ['x@xn--bcher-kva.test', 'x@xn--bcher-kva.test', {}], // RFC 5890 §2.3.2.1: an A-label as given
  ['x@XN--BCHER-KVA.TEST', 'x@xn--bcher-kva.test', {}], // RFC 5890 §2.3.2.1: A-labels compare case-insensitively
  ['x@bücher.test', 'x@xn--bcher-kva.test', {}], // RFC 5891 §4.4 / UTS #46 §4.2: U-label to A-label
  ['x@BÜCHER.TEST', 'x@xn--bcher-kva.test', {}], // UTS #46 §4.1: case mapped before conversion
  ['x@straße.de', 'x@xn--strae-oqa.de', {}], // UTS #46 §4: nontransitional, ß kept
  ['x@münchen.de', 'x@xn--mnchen-3ya.de', {}], // RFC 5891 §4.4: Punycode of a Latin U-label
  ['x@café.com', 'x@xn--caf-dma.com', {}], // RFC 5891 §4.4: precomposed é
  ['x@CAFÉ.COM', 'x@xn--caf-dma.com', {}], // UTS #46 §4.1: upper-case non-ASCII mapped
  ['x@例え.テスト', 'x@xn--r8jz45g.xn--zckzah', {}], // RFC 5890 §2.3.2.1: IDN TLD as an A-label
  ['x@пример.рф', 'x@xn--e1afmkfd.xn--p1ai', {}], // RFC 5891 §4.4: Cyrillic name and ccTLD
  ['x@ｇｍａｉｌ.com', 'x@gmail.com', {}], // UTS #46 §4.1: fullwidth letters map to ASCII
  ['x@ﬁ.com', 'x@fi.com', {}], // UTS #46 §4.1: compatibility ligature maps to "fi"
  ['x@a。b.com', 'x@a.b.com', {}], // UTS #46 §2.3: U+3002 is a label separator
  ['x@ａ.ｂ', 'x@a.b', {}], // UTS #46 §4.1: fullwidth labels
  ['x@\u00adgmail.com', 'x@gmail.com', {}], // UTS #46 §4.1: soft hyphen is ignored
  ['x@ex\u200bample.com', 'x@example.com', {}], // UTS #46 §4.1: zero-width space is ignored
  ['x@EXAMPLE.COM', 'x@example.com', {}], // RFC 5321 §2.4: domains are case-insensitive, lower-cased
  ['Alice@Example.COM', 'Alice@example.com', {}], // RFC 5321 §2.4: the local part's case is kept
  ['ALICE@EXAMPLE.COM', 'ALICE@example.com', {}], // RFC 5321 §2.4: local part may be case-sensitive
  ['  alice@example.com  ', 'alice@example.com', {}], // normalisation: surrounding spaces trimmed
  ['\talice@example.com\r\n', 'alice@example.com', {}], // normalisation: surrounding tab and CRLF trimmed
  ['\ufeffalice@example.com', 'alice@example.com', {}], // normalisation: a leading byte-order mark is white space
  [`${local64}@example.com`, `${local64}@example.com`, {}], // RFC 5321 §4.5.3.1.1: 64 octets exactly
  [`x@${label63}.com`, `x@${label63}.com`, {}], // RFC 1035 §2.3.4: a 63-octet label
  [`x@${domain252}`, `x@${domain252}`, {}], // RFC 5321 §4.5.3.1.3: 254 octets exactly
  ['"john doe"@example.com', '"john doe"@example.com', { quoted: true }], // RFC 5321 §4.1.2: qtextSMTP includes space
  ['"john.doe"@example.com', '"john.doe"@example.com', { quoted: true }], // RFC 5321 §4.1.2: quoting a dot-string is allowed
  ['""@example.com', '""@example.com', { quoted: true }], // RFC 5321 §4.1.2: *QcontentSMTP may be empty
  ['"a\\"b"@example.com', '"a\\"b"@example.com', { quoted: true }], // RFC 5321 §4.1.2: quoted-pairSMTP escapes a quote
  ['"a\\\\b"@example.com', '"a\\\\b"@example.com', { quoted: true }], // RFC 5321 §4.1.2: quoted-pairSMTP escapes a backslash
  ['"a\\ b"@example.com', '"a\\ b"@example.com', { quoted: true }], // RFC 5321 §4.1.2: quoted-pairSMTP %d32
  ['"a@b"@example.com', '"a@b"@example.com', { quoted: true }], // RFC 5321 §4.1.2: '@' is qtextSMTP
  ['"a..b"@example.com', '"a..b"@example.com', { quoted: true }], // RFC 5321 §4.1.2: dots inside quotes are text
  ['".a."@example.com', '".a."@example.com', { quoted: true }], // RFC 5321 §4.1.2: edge dots inside quotes
  ['"(comment)"@example.com', '"(comment)"@example.com', { quoted: true }], // RFC 5321 §4.1.2: parentheses are qtextSMTP
  ['"a,b;c:d<e>f[g]"@example.com', '"a,b;c:d<e>f[g]"@example.com', { quoted: true }], // RFC 5322 §3.2.3: specials are fine in quotes
  ['"Alice"@Example.com', '"Alice"@example.com', { quoted: true }], // RFC 5321 §2.4: quoted local part's case kept
  ['"jürgen"@example.com', '"jürgen"@example.com', { quoted: true, smtpUtf8: true }], // RFC 6531 §3.3: qtextSMTP =/ UTF8-non-ascii
  ['jürgen@example.com', 'jürgen@example.com', { smtpUtf8: true }], // RFC 6531 §3.3: atext =/ UTF8-non-ascii
  ['Jürgen@Bücher.Test', 'Jürgen@xn--bcher-kva.test', { smtpUtf8: true }], // RFC 6531 §3.3 with a U-label domain
  ['ñoño@example.com', 'ñoño@example.com', { smtpUtf8: true }], // RFC 6531 §3.3: two-octet UTF-8
  ['用户@例子.广告', '用户@xn--fsqu00a.xn--4rr70v', { smtpUtf8: true }], // RFC 6531 §3.3: three-octet UTF-8
  ['δοκιμή@παράδειγμα.δοκιμή', 'δοκιμή@xn--hxajbheg2az3al.xn--jxalpdlp', { smtpUtf8: true }], // RFC 6531 §3.3 with IDN
  ['emoji😀@example.com', 'emoji😀@example.com', { smtpUtf8: true }], // RFC 6531 §3.3: four-octet UTF-8
  ['a\u200db@example.com', 'a\u200db@example.com', { smtpUtf8: true }], // RFC 6531 §3.3: ZWJ is part of some scripts' words
  ['ü.ö@example.com', 'ü.ö@example.com', { smtpUtf8: true }], // RFC 6531 §3.3: UTF-8 atoms joined by dots
  [`${'é'.repeat(32)}@example.com`, `${'é'.repeat(32)}@example.com`, { smtpUtf8: true }], // RFC 5321 §4.5.3.1.1: 64 octets in UTF-8
  [`${'😀'.repeat(16)}@example.com`, `${'😀'.repeat(16)}@example.com`, { smtpUtf8: true }], // RFC 5321 §4.5.3.1.1: 64 octets
  ['user@[192.0.2.1]', 'user@[192.0.2.1]', { ipLiteral: true }], // RFC 5321 §4.1.3: IPv4-address-literal
  ['user@[0.0.0.0]', 'user@[0.0.0.0]', { ipLiteral: true }], // RFC 5321 §4.1.3: Snum lower bound
  ['user@[255.255.255.255]', 'user@[255.255.255.255]', { ipLiteral: true }], // RFC 5321 §4.1.3: Snum upper bound
  ['user@[192.000.002.001]', 'user@[192.000.002.001]', { ipLiteral: true }], // RFC 5321 §4.1.3: Snum = 1*3DIGIT
  ['a.b@[192.0.2.1]', 'a.b@[192.0.2.1]', { ipLiteral: true }], // RFC 5321 §4.1.2: Mailbox = Local-part "@" address-literal
  ['user@[IPv6:2001:db8::1]', 'user@[IPv6:2001:db8::1]', { ipLiteral: true }], // RFC 5321 §4.1.3: IPv6-comp
  ['user@[IPv6:2001:DB8::1]', 'user@[IPv6:2001:db8::1]', { ipLiteral: true }], // RFC 5321 §4.1.3: HEXDIG case folded
  ['user@[ipv6:2001:db8::1]', 'user@[IPv6:2001:db8::1]', { ipLiteral: true }], // RFC 5234 §2.3: the tag is case-insensitive
  ['user@[IPv6:2001:db8:0:0:0:0:0:1]', 'user@[IPv6:2001:db8:0:0:0:0:0:1]', { ipLiteral: true }], // RFC 5321 §4.1.3: IPv6-full
  ['user@[IPv6:::]', 'user@[IPv6:::]', { ipLiteral: true }], // RFC 5321 §4.1.3: IPv6-comp with no groups
  ['user@[IPv6:::1]', 'user@[IPv6:::1]', { ipLiteral: true }], // RFC 5321 §4.1.3: IPv6-comp, groups after
  ['user@[IPv6:1::]', 'user@[IPv6:1::]', { ipLiteral: true }], // RFC 5321 §4.1.3: IPv6-comp, groups before
  ['user@[IPv6:1:2:3::5:6]', 'user@[IPv6:1:2:3::5:6]', { ipLiteral: true }], // RFC 5321 §4.1.3: six groups around "::"
  ['user@[IPv6:::ffff:192.0.2.1]', 'user@[IPv6:::ffff:192.0.2.1]', { ipLiteral: true }], // RFC 5321 §4.1.3: IPv6v4-comp
  ['user@[IPv6:1:2:3:4:5:6:192.0.2.1]', 'user@[IPv6:1:2:3:4:5:6:192.0.2.1]', { ipLiteral: true }], // RFC 5321 §4.1.3: IPv6v4-full
  ['user@[IPv6:::192.0.2.1]', 'user@[IPv6:::192.0.2.1]', { ipLiteral: true }], // RFC 5321 §4.1.3: IPv6v4-comp, no groups
  ['"quoted"@[192.0.2.1]', '"quoted"@[192.0.2.1]', { quoted: true, ipLiteral: true }], // RFC 5321 §4.1.2: both at once
];

const tooLongDomain = `${label63}.${label63}.${label63}.${'g'.repeat(62)}`; // 254 characters

// [input, what the reason must say]; every row names the clause it checks.
const INVALID: [input: string, reason: RegExp][] = [
  ['', /empty/], // RFC 5321 §4.1.2: Mailbox needs a local part and a domain
  ['   ', /empty/], // normalisation: only white space is empty once trimmed
  ['plainaddress', /no @/], // RFC 5321 §4.1.2: Mailbox = Local-part "@" Domain
  ['alice.example.com', /no @/], // RFC 5321 §4.1.2: the "@" is required
  ['@example.com', /before the @/], // RFC 5321 §4.1.2: Atom = 1*atext, the local part cannot be empty
  ['alice@', /after the @/], // RFC 5321 §4.1.2: Domain cannot be empty
  ['@', /before the @/], // RFC 5321 §4.1.2: both parts missing
  ['.alice@example.com', /starts with a dot/], // RFC 5322 §3.2.3: dot-atom-text starts with atext
  ['alice.@example.com', /ends with a dot/], // RFC 5322 §3.2.3: dot-atom-text ends with atext
  ['trailing.dot.@example.com', /ends with a dot/], // RFC 5322 §3.2.3: no trailing dot
  ['al..ice@example.com', /two dots/], // RFC 5322 §3.2.3: no empty atom between dots
  ['.@example.com', /starts with a dot/], // RFC 5322 §3.2.3: a lone dot is no atom
  ['a."b".c@example.com', /obsolete/], // RFC 5322 §4.4: obs-local-part, not allowed by RFC 5321 §4.1.2
  ['"a".b@example.com', /obsolete/], // RFC 5322 §4.4: quoted word then atom
  ['a."b"@example.com', /obsolete/], // RFC 5322 §4.4: atom then quoted word
  ['"a"."b"@example.com', /obsolete/], // RFC 5322 §4.4: two quoted words
  ['a"b@example.com', /obsolete/], // RFC 5321 §4.1.2: DQUOTE is not atext
  ['"a"b"@example.com', /obsolete/], // RFC 5321 §4.1.2: an unescaped quote ends the Quoted-string
  ['a@b@example.com', /more than one @/], // RFC 5321 §4.1.2: '@' is not atext
  ['john doe@example.com', /space/], // RFC 5322 §3.2.3: space is not atext
  [' john doe @example.com', /space/], // RFC 5322 §3.2.3: inner space survives trimming
  ['john(comment)@example.com', /comment/], // RFC 5322 §3.2.2: CFWS comments are not in RFC 5321
  ['(comment)john@example.com', /comment/], // RFC 5322 §3.2.2: a leading comment
  ['john@(comment)example.com', /"\("/], // RFC 5322 §3.2.2: a comment in the domain
  ['a,b@example.com', /","/], // RFC 5322 §3.2.3: ',' is a special
  ['a;b@example.com', /";"/], // RFC 5322 §3.2.3: ';' is a special
  ['a:b@example.com', /":"/], // RFC 5322 §3.2.3: ':' is a special
  ['a<b@example.com', /"<"/], // RFC 5322 §3.2.3: '<' is a special
  ['a>b@example.com', /">"/], // RFC 5322 §3.2.3: '>' is a special
  ['a[b@example.com', /"\["/], // RFC 5322 §3.2.3: '[' is a special
  ['a]b@example.com', /"\]"/], // RFC 5322 §3.2.3: ']' is a special
  ['a\\b@example.com', /"\\"/], // RFC 5322 §3.2.3: backslash only escapes inside quotes
  ['<alice@example.com>', /"<"/], // RFC 5321 §4.1.2: the angle brackets of a Path are not the address
  ['Alice <alice@example.com>', /space/], // RFC 5322 §3.4: a name-addr is not an addr-spec
  ['alice@example.com (Alice)', /space/], // RFC 5322 §3.2.2: a trailing comment is CFWS
  ['a\u0000b@example.com', /control/], // RFC 5322 §3.2.3: NUL is not atext
  ['a\r\nb@example.com', /control/], // RFC 5322 §3.2.2: folding white space is not in RFC 5321
  ['a\tb@example.com', /control/], // RFC 5322 §3.2.3: HTAB is not atext
  ['a\u007fb@example.com', /control/], // RFC 5322 §3.2.3: DEL is not atext
  ['a\u0085b@example.com', /control/], // RFC 5198 §2: C1 controls are not Net-Unicode text
  ['a\u00a0b@example.com', /space/], // RFC 6531 §3.3: a no-break space is white space, like ASCII space
  ['a\u3000b@example.com', /space/], // RFC 6531 §3.3: ideographic space is white space
  ['a\u200bb@example.com', /invisible/], // RFC 6531 §3.3: an invisible format character is held out of atext like a control
  ['a\u2060b@example.com', /invisible/], // RFC 6531 §3.3: word joiner, invisible, held out like a control
  ['a\ud800b@example.com', /Unicode/], // RFC 6531 §3.3 / RFC 3629 §3: a lone surrogate has no UTF-8 form
  ['a\udc00@example.com', /Unicode/], // RFC 3629 §3: a lone low surrogate
  ['"unclosed@example.com', /not closed/], // RFC 5321 §4.1.2: Quoted-string ends with DQUOTE
  ['"@example.com', /not closed/], // RFC 5321 §4.1.2: a lone DQUOTE
  ['"a\\"@example.com', /not closed/], // RFC 5321 §4.1.2: an escaped quote does not close
  ['"a\\@example.com', /not closed/], // RFC 5321 §4.1.2: a trailing backslash
  ['"a\u0000"@example.com', /control/], // RFC 5321 §4.1.2: qtextSMTP is %d32-126 without controls
  ['"a\tb"@example.com', /control/], // RFC 5321 §4.1.2: no FWS inside an SMTP Quoted-string
  ['"a\r\nb"@example.com', /control/], // RFC 5322 §3.2.4 FWS inside quotes is not RFC 5321
  ['"\u0085"@example.com', /control/], // RFC 5198 §2: a C1 control in quotes
  ['"a\ud800"@example.com', /Unicode/], // RFC 3629 §3: a lone surrogate in quotes
  ['"a\\é"@example.com', /backslash/], // RFC 5321 §4.1.2: quoted-pairSMTP escapes ASCII only
  ['"a\\\u0001"@example.com', /backslash/], // RFC 5321 §4.1.2: quoted-pairSMTP is %d92 %d32-126
  [`${'a'.repeat(65)}@example.com`, /64 bytes/], // RFC 5321 §4.5.3.1.1: over 64 octets
  [`${'é'.repeat(33)}@example.com`, /64 bytes/], // RFC 5321 §4.5.3.1.1: 33 characters but 66 octets
  [`${'😀'.repeat(17)}@example.com`, /64 bytes/], // RFC 5321 §4.5.3.1.1: 68 octets of four-octet UTF-8
  [`"${'a'.repeat(63)}"@example.com`, /64 bytes/], // RFC 5321 §4.5.3.1.1: the quotes count
  [`xy@${domain252}`, /254 bytes/], // RFC 5321 §4.5.3.1.3: 255 octets
  [`x@${label63}a.com`, /63 characters/], // RFC 1035 §2.3.4: a 64-octet label
  [`x@${tooLongDomain}`, /253 characters/], // RFC 1035 §2.3.4: a 254-character name
  ['x@localhost', /at least one dot/], // RFC 5321 §2.3.5: a domain in an address is fully qualified
  ['x@com', /at least one dot/], // RFC 5321 §2.3.5: a TLD alone is no mail domain
  ['x@münchen', /at least one dot/], // RFC 5321 §2.3.5: one label after conversion too
  ['x@.example.com', /starts with a dot/], // RFC 5321 §4.1.2: sub-domain cannot be empty
  ['x@example.com.', /ends with a dot/], // RFC 5321 §4.1.2: no root dot in an address
  ['x@example..com', /two dots/], // RFC 5321 §4.1.2: no empty sub-domain
  ['x@bücher..test', /two dots/], // RFC 5321 §4.1.2: no empty sub-domain before conversion
  ['x@bücher.test.', /ends with a dot/], // RFC 5321 §4.1.2: no root dot before conversion
  ['x@example.com\u3002', /ends with a dot/], // UTS #46 §2.3: U+3002 maps to a trailing dot
  ['x@-example.com', /starts with a hyphen/], // RFC 1035 §2.3.1: a label starts with a letter or digit
  ['x@example-.com', /ends with a hyphen/], // RFC 1035 §2.3.1: a label ends with a letter or digit
  ['x@example.-com', /starts with a hyphen/], // RFC 1035 §2.3.1: the TLD too
  ['x@-bücher.test', /starts with a hyphen/], // RFC 5891 §4.2.3.1: a U-label does not start with a hyphen
  ['x@bücher-.test', /ends with a hyphen/], // RFC 5891 §4.2.3.1: nor end with one
  ['x@xn--.com', /ends with a hyphen/], // RFC 5890 §2.3.2.1: an empty A-label
  ['x@ex_ample.com', /"_"/], // RFC 1035 §2.3.1: '_' is not LDH (the URL parser lets it through)
  ['x@ex%41mple.com', /"%"/], // RFC 1035 §2.3.1: '%' is not LDH (the URL parser would decode it)
  ['x@bücher%41.test', /"%"/], // RFC 1035 §2.3.1: refused before the URL parser decodes it
  ['x@example.com/path', /"\/"/], // RFC 1035 §2.3.1: the URL parser would cut the host at '/'
  ['x@bücher.test/evil', /"\/"/], // RFC 1035 §2.3.1: no path hidden behind a U-label
  ['x@example.com?q', /"\?"/], // RFC 1035 §2.3.1: '?' is not LDH
  ['x@example.com#frag', /"#"/], // RFC 1035 §2.3.1: '#' is not LDH
  ['x@example.com:25', /":"/], // RFC 1035 §2.3.1: a port is not part of a domain
  ['x@exam*ple.com', /"\*"/], // RFC 1035 §2.3.1: '*' is not LDH
  ['x@exa mple.com', /space/], // RFC 1035 §2.3.1: space is not LDH
  ['x@example.com\u0000', /control/], // RFC 1035 §2.3.1: NUL is not LDH
  ['x@a＿b.com', /"_"/], // UTS #46 §4.1: fullwidth low line maps to '_', still not LDH
  ['x@a／b.com', /internationalised/], // UTS #46 §4.1: fullwidth solidus maps to a forbidden '/'
  ['x@bücher_x.test', /"_"/], // RFC 1035 §2.3.1: '_' beside a U-label
  ['x@192.0.2.1', /IP address/], // RFC 5321 §4.1.3: an IP address must be a bracketed literal
  ['x@1.2.3.4.5', /IP address/], // RFC 1123 §2.1: an all-numeric name is no host name
  ['x@１２７.０.０.１', /IP address/], // UTS #46 §4.1: fullwidth digits become an IPv4 address
  ['x@example.123', /letters only/], // RFC 1123 §2.1: the top-level label is alphabetic
  ['x@example.c0m', /letters only/], // RFC 1123 §2.1: no digit in the TLD
  ['x@example.0x7f', /letters only/], // RFC 1123 §2.1: a hex number is no TLD
  ['x@xn--zz.com', /Punycode/], // RFC 5890 §2.3.2.1: an A-label must decode
  ['x@example.xn--zz', /Punycode/], // RFC 5890 §2.3.2.1: also in the TLD
  ['x@xn--ab--cd.com', /Punycode/], // RFC 3492 §6.2: invalid Punycode digits
  ['x@a]b.com', /brackets/], // RFC 5321 §4.1.3: a bracket outside an address literal
  ['x@[192.0.2.1', /"\]"/], // RFC 5321 §4.1.3: address-literal ends with "]"
  ['x@[192.0.2.1]extra', /"\]"/], // RFC 5321 §4.1.3: nothing after the literal
  ['x@[]', /IPv4 or IPv6/], // RFC 5321 §4.1.3: an empty literal
  ['x@[192.0.2.256]', /IPv4 or IPv6/], // RFC 5321 §4.1.3: Snum is at most 255
  ['x@[192.0.2]', /IPv4 or IPv6/], // RFC 5321 §4.1.3: four Snums
  ['x@[192.0.2.1.5]', /IPv4 or IPv6/], // RFC 5321 §4.1.3: not five
  ['x@[1920.0.2.1]', /IPv4 or IPv6/], // RFC 5321 §4.1.3: Snum = 1*3DIGIT
  ['x@[2001:db8::1]', /IPv6:/], // RFC 5321 §4.1.3: IPv6-address-literal = "IPv6:" IPv6-addr
  ['x@[IPv6:2001:db8::g]', /IPv6 address/], // RFC 5321 §4.1.3: IPv6-hex = 1*4HEXDIG
  ['x@[IPv6:12345::1]', /IPv6 address/], // RFC 5321 §4.1.3: at most four HEXDIG
  ['x@[IPv6:1:2:3:4:5:6:7]', /IPv6 address/], // RFC 5321 §4.1.3: IPv6-full has eight groups
  ['x@[IPv6:1:2:3:4:5:6:7:8:9]', /IPv6 address/], // RFC 5321 §4.1.3: not nine
  ['x@[IPv6:1:2:3:4:5:6:7::]', /IPv6 address/], // RFC 5321 §4.1.3: "::" with more than six groups
  ['x@[IPv6:1::2::3]', /IPv6 address/], // RFC 5321 §4.1.3: one "::" at most
  ['x@[IPv6::1]', /IPv6 address/], // RFC 5321 §4.1.3: a single leading colon
  ['x@[IPv6:1:2:3:4:5::192.0.2.1]', /IPv6 address/], // RFC 5321 §4.1.3: IPv6v4-comp has at most four groups
  ['x@[IPv6:1:2:3:4:5:192.0.2.1]', /IPv6 address/], // RFC 5321 §4.1.3: IPv6v4-full has six groups
  ['x@[IPv6:::ffff:192.0.2.256]', /IPv6 address/], // RFC 5321 §4.1.3: the IPv4 part's Snum range
  ['x@[IPv6:]', /IPv6 address/], // RFC 5321 §4.1.3: an empty IPv6-addr
  ['x@[x-tag:foo]', /unknown tag/], // RFC 5321 §4.1.3: General-address-literal needs a registered tag
  ['x@[smtp:192.0.2.1]', /unknown tag/], // RFC 5321 §4.1.3: no other tag is registered
];

function expectValid(result: SyntaxResult): asserts result is Extract<SyntaxResult, { valid: true }> {
  expect(result.valid, result.valid ? '' : result.reason).toBe(true);
}

describe('checkSyntax', () => {
  it('has at least 150 table cases', () => {
    expect(VALID.length + INVALID.length).toBeGreaterThanOrEqual(150);
  });

  it.each(VALID)('accepts %j', (input, email, flags) => {
    const result = checkSyntax(input);
    expectValid(result);
    expect(result.email).toBe(email);
    expect(result.quotedLocalPart).toBe(flags.quoted ?? false);
    expect(result.ipLiteral).toBe(flags.ipLiteral ?? false);
    expect(result.needsSmtpUtf8).toBe(flags.smtpUtf8 ?? false);
  });

  it.each(INVALID)('rejects %j', (input, reason) => {
    const result = checkSyntax(input);
    expect(result.valid).toBe(false);
    if (result.valid) return;
    expect(result.reason).toMatch(reason);
    expect(result.reason).toMatch(/^[A-Z].*\.$/); // one plain sentence
    expect(result.email).toBe(input.trim());
  });

  it.each<[string, string, string]>([
    ['  no-at-sign  ', '', ''],
    ['a@b@example.com', 'a@b', 'example.com'],
    ['"a@b"@', '"a@b"', ''],
    ['Alice@Example.COM.', 'Alice', 'Example.COM.'],
  ])('splits a rejected %j at its last @', (input, localPart, domain) => {
    const result = checkSyntax(input);
    expect(result).toMatchObject({ valid: false, localPart, domain });
  });

  it('splits a valid address into the parts the email is made of', () => {
    expect(checkSyntax(' "a@b"@Bücher.TEST ')).toEqual({
      valid: true,
      given: '"a@b"@Bücher.TEST',
      email: '"a@b"@xn--bcher-kva.test',
      localPart: '"a@b"',
      domain: 'xn--bcher-kva.test',
      quotedLocalPart: true,
      ipLiteral: false,
      needsSmtpUtf8: false,
    });
  });

  it('exports the RFC 5321 §4.5.3.1 limits', () => {
    expect([MAX_LOCAL_PART_OCTETS, MAX_ADDRESS_OCTETS]).toEqual([64, 254]);
  });
});

// Addresses built from the grammar's pieces, so that most are valid and every valid form is
// reached: dot-atoms with UTF-8, quoted strings with escapes, U-labels with characters UTS #46
// maps or ignores, upper case, address literals, and white space around them.
const atext = fc.constantFrom(..."abcXYZ019!#$%&'*+-/=?^_`{|}~".split(''), 'ü', 'ß', '用', '😀', '\u200d');
const dotString = fc
  .array(fc.string({ unit: atext, minLength: 1, maxLength: 8 }), { minLength: 1, maxLength: 4 })
  .map((atoms) => atoms.join('.'));
const qcontent = fc.constantFrom('a', 'Z', ' ', '.', '@', '(', ',', '\\"', '\\\\', '\\ ', 'ü', '😀');
const quotedString = fc.string({ unit: qcontent, maxLength: 10 }).map((content) => `"${content}"`);
const labelCharacter = fc.constantFrom('a', 'B', 'z', '0', '9', '-', 'ü', 'ß', 'É', 'ｇ', '\u00ad', '例');
const hostName = fc
  .tuple(
    fc.array(fc.string({ unit: labelCharacter, minLength: 1, maxLength: 10 }), {
      minLength: 1,
      maxLength: 3,
    }),
    fc.constantFrom('com', 'TEST', 'de', 'xn--p1ai', 'рф', 'テスト'),
    fc.constantFrom('.', '。'),
  )
  .map(([labels, topLevel, dot]) => [...labels, topLevel].join(dot));
const addressLiteral = fc.oneof(
  fc.ipV4().map((address) => `[${address}]`),
  fc.ipV6().map((address) => `[IPv6:${address.toUpperCase()}]`),
);
const builtAddress = fc
  .tuple(
    fc.oneof(dotString, quotedString),
    fc.oneof(hostName, hostName, addressLiteral),
    fc.constantFrom('', ' ', '\t'),
  )
  .map(([local, domain, padding]) => `${padding}${local}@${domain}${padding}`);
// Noise around the same pieces: specials, controls, a lone surrogate, stray quotes and brackets.
const noise = fc.constantFrom(
  ...'.-_@"\\ []():,;<>%/#?*'.split(''),
  '::',
  'xn--',
  '\u0000',
  '\r\n',
  '\u0085',
  '\ud800',
  '\u200b',
);
const addressLike = fc.oneof(
  builtAddress,
  builtAddress,
  fc.emailAddress(),
  fc.tuple(builtAddress, fc.nat(), noise).map(([address, at, extra]) => {
    const index = at % (address.length + 1);
    return address.slice(0, index) + extra + address.slice(index);
  }),
  fc.string({ unit: 'binary' }),
);

describe('checkSyntax properties', () => {
  it('never throws, and answers valid or a reason, for any string', () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.string({ unit: 'binary' }), fc.string({ unit: 'grapheme' }), addressLike),
        (input) => {
          const result = checkSyntax(input);
          expect(result.valid || result.reason.length > 0).toBe(true);
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('is idempotent on its own normalised output', () => {
    fc.assert(
      fc.property(addressLike, (input) => {
        const result = checkSyntax(input);
        // Everything but the address as given, which was another spelling.
        if (result.valid) expect(checkSyntax(result.email)).toEqual({ ...result, given: result.email });
      }),
      { numRuns: 2000 },
    );
  });

  it("makes a valid result's email of its local part and domain, within the limits", () => {
    fc.assert(
      fc.property(addressLike, (input) => {
        const result = checkSyntax(input);
        if (!result.valid) return;
        expect(result.email).toBe(`${result.localPart}@${result.domain}`);
        expect(result.domain).toBe(result.domain.toLowerCase().replace('[ipv6:', '[IPv6:'));
        expect(new TextEncoder().encode(result.localPart).length).toBeLessThanOrEqual(MAX_LOCAL_PART_OCTETS);
        expect(new TextEncoder().encode(result.email).length).toBeLessThanOrEqual(MAX_ADDRESS_OCTETS);
      }),
      { numRuns: 2000 },
    );
  });

  it('accepts the addresses fast-check generates as RFC 5322 addr-specs', () => {
    fc.assert(
      fc.property(fc.emailAddress(), (address) => {
        const result = checkSyntax(address);
        expectValid(result);
        expect(result.email.toLowerCase()).toBe(address.toLowerCase());
      }),
      { numRuns: 500 },
    );
  });
});

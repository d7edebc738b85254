// Likely typos in the domain of an address: "gmial.com" for gmail.com, "acme.con" for acme.com.
//
// Candidates come from two places:
//   1. POPULAR_MAIL_DOMAINS: the input against each popular mailbox domain, whole domain to
//      whole domain (so "hotmail.co" and "hotmial.com" are both one edit from hotmail.com);
//   2. POPULAR_TLDS: when the input's top-level domain is not delegated at all ("con", "cmo"),
//      the same name under a popular TLD one edit away.
//
// Confidence of a candidate target:
//
//   confidence = (1 − POPULARITY_STEP × rank) × (1 − edits / (nameLength + 1))
//
//   edits       optimal string alignment distance (Damerau–Levenshtein where an adjacent
//               transposition, "gmial", counts as one edit), at most MAX_TYPO_EDITS
//   nameLength  length of the target's registrable name: "gmail" in gmail.com, "hotmail" in
//               hotmail.co.uk, "acme" in acme.com (for a TLD fix, the label before the TLD);
//               the + 1 is its dot. One edit is a bigger share of a short name, and short
//               names have real neighbours: aon.com is one edit from aol.com, life.com from
//               live.com
//   rank        the target's place in its popularity list, 0 for the most used: a less used
//               target is a less likely intention
//
// rounded to three decimals. Worked values: gmial.com → gmail.com is 1 × (1 − 1/6) = 0.833;
// hotmial.com → hotmail.com is 0.996 × (1 − 1/8) ≈ 0.871; life.com → live.com is
// 0.988 × (1 − 1/5) ≈ 0.790, under the threshold. More edits always give a lower confidence.

import { parse } from 'tldts';
import type { TypoSuggestion } from '../contract/api.ts';
import { isFreeProviderDomain } from './lists.ts';
import { PROVIDER_DOMAINS, providerFamilyOf } from './providers.ts';

/** Suggestions under this confidence are not made. */
export const TYPO_CONFIDENCE_THRESHOLD = 0.8;
/** Confidence lost per place down a popularity list. */
export const POPULARITY_STEP = 0.002;
/** More edits than this is a different domain, not a typo. */
export const MAX_TYPO_EDITS = 2;

/**
 * Mailbox domains people mistype, roughly most used first. Regional providers come last, where the
 * popularity weight keeps their short names from matching neighbours (grange.fr, libera.it)
 * while they still count as known domains that are never "corrected".
 */
export const POPULAR_MAIL_DOMAINS: readonly string[] = [
  'gmail.com',
  'yahoo.com',
  'hotmail.com',
  'outlook.com',
  'icloud.com',
  'aol.com',
  'live.com',
  'msn.com',
  'hotmail.co.uk',
  'yahoo.co.uk',
  'googlemail.com',
  'me.com',
  'protonmail.com',
  'proton.me',
  'ymail.com',
  'comcast.net',
  'yandex.ru',
  'mail.ru',
  'gmx.de',
  'web.de',
  'gmx.net',
  'gmx.com',
  'mail.com',
  'yahoo.fr',
  'hotmail.fr',
  'yahoo.de',
  'hotmail.de',
  'yahoo.ca',
  'yahoo.com.br',
  'hotmail.com.br',
  'yahoo.co.in',
  'yahoo.co.jp',
  'live.co.uk',
  'rocketmail.com',
  'btinternet.com',
  'sbcglobal.net',
  'bellsouth.net',
  'earthlink.net',
  'verizon.net',
  'att.net',
  'cox.net',
  't-online.de',
  'rediffmail.com',
  'yandex.com',
  'mac.com',
  'zoho.com',
  'fastmail.com',
  'qq.com',
  '163.com',
  'naver.com',
  'orange.fr',
  'free.fr',
  'laposte.net',
  'wanadoo.fr',
  'libero.it',
  'seznam.cz',
  'wp.pl',
  'o2.pl',
  'rambler.ru',
];

/** Top-level domains a mistyped, undelegated TLD is corrected to, most used first. */
export const POPULAR_TLDS: readonly string[] = [
  'com',
  'net',
  'org',
  'edu',
  'gov',
  'de',
  'uk',
  'fr',
  'it',
  'es',
  'nl',
  'ru',
  'br',
  'ca',
  'au',
  'info',
  'io',
  'us',
];

/**
 * Real domains one edit from a popular mailbox domain, never taken for its typo: cloud.com is
 * Cloud Software Group's, not a mistyped icloud.com.
 */
export const NOT_TYPOS: ReadonlySet<string> = new Set(['cloud.com']);

// RFC 6761 §6, RFC 6762, RFC 7686, RFC 9476: names that are undelegated on purpose.
const SPECIAL_USE_TLDS: ReadonlySet<string> = new Set([
  'test',
  'example',
  'invalid',
  'localhost',
  'local',
  'onion',
  'alt',
]);

interface Target {
  domain: string;
  nameLength: number;
  rank: number;
  /** The most edits that still reach the threshold for this target; 0 when none does. */
  maxEdits: number;
}

// Every popular domain is a registrable domain, so its name is its first label.
const MAIL_TARGETS: readonly Target[] = POPULAR_MAIL_DOMAINS.map((domain, rank) => {
  const nameLength = domain.indexOf('.');
  let maxEdits = MAX_TYPO_EDITS;
  while (maxEdits > 0 && typoConfidence(maxEdits, nameLength, rank) < TYPO_CONFIDENCE_THRESHOLD) maxEdits--;
  return { domain, nameLength, rank, maxEdits };
}).filter((target) => target.maxEdits > 0);
const TLD_SET: ReadonlySet<string> = new Set(POPULAR_TLDS);
const KNOWN_DOMAINS: ReadonlySet<string> = new Set([...POPULAR_MAIL_DOMAINS, ...PROVIDER_DOMAINS]);

/** The confidence formula above. */
export function typoConfidence(edits: number, nameLength: number, rank: number): number {
  const confidence = (1 - POPULARITY_STEP * rank) * (1 - edits / (nameLength + 1));
  return Math.round(Math.max(0, confidence) * 1000) / 1000;
}

/** The domain the address most likely meant, or null when none is likely enough. */
export function suggestTypo(domain: string): TypoSuggestion | null {
  const name = domain.toLowerCase(); // checkSyntax's domains are already; others may not be
  if (KNOWN_DOMAINS.has(name) || NOT_TYPOS.has(name) || name.startsWith('[')) return null;

  let best: { suggested: string; confidence: number } | null = null;
  // Targets that cannot reach the threshold even at one edit were dropped when the list was
  // built, and each target is searched only as far as it can still reach it: a candidate under
  // the threshold could never be returned.
  for (const target of MAIL_TARGETS) {
    if (Math.abs(target.domain.length - name.length) > target.maxEdits) continue;
    const edits = editDistance(name, target.domain, target.maxEdits);
    if (edits > target.maxEdits) continue;
    const confidence = typoConfidence(edits, target.nameLength, target.rank);
    if (best === null || confidence > best.confidence) best = { suggested: target.domain, confidence };
  }
  const tldFix = correctTopLevelDomain(name);
  if (tldFix !== null && (best === null || tldFix.confidence > best.confidence)) {
    best = tldFix;
  }

  if (best === null || best.confidence < TYPO_CONFIDENCE_THRESHOLD) return null;
  // Checked last because it is the dearest test: a domain people really use (gmx.com, mail.com,
  // ymail.com, yahoo.co.uk) is never a typo, however close it is to a more popular one.
  if (isFreeProviderDomain(name) || providerFamilyOf(name) !== null) return null;
  return { original: domain, suggested: best.suggested, confidence: best.confidence };
}

/** "acme.con" → acme.com, when "con" is no delegated TLD and one edit from a popular one. */
function correctTopLevelDomain(domain: string): { suggested: string; confidence: number } | null {
  const lastDot = domain.lastIndexOf('.');
  if (lastDot <= 0) return null;
  const topLevel = domain.slice(lastDot + 1);
  if (TLD_SET.has(topLevel) || SPECIAL_USE_TLDS.has(topLevel)) return null;
  const nameLength = lastDot - domain.lastIndexOf('.', lastDot - 1) - 1;
  // The first TLD one edit away is the most used one. One edit only: a TLD is short, and two
  // edits turn almost any TLD into another.
  const rank = POPULAR_TLDS.findIndex((candidate) => editDistance(topLevel, candidate, 1) === 1);
  const candidate = POPULAR_TLDS[rank];
  if (candidate === undefined) return null;
  // Only an undelegated TLD is certainly wrong: acme.co and acme.cm are real domains.
  if (parse(domain).isIcann !== false) return null;
  return {
    suggested: `${domain.slice(0, lastDot)}.${candidate}`,
    confidence: typoConfidence(1, nameLength, rank),
  };
}

// Three rows of the distance table, reused: suggestTypo runs once per address.
let rowBeforeLast = new Int32Array(64);
let lastRow = new Int32Array(64);
let currentRow = new Int32Array(64);

/**
 * Optimal string alignment distance between `a` and `b`: insertions, deletions,
 * substitutions and transpositions of adjacent characters each count as one edit. Stops as
 * soon as the distance must exceed `maxEdits` and then returns `maxEdits + 1`.
 */
export function editDistance(a: string, b: string, maxEdits = Number.POSITIVE_INFINITY): number {
  if (Math.abs(a.length - b.length) > maxEdits) return maxEdits + 1;
  if (maxEdits <= 1) return Math.min(distanceUpToOne(a, b), maxEdits + 1);
  // Only cells within `band` of the diagonal can stay within the limit (each step off the
  // diagonal is an edit); cells beside the band hold `beyond`, which reads as "too far".
  const band = Math.min(maxEdits, Math.max(a.length, b.length));
  const beyond = band + 1;
  const columns = b.length + 1;
  if (columns + 1 > currentRow.length) {
    rowBeforeLast = new Int32Array(columns + 1);
    lastRow = new Int32Array(columns + 1);
    currentRow = new Int32Array(columns + 1);
  }
  for (let j = 0; j <= Math.min(b.length, beyond); j++) lastRow[j] = Math.min(j, beyond);
  let lastRowMinimum = 0;
  for (let i = 1; i <= a.length; i++) {
    const first = Math.max(1, i - band);
    const last = Math.min(b.length, i + band);
    currentRow[first - 1] = first === 1 ? Math.min(i, beyond) : beyond;
    let rowMinimum = currentRow[first - 1]!;
    const aCode = a.charCodeAt(i - 1);
    for (let j = first; j <= last; j++) {
      const bCode = b.charCodeAt(j - 1);
      let distance = Math.min(
        lastRow[j - 1]! + (aCode === bCode ? 0 : 1),
        lastRow[j]! + 1,
        currentRow[j - 1]! + 1,
      );
      if (i > 1 && j > 1 && aCode === b.charCodeAt(j - 2) && a.charCodeAt(i - 2) === bCode) {
        distance = Math.min(distance, rowBeforeLast[j - 2]! + 1);
      }
      if (distance > beyond) distance = beyond;
      currentRow[j] = distance;
      if (distance < rowMinimum) rowMinimum = distance;
    }
    if (last < b.length) currentRow[last + 1] = beyond;
    // A cell is at least the smallest of the row above, or of the row two above plus one (a
    // transposition), so once two rows say so the distance cannot come back under the limit.
    if (rowMinimum > maxEdits && lastRowMinimum >= maxEdits) return maxEdits + 1;
    lastRowMinimum = rowMinimum;
    const recycled = rowBeforeLast;
    rowBeforeLast = lastRow;
    lastRow = currentRow;
    currentRow = recycled;
  }
  const distance = lastRow[b.length]!;
  return distance > maxEdits ? maxEdits + 1 : distance;
}

/** 0 when equal, 1 when one edit apart (a transposition counts as one), otherwise 2. */
function distanceUpToOne(a: string, b: string): number {
  const shorter = a.length <= b.length ? a : b;
  const longer = a.length <= b.length ? b : a;
  let index = 0;
  while (index < shorter.length && shorter.charCodeAt(index) === longer.charCodeAt(index)) index++;
  if (index === longer.length) return 0;
  if (shorter.length !== longer.length) return endsMatch(shorter, index, longer, index + 1) ? 1 : 2;
  if (endsMatch(shorter, index + 1, longer, index + 1)) return 1; // a substitution
  const transposed =
    shorter.charCodeAt(index) === longer.charCodeAt(index + 1) &&
    shorter.charCodeAt(index + 1) === longer.charCodeAt(index);
  return transposed && endsMatch(shorter, index + 2, longer, index + 2) ? 1 : 2;
}

/** Whether a from `aStart` and b from `bStart` are the same text. */
function endsMatch(a: string, aStart: number, b: string, bStart: number): boolean {
  if (a.length - aStart !== b.length - bStart) return false;
  for (let offset = 0; aStart + offset < a.length; offset++) {
    if (a.charCodeAt(aStart + offset) !== b.charCodeAt(bStart + offset)) return false;
  }
  return true;
}

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PROVIDER_DOMAINS } from './providers.ts';
import {
  editDistance,
  MAX_TYPO_EDITS,
  NOT_TYPOS,
  POPULAR_MAIL_DOMAINS,
  POPULAR_TLDS,
  POPULARITY_STEP,
  suggestTypo,
  TYPO_CONFIDENCE_THRESHOLD,
  typoConfidence,
} from './typo.ts';

describe('suggestTypo', () => {
  // [typed, meant, confidence]; the confidence is the documented formula's value.
  it.each<[string, string, number]>([
    ['gmial.com', 'gmail.com', 0.833], // transposition: 1 × (1 − 1/6)
    ['gmail.con', 'gmail.com', 0.833], // substitution in the TLD
    ['gnail.com', 'gmail.com', 0.833], // substitution in the name
    ['gmaill.com', 'gmail.com', 0.833], // insertion
    ['gmal.com', 'gmail.com', 0.833], // deletion
    ['yahooo.com', 'yahoo.com', 0.832], // rank 1: 0.998 × (1 − 1/6)
    ['yaho.com', 'yahoo.com', 0.832],
    ['yahoo.co', 'yahoo.com', 0.832], // on the free list, but a misspelling
    ['hotmial.com', 'hotmail.com', 0.871], // rank 2: 0.996 × (1 − 1/8)
    ['hotmail.co', 'hotmail.com', 0.871],
    ['outlok.com', 'outlook.com', 0.87], // rank 3: 0.994 × (1 − 1/8)
    ['outlook.cm', 'outlook.com', 0.87],
    ['icloud.co', 'icloud.com', 0.85], // rank 4: 0.992 × (1 − 1/7)
    ['yahho.co.uk', 'yahoo.co.uk', 0.818], // rank 9: 0.982 × (1 − 1/6)
    ['googlemial.com', 'googlemail.com', 0.891], // rank 10: 0.98 × (1 − 1/11)
    ['googlemial.co', 'googlemail.com', 0.802], // two edits: 0.98 × (1 − 2/11)
    ['protonmial.com', 'protonmail.com', 0.887], // rank 12: 0.976 × (1 − 1/11)
    ['GMIAL.COM', 'gmail.com', 0.833], // compared in lower case
    ['acme.con', 'acme.com', 0.8], // undelegated TLD: 1 × (1 − 1/5), just at the threshold
    ['company.cmo', 'company.com', 0.875], // undelegated TLD, transposed
    ['example.comm', 'example.com', 0.875],
    ['mybusiness.nte', 'mybusiness.net', 0.907], // rank 1 TLD: 0.998 × (1 − 1/11)
    ['mail.mybusiness.ogr', 'mail.mybusiness.org', 0.905], // the name is the label before the TLD
  ])('%s → %s (%d)', (typed, meant, confidence) => {
    expect(suggestTypo(typed)).toEqual({ original: typed, suggested: meant, confidence });
  });

  it.each<[string, string]>([
    ['gmail.com', 'a popular mailbox domain'],
    ['gmx.com', 'on the free-provider list, though one edit from gmx.de'],
    ['mail.com', 'on the free-provider list, one edit from gmail.com'],
    ['ymail.com', "Yahoo's, one edit from gmail.com"],
    ['email.com', 'on the free-provider list'],
    ['y7mail.com', 'on the free-provider list'],
    ['hotmail.be', "Microsoft's, one edit from hotmail.de"],
    ['yahoo.co.uk', 'a popular mailbox domain'],
    ['acme.com', 'a company far from any provider'],
    ['example.org', 'far from any provider'],
    ['university.edu', 'far from any provider'],
    ['life.com', 'one edit from live.com, but a four-letter name has real neighbours'],
    ['aon.com', 'one edit from aol.com, but a three-letter name has real neighbours'],
    ['hotmart.com', 'two edits from hotmail.com'],
    ['grange.fr', 'one edit from orange.fr, which ranks too low for a six-letter name'],
    ['cloud.com', 'a real domain one edit from icloud.com'],
    ['acme.co', '.co is a delegated TLD'],
    ['acme.cm', '.cm is a delegated TLD'],
    ['acme.test', 'RFC 6761 reserves .test'],
    ['shop.ogr', 'undelegated, but 0.996 × (1 − 1/5) = 0.797 is under the threshold'],
    ['ab.con', 'undelegated, but a two-letter name gives 0.667'],
    ['xn--bcher-kva.test', 'an IDN far from any provider'],
    ['[192.0.2.1]', 'an address literal'],
    ['localhost', 'no dot'],
    ['', 'empty'],
  ])('%j gets no suggestion (%s)', (domain) => {
    expect(suggestTypo(domain)).toBeNull();
  });

  it.each([...POPULAR_MAIL_DOMAINS, ...PROVIDER_DOMAINS, ...NOT_TYPOS])(
    'never corrects the known domain %s',
    (domain) => {
      expect(suggestTypo(domain)).toBeNull();
    },
  );

  it('gives lower confidence to more edits from the same target', () => {
    const oneEdit = suggestTypo('googlemial.com');
    const twoEdits = suggestTypo('googlemial.co');
    expect(oneEdit?.suggested).toBe(twoEdits?.suggested);
    expect(oneEdit!.confidence).toBeGreaterThan(twoEdits!.confidence);
  });

  it('suggests only a different domain, at or above the threshold, from a list or a TLD fix', () => {
    const nearProvider = fc
      .tuple(
        fc.constantFrom(...POPULAR_MAIL_DOMAINS),
        fc.nat(),
        fc.constantFrom('', 'a', 'm', '.', 'o'),
        fc.boolean(),
      )
      .map(([domain, at, character, remove]) => {
        const index = at % (domain.length + 1);
        return domain.slice(0, index) + character + domain.slice(remove ? index + 1 : index);
      });
    const domainLike = fc.oneof(nearProvider, fc.domain(), fc.string({ maxLength: 16 }));
    fc.assert(
      fc.property(domainLike, (domain) => {
        const suggestion = suggestTypo(domain);
        if (suggestion === null) return;
        expect(suggestion.original).toBe(domain);
        expect(suggestion.suggested).not.toBe(domain.toLowerCase());
        expect(suggestion.confidence).toBeGreaterThanOrEqual(TYPO_CONFIDENCE_THRESHOLD);
        expect(suggestion.confidence).toBeLessThanOrEqual(1);
        const lastDot = domain.lastIndexOf('.');
        const tldFix =
          suggestion.suggested.startsWith(domain.toLowerCase().slice(0, lastDot + 1)) &&
          POPULAR_TLDS.includes(suggestion.suggested.slice(lastDot + 1));
        expect(POPULAR_MAIL_DOMAINS.includes(suggestion.suggested) || tldFix).toBe(true);
        expect(editDistance(domain.toLowerCase(), suggestion.suggested)).toBeLessThanOrEqual(MAX_TYPO_EDITS);
      }),
      { numRuns: 3000 },
    );
  });
});

describe('typoConfidence', () => {
  it.each<[edits: number, nameLength: number, rank: number, confidence: number]>([
    [0, 5, 0, 1],
    [1, 5, 0, 0.833], // gmail.com, one edit
    [2, 5, 0, 0.667],
    [1, 7, 2, 0.871], // hotmail.com
    [1, 3, 6, 0.741], // a three-letter name: 0.988 × (1 − 1/4)
    [1, 4, 6, 0.79], // live.com
    [2, 10, 10, 0.802], // googlemail.com, two edits
    [9, 5, 0, 0], // never below zero
  ])('%d edits, a %d-letter name at rank %d → %d', (edits, nameLength, rank, confidence) => {
    expect(typoConfidence(edits, nameLength, rank)).toBe(confidence);
  });

  it('falls with every extra edit and every place down the list', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 3 }),
        fc.integer({ min: 3, max: 60 }),
        fc.integer({ min: 0, max: 99 }),
        (edits, nameLength, rank) => {
          expect(typoConfidence(edits + 1, nameLength, rank)).toBeLessThan(
            typoConfidence(edits, nameLength, rank),
          );
          expect(typoConfidence(edits, nameLength, rank + 1)).toBeLessThanOrEqual(
            typoConfidence(edits, nameLength, rank),
          );
        },
      ),
    );
  });

  it('documents its constants', () => {
    expect([TYPO_CONFIDENCE_THRESHOLD, POPULARITY_STEP, MAX_TYPO_EDITS]).toEqual([0.8, 0.002, 2]);
  });
});

/** Optimal string alignment distance written the textbook way, to check the fast one against. */
function referenceDistance(a: string, b: string): number {
  const table = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const row = table[i]!;
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      row[j] = Math.min(table[i - 1]![j]! + 1, row[j - 1]! + 1, table[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        row[j] = Math.min(row[j]!, table[i - 2]![j - 2]! + 1);
      }
    }
  }
  return table[a.length]![b.length]!;
}

describe('editDistance', () => {
  it.each<[string, string, number]>([
    ['', '', 0],
    ['abc', 'abc', 0],
    ['a', '', 1],
    ['', 'abc', 3],
    ['ab', 'ba', 1], // a transposition is one edit
    ['gmail.com', 'gmial.com', 1],
    ['hotmail.com', 'hotmial.com', 1],
    ['gmail.com', 'gmail.con', 1],
    ['gmail.com', 'gmaill.com', 1],
    ['yahoo.com', 'yaho.com', 1],
    ['kitten', 'sitting', 3],
    ['ca', 'abc', 3], // optimal string alignment: a transposed pair is not edited again (true Damerau gives 2)
    ['googlemail.com', 'googlemial.co', 2],
  ])('%j ↔ %j = %d', (a, b, distance) => {
    expect(editDistance(a, b)).toBe(distance);
    expect(editDistance(b, a)).toBe(distance);
  });

  it.each<[string, string, number, number]>([
    ['kitten', 'sitting', 1, 2],
    ['kitten', 'sitting', 2, 3],
    ['abcdef', 'ghijkl', 2, 3],
    ['gmail.com', 'gmial.com', 1, 1],
    ['gmail.com', 'gmail.com', 0, 0],
    ['gmail.com', 'outlook.com', 2, 3], // stopped early
  ])('%j ↔ %j with at most %d edits = %d', (a, b, maxEdits, distance) => {
    expect(editDistance(a, b, maxEdits)).toBe(distance);
  });

  it('agrees with the textbook table, capped at maxEdits + 1', () => {
    const text = fc.string({ unit: fc.constantFrom('a', 'b', 'c', '.', 'ü'), maxLength: 9 });
    fc.assert(
      fc.property(text, text, fc.integer({ min: 0, max: 4 }), (a, b, maxEdits) => {
        const distance = referenceDistance(a, b);
        expect(editDistance(a, b)).toBe(distance);
        expect(editDistance(a, b, maxEdits)).toBe(Math.min(distance, maxEdits + 1));
      }),
      { numRuns: 3000 },
    );
  });
});

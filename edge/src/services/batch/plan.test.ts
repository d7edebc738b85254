import { checkSyntax } from '@rcpt/shared/verify/syntax';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { rowsFromCsv, rowsFromJson } from './input.ts';
import { groupByDomain, planBatch } from './plan.ts';

const localParts = fc.constantFrom('alice', 'Alice', 'bob', 'info', 'x.y', 'a+tag');
const domains = fc.constantFrom(
  'example.com',
  'EXAMPLE.com',
  'example.org',
  'bücher.test',
  'sub.example.net',
);
const address = fc.tuple(localParts, domains).map(([local, domain]) => `${local}@${domain}`);
const junk = fc.constantFrom('', '   ', 'not an address', 'a@', '@b.com', 'a@@b.com', 'a b@c.com');
const row = fc.oneof(
  { weight: 4, arbitrary: address },
  { weight: 1, arbitrary: junk },
  { weight: 1, arbitrary: fc.string({ maxLength: 30 }) },
);

describe('planBatch properties', () => {
  it('charges exactly the unique valid addresses and keeps one result slot per row', () => {
    fc.assert(
      fc.property(fc.array(row, { minLength: 1, maxLength: 200 }), (emails) => {
        const plan = planBatch(rowsFromJson(emails).rows, 0);
        const unique = new Set(
          emails
            .map((email) => checkSyntax(email.trim()))
            .flatMap((result) => (result.valid ? [result.email] : [])),
        );
        expect(plan.counts.totalEmails).toBe(unique.size);
        expect(plan.addresses.map((planned) => planned.email).sort()).toEqual([...unique].sort());
        expect(plan.rows).toHaveLength(emails.length);
        const { totalEmails, duplicateCount, emptyRows, invalidRows, skippedRows, totalRows } = plan.counts;
        expect(totalRows).toBe(emails.length);
        expect(totalEmails + duplicateCount + emptyRows + invalidRows + skippedRows).toBe(totalRows);
        // Every row either points at an address or carries its own final result.
        for (const planned of plan.rows)
          expect((planned.addressIdx === null) !== (planned.result === null)).toBe(true);
      }),
      { numRuns: 200 },
    );
  });

  it('treats the domain case-insensitively and the local part exactly', () => {
    const plan = planBatch(
      rowsFromJson(['alice@Example.COM', 'alice@example.com', 'Alice@example.com']).rows,
      0,
    );
    expect(plan.counts).toMatchObject({ totalEmails: 2, duplicateCount: 1 });
    expect(plan.rows.map((planned) => planned.addressIdx)).toEqual([0, 0, 1]);
  });

  it('groups addresses by domain in bounded groups that cover every address once', () => {
    fc.assert(
      fc.property(fc.array(address, { maxLength: 300 }), fc.integer({ min: 1, max: 60 }), (emails, size) => {
        const { addresses } = planBatch(rowsFromJson(emails).rows, 0);
        const groups = groupByDomain(addresses, size);
        for (const group of groups) {
          expect(group.length).toBeGreaterThan(0);
          expect(group.length).toBeLessThanOrEqual(size);
          expect(new Set(group.map((planned) => planned.domain)).size).toBe(1);
        }
        expect(
          groups
            .flat()
            .map((planned) => planned.idx)
            .sort((a, b) => a - b),
        ).toEqual(addresses.map((planned) => planned.idx));
      }),
      { numRuns: 100 },
    );
  });
});

describe('rowsFromCsv properties', () => {
  const cell = fc
    .string({ maxLength: 12 })
    .filter((text) => text.trim() !== '' && !/[\r\n]/.test(text) && text === text.trim());
  it('reads back any table written with RFC 4180 quoting, whatever the delimiter', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(',', ';', '\t'),
        fc.array(fc.tuple(address, cell, cell), { minLength: 1, maxLength: 30 }),
        async (delimiter, records) => {
          const quote = (value: string) => `"${value.replaceAll('"', '""')}"`;
          const lines = [
            'email,name,note'.replaceAll(',', delimiter),
            ...records.map((record) => record.map(quote).join(delimiter)),
          ];
          const upload = await rowsFromCsv(new TextEncoder().encode(`${lines.join('\r\n')}\r\n`));
          expect(upload.headers).toEqual(['email', 'name', 'note']);
          expect(upload.emailColumn).toBe(0);
          expect(upload.cells?.flatMap((chunk) => JSON.parse(chunk.json))).toEqual(records);
          expect(upload.rows.map((parsed) => parsed.input)).toEqual(records.map((record) => record[0]));
        },
      ),
      { numRuns: 150 },
    );
  });
});

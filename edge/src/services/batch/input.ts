// Turning an upload into rows: a JSON list of addresses, or a CSV/TSV file with its header,
// delimiter and email column found, each row's original cells kept for the results.
//
// A CSV file is parsed by csv-parse as it streams in, and reading stops as soon as the file is
// known to be too big (bytes, rows, columns or cells): a Worker isolate has 128 MB (Cloudflare
// Workers limits), and an array per row of a 1.5 MB file of one-character lines is already most
// of it. Each record is taken in csv-parse's `on_record` callback as it is completed — none is
// queued in the stream — and no record grows past MAX_CSV_COLUMNS + 1 cells
// (`ignore_last_delimiters`), so a line of ten million commas is one refused record, not an
// array of ten million cells. Past the first rows (which choose the header and the email
// column) a row is kept as its address, and its cells go at once into the JSON chunks they are
// stored from. The delimiter is chosen here, from the first line: csv-parse's own guess weighs
// every character, and an address list would split on its `.` or `@`.
import { MAX_BATCH_EMAILS } from '@rcpt/shared/contract/api';
import { ApiError } from '@rcpt/shared/errors';
import { checkSyntax } from '@rcpt/shared/verify/syntax';
import { CsvError, type Parser, parse } from 'csv-parse';
import { type JsonChunk, JsonChunker } from '../../storage/json-chunks.ts';

/** Largest CSV file accepted (413 above). */
export const MAX_CSV_BYTES = 10 * 1024 * 1024;
/** Most columns a CSV row may have (400 above): enough for any export, bounded in memory. */
export const MAX_CSV_COLUMNS = 1_000;
/**
 * Most cells in a file (400 above): 10,000 rows of 100 columns. Without it a file of empty
 * cells (10,000 rows × 1,000 commas) would pass the column check and store 30 MB of `""`.
 */
export const MAX_CSV_CELLS = 1_000_000;
/** Rows read before the header and the email column are chosen. */
const SAMPLE_ROWS = 50;

export interface UploadRow {
  /** The address cell as uploaded ('' when the row has none). */
  input: string;
  /** The row could not be read (its email column is missing). */
  unreadable: boolean;
}

export interface ParsedUpload {
  rows: UploadRow[];
  /** Each row's cells as a JSON array, in row order, chunked as stored (CSV uploads). */
  cells: JsonChunk[] | null;
  headers: string[] | null;
  emailColumn: number | null;
}

export function rowsFromJson(emails: readonly string[]): ParsedUpload {
  return {
    rows: emails.map((input) => ({ input, unreadable: false })),
    cells: null,
    headers: null,
    emailColumn: null,
  };
}

const HEADER_NAMES = /^(e-?mail|e-?mail[ _-]?address|mail|address|courriel|correo)$/i;
const DELIMITERS = [',', ';', '\t'] as const;

/**
 * Parses a CSV file as it streams. `emailColumn` is a header name (case-insensitive) or a
 * 0-based column position; without it the column is the one named like "email", else the one
 * holding the most addresses in the first rows. 413 past MAX_CSV_BYTES, 400 TOO_MANY_EMAILS
 * past MAX_BATCH_EMAILS data rows, 400 past MAX_CSV_COLUMNS or MAX_CSV_CELLS, each without
 * reading the rest.
 */
export async function rowsFromCsv(
  source: ReadableStream<Uint8Array> | Uint8Array,
  emailColumn?: string,
): Promise<ParsedUpload> {
  // The first record and the sample after it, as arrays, until the column is chosen.
  const sample: string[][] = [];
  const state: { chosen: ChosenColumn | null } = { chosen: null };
  const rows: UploadRow[] = [];
  const cells = new JsonChunker();
  const take = (record: string[], column: number) => {
    rows.push(uploadRow(record, column));
    cells.push(JSON.stringify(record));
  };
  let width = 0;
  let cellCount = 0;
  const choose = (): ChosenColumn => {
    const first = sample[0] ?? [];
    const hasHeader =
      looksLikeHeader(first, sample[1]) || (emailColumn !== undefined && !/^\d+$/.test(emailColumn));
    const dataRows = hasHeader ? sample.slice(1) : sample;
    const column = chooseEmailColumn(
      headersOf(first, hasHeader, width),
      hasHeader,
      dataRows,
      emailColumn,
      false,
    );
    for (const record of dataRows) take(record, column);
    sample.length = 0;
    return { hasHeader, column, first };
  };
  await readRecords(source instanceof Uint8Array ? new Blob([source]).stream() : source, (record) => {
    width = Math.max(width, record.length);
    cellCount += record.length;
    if (cellCount > MAX_CSV_CELLS) throw tooManyCells();
    if (state.chosen) {
      take(record, state.chosen.column);
      if (rows.length > MAX_BATCH_EMAILS) throw tooManyRows();
      return;
    }
    sample.push(record);
    if (sample.length > SAMPLE_ROWS) state.chosen = choose();
  });
  if (!state.chosen && sample.length === 0) {
    throw new ApiError('VALIDATION_ERROR', { message: 'The file has no rows.' });
  }
  const { hasHeader, column, first } = state.chosen ?? choose();
  if (rows.length > MAX_BATCH_EMAILS) throw tooManyRows();
  const headers = headersOf(first, hasHeader, width);
  // A position is checked against the widest row of the whole file, known only now.
  chooseEmailColumn(headers, hasHeader, [], emailColumn, true);
  return { headers, emailColumn: column, rows, cells: cells.finish() };
}

interface ChosenColumn {
  hasHeader: boolean;
  column: number;
  first: string[];
}

function uploadRow(cells: string[], column: number): UploadRow {
  const cell = cells[column];
  return { input: (cell ?? '').trim(), unreadable: cell === undefined };
}

function headersOf(first: string[], hasHeader: boolean, width: number): string[] {
  return hasHeader
    ? Array.from({ length: width }, (_, column) => first[column]?.trim() || `column_${column + 1}`)
    : Array.from({ length: width }, (_, column) => `column_${column + 1}`);
}

function tooManyRows(): ApiError {
  return new ApiError('TOO_MANY_EMAILS', {
    message: `A file holds at most ${MAX_BATCH_EMAILS.toLocaleString('en-US')} rows of addresses.`,
    details: { max: MAX_BATCH_EMAILS },
  });
}

function tooManyCells(): ApiError {
  return new ApiError('VALIDATION_ERROR', {
    message: `A file holds at most ${MAX_CSV_CELLS.toLocaleString('en-US')} cells (rows × columns).`,
    details: { maxCells: MAX_CSV_CELLS },
  });
}

/**
 * Hands the file's non-blank records to `take`, read chunk by chunk; `take` throws to stop
 * reading (the rest of the file is not read).
 */
async function readRecords(
  stream: ReadableStream<Uint8Array>,
  take: (record: string[]) => void,
): Promise<void> {
  const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }); // drops a BOM
  let parser: Parser | null = null;
  // Text read before the first line is complete: the delimiter is chosen from that line.
  const head = new FirstLine();
  let bytes = 0;
  const reader = stream.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      let text: string;
      try {
        text = done ? decoder.decode() : decoder.decode(value, { stream: true });
      } catch {
        throw new ApiError('VALIDATION_ERROR', { message: 'The file is not UTF-8 text.' });
      }
      if (!done) {
        bytes += value.byteLength;
        if (bytes > MAX_CSV_BYTES)
          throw new ApiError('PAYLOAD_TOO_LARGE', { details: { maxBytes: MAX_CSV_BYTES } });
      }
      if (parser === null) {
        const firstLine = head.add(text);
        if (firstLine === null && !done) continue;
        parser = csvParser(detectDelimiter(firstLine ?? head.text), take);
        text = head.text;
      }
      const csv = parser;
      if (text !== '') await settled((callback) => csv.write(text, callback));
      if (done) {
        await settled((callback) => csv.end(callback));
        return;
      }
    }
  } catch (error) {
    parser?.destroy();
    await reader.cancel().catch(() => {});
    throw error instanceof CsvError ? unparsable(error) : error;
  }
}

/**
 * RFC 4180 with what spreadsheets write besides: records end at CRLF, LF or CR, rows may differ
 * in length, a quote inside an unquoted field is text (`John "Jr" Smith`), and so is a closed
 * quote followed by more text (`"a"b` is the cell `"a"b`: csv-parse's `relax_quotes` takes
 * both), and a record of only blank cells is skipped like a blank line. An unclosed quote
 * fails. Records go to `take` and are not queued.
 */
function csvParser(delimiter: string, take: (record: string[]) => void): Parser {
  const parser = parse({
    delimiter,
    record_delimiter: ['\r\n', '\n', '\r'],
    relax_column_count: true,
    relax_quotes: true,
    skip_empty_lines: true,
    skip_records_with_empty_values: true,
    // The cell past the limit takes the rest of its line, delimiters included.
    ignore_last_delimiters: MAX_CSV_COLUMNS + 1,
    on_record: (record: string[]) => {
      if (record.length > MAX_CSV_COLUMNS) throw tooManyColumns();
      take(record);
      return null;
    },
  });
  // Errors come back through the write and end callbacks; a stream error without a listener
  // would be thrown again on its own.
  parser.on('error', () => {});
  return parser;
}

/** Resolves when a stream call's callback says it is done, rejects with what it failed with. */
function settled(call: (callback: (error?: Error | null) => void) => void): Promise<void> {
  return new Promise((resolve, reject) => call((error) => (error ? reject(error) : resolve())));
}

function unparsable(error: CsvError): ApiError {
  const why = error.code === 'CSV_QUOTE_NOT_CLOSED' ? 'a quoted field is not closed' : error.message;
  return new ApiError('VALIDATION_ERROR', {
    message: `The CSV file could not be parsed (near line ${error.lines}): ${why}.`,
  });
}

function tooManyColumns(): ApiError {
  return new ApiError('VALIDATION_ERROR', {
    message: `A row has more than ${MAX_CSV_COLUMNS.toLocaleString('en-US')} columns.`,
  });
}

/** The delimiter that splits the first line into the most fields (quotes respected). */
function detectDelimiter(firstLine: string): string {
  let best: string = ',';
  let bestCount = -1;
  for (const delimiter of DELIMITERS) {
    let count = 0;
    let quoted = false;
    for (const character of firstLine) {
      if (character === '"') quoted = !quoted;
      else if (!quoted && character === delimiter) count++;
    }
    if (count > bestCount) {
      best = delimiter;
      bestCount = count;
    }
  }
  return best;
}

/** Collects text until its first line (quotes respected) is complete. */
class FirstLine {
  text = '';
  private quoted = false;

  /** The first line once it has ended, else null. */
  add(more: string): string | null {
    const scanned = this.text.length;
    this.text += more;
    for (let index = scanned; index < this.text.length; index++) {
      const character = this.text[index];
      if (character === '"') this.quoted = !this.quoted;
      else if (!this.quoted && (character === '\n' || character === '\r')) return this.text.slice(0, index);
    }
    return null;
  }
}

/** A first row is a header when it names an email column, or holds no address while the next row does. */
function looksLikeHeader(first: string[], second: string[] | undefined): boolean {
  if (first.some((cell) => HEADER_NAMES.test(cell.trim()))) return true;
  const firstHasAddress = first.some((cell) => checkSyntax(cell).valid);
  const secondHasAddress = second?.some((cell) => checkSyntax(cell).valid) ?? false;
  return !firstHasAddress && secondHasAddress;
}

/**
 * The email column. A position beyond the sample's columns may exist further down the file:
 * it is refused only when `wholeFile` (the headers then span the widest row of the file).
 */
function chooseEmailColumn(
  headers: string[],
  hasHeader: boolean,
  rows: string[][],
  requested: string | undefined,
  wholeFile: boolean,
): number {
  if (requested !== undefined && requested !== '') {
    if (/^\d+$/.test(requested)) {
      const position = Number(requested);
      if (wholeFile && position >= headers.length) {
        throw new ApiError('VALIDATION_ERROR', {
          message: `emailColumn ${position} is beyond the file's ${headers.length} columns (positions start at 0).`,
        });
      }
      return position;
    }
    const byName = headers.findIndex((header) => header.toLowerCase() === requested.trim().toLowerCase());
    if (byName < 0 || !hasHeader) {
      throw new ApiError('VALIDATION_ERROR', {
        message: `No column is named "${requested}".`,
        details: { columns: hasHeader ? headers : [] },
      });
    }
    return byName;
  }
  if (hasHeader) {
    const named = headers.findIndex((header) => HEADER_NAMES.test(header));
    if (named >= 0) return named;
  }
  // The column with the most parsable addresses among the first 50 rows.
  const sample = rows.slice(0, 50);
  let best = 0;
  let bestCount = -1;
  for (let column = 0; column < headers.length; column++) {
    const count = sample.filter((cells) => checkSyntax(cells[column] ?? '').valid).length;
    if (count > bestCount) {
      best = column;
      bestCount = count;
    }
  }
  return best;
}

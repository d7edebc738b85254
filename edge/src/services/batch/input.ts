// Turning an upload into rows: a JSON list of addresses, or a CSV/TSV file with its header,
// delimiter and email column found, each row's original cells kept for the results.
//
// A CSV file is parsed as it streams in and reading stops as soon as the file is known to be
// too big (bytes, rows, columns or cells): a Worker isolate has 128 MB (Cloudflare Workers
// limits), and an array per row of a 1.5 MB file of one-character lines is already most of it.
// Past the first rows (which choose the header and the email column) a row is kept as its
// address, and its cells go at once into the JSON chunks they are stored from — not kept as an
// array of strings, whose per-cell headers would cost several times the file, nor as a JSON
// string per row that would then be copied into the chunks.
import { MAX_BATCH_EMAILS } from '@rcpt/shared/contract/api';
import { ApiError } from '@rcpt/shared/errors';
import { checkSyntax } from '@rcpt/shared/verify/syntax';
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
  return { input: detached((cell ?? '').trim()), unreadable: cell === undefined };
}

/**
 * A copy of `text` that does not keep alive the chunk of the file it was cut from: V8 makes a
 * substring of 13 characters or more a slice that holds its parent string (V8's
 * src/objects/string.h, `SlicedString::kMinLength`), so every address kept would hold its whole
 * chunk of the file.
 */
function detached(text: string): string {
  return text.length < 13 ? text : (JSON.parse(JSON.stringify(text)) as string);
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
  let parser: CsvParser | null = null;
  // Text read before the first line is complete: the delimiter is chosen from that line.
  const head = new FirstLine();
  let bytes = 0;
  const reader = stream.getReader();
  const takeAll = (parsed: string[][]) => {
    for (const record of parsed) {
      // A line of only delimiters is as empty as a blank line.
      if (record.some((cell) => cell.trim() !== '')) take(record);
    }
  };
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
        parser = new CsvParser(detectDelimiter(firstLine ?? head.text));
        text = head.text;
      }
      takeAll(parser.push(text));
      if (done) {
        takeAll(parser.end());
        return;
      }
    }
  } catch (error) {
    await reader.cancel().catch(() => {});
    throw error;
  }
}

/**
 * An incremental RFC 4180 parser: fields split by the delimiter, records by CRLF, LF or CR,
 * `"` quoting with `""` for a quote inside. A quote inside an unquoted field is kept as text
 * (`John "Jr" Smith`); a quoted field must end at a delimiter or a line end, and be closed.
 */
class CsvParser {
  private field = '';
  private record: string[] = [];
  private state: 'start' | 'unquoted' | 'quoted' | 'quote-in-quoted' | 'after-cr' = 'start';
  private line = 1;
  private readonly delimiter: string;

  constructor(delimiter: string) {
    this.delimiter = delimiter;
  }

  /** The records completed by `text`. */
  push(text: string): string[][] {
    const done: string[][] = [];
    let fieldStart = -1; // start of an unquoted run in `text` not yet copied into `field`
    const flushRun = (end: number) => {
      if (fieldStart >= 0) this.field += text.slice(fieldStart, end);
      fieldStart = -1;
    };
    for (let index = 0; index < text.length; index++) {
      const character = text[index] as string;
      if (this.state === 'after-cr') {
        this.state = 'start';
        if (character === '\n') continue;
      }
      if (this.state === 'quoted') {
        if (character === '"') {
          flushRun(index);
          this.state = 'quote-in-quoted';
        } else {
          if (character === '\n') this.line++;
          if (fieldStart < 0) fieldStart = index;
        }
        continue;
      }
      if (this.state === 'quote-in-quoted') {
        if (character === '"') {
          this.field += '"';
          this.state = 'quoted';
          continue;
        }
        if (character !== this.delimiter && character !== '\n' && character !== '\r') {
          throw new ApiError('VALIDATION_ERROR', {
            message: `The CSV file could not be parsed (near line ${this.line}): a quoted field must end at a delimiter or a line end.`,
          });
        }
        this.state = 'unquoted';
      }
      if (character === this.delimiter) {
        flushRun(index);
        this.endField();
        if (this.record.length > MAX_CSV_COLUMNS) throw tooManyColumns();
        this.state = 'start';
      } else if (character === '\n' || character === '\r') {
        flushRun(index);
        done.push(this.endRecord());
        this.line++;
        this.state = character === '\r' ? 'after-cr' : 'start';
      } else if (character === '"' && this.state === 'start') {
        this.state = 'quoted';
      } else {
        if (fieldStart < 0) fieldStart = index;
        this.state = 'unquoted';
      }
    }
    flushRun(text.length);
    return done;
  }

  /** The last record, when the file does not end with a line break. */
  end(): string[][] {
    if (this.state === 'quoted') {
      throw new ApiError('VALIDATION_ERROR', {
        message: `The CSV file could not be parsed (near line ${this.line}): a quoted field is not closed.`,
      });
    }
    if (this.state === 'start' && this.record.length === 0 && this.field === '') return [];
    if (this.state === 'after-cr') return [];
    return [this.endRecord()];
  }

  private endField(): void {
    this.record.push(this.field);
    this.field = '';
  }

  private endRecord(): string[] {
    this.endField();
    const record = this.record;
    this.record = [];
    return record;
  }
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

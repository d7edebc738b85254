// Turning an upload into rows: a JSON list of addresses, or a CSV/TSV file with its header,
// delimiter and email column found, each row's original cells kept for the results.
import { MAX_BATCH_EMAILS } from '@rcpt/shared/contract/api';
import { ApiError } from '@rcpt/shared/errors';
import { checkSyntax } from '@rcpt/shared/verify/syntax';
import { parse } from 'csv-parse/sync';

/** Largest CSV file accepted (413 above). */
export const MAX_CSV_BYTES = 10 * 1024 * 1024;

export interface UploadRow {
  /** The address cell as uploaded ('' when the row has none). */
  input: string;
  /** The row's cells, for CSV uploads. */
  cells: string[] | null;
  /** The row could not be read (its email column is missing). */
  unreadable: boolean;
}

export interface ParsedUpload {
  rows: UploadRow[];
  headers: string[] | null;
  emailColumn: number | null;
}

export function rowsFromJson(emails: readonly string[]): ParsedUpload {
  return {
    rows: emails.map((input) => ({ input, cells: null, unreadable: false })),
    headers: null,
    emailColumn: null,
  };
}

const HEADER_NAMES = /^(e-?mail|e-?mail[ _-]?address|mail|address|courriel|correo)$/i;
const DELIMITERS = [',', ';', '\t'] as const;
const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

/**
 * Parses a CSV file. `emailColumn` is a header name (case-insensitive) or a 0-based column
 * position; without it the column is the one named like "email", else the one holding the
 * most addresses in the first rows.
 */
export function rowsFromCsv(bytes: Uint8Array, emailColumn?: string): ParsedUpload {
  if (bytes.byteLength > MAX_CSV_BYTES)
    throw new ApiError('PAYLOAD_TOO_LARGE', { details: { maxBytes: MAX_CSV_BYTES } });
  let text: string;
  try {
    text = strictUtf8.decode(bytes); // a BOM is dropped here
  } catch {
    throw new ApiError('VALIDATION_ERROR', { message: 'The file is not UTF-8 text.' });
  }
  const delimiter = detectDelimiter(text);
  let records: string[][];
  try {
    records = parse(text, {
      delimiter,
      relax_column_count: true,
      skip_empty_lines: true,
      trim: false,
    }) as string[][];
  } catch (error) {
    const line = (error as { lines?: number }).lines;
    throw new ApiError('VALIDATION_ERROR', {
      message: `The CSV file could not be parsed${line ? ` (near line ${line})` : ''}: ${(error as Error).message.split('\n')[0]}`,
    });
  }
  // A line of only delimiters is as empty as a blank line.
  records = records.filter((record) => record.some((cell) => cell.trim() !== ''));
  if (records.length === 0) throw new ApiError('VALIDATION_ERROR', { message: 'The file has no rows.' });

  const first = records[0] ?? [];
  const hasHeader =
    looksLikeHeader(first, records[1]) || (emailColumn !== undefined && !/^\d+$/.test(emailColumn));
  const dataRows = hasHeader ? records.slice(1) : records;
  if (dataRows.length > MAX_BATCH_EMAILS) {
    throw new ApiError('TOO_MANY_EMAILS', { details: { rows: dataRows.length, max: MAX_BATCH_EMAILS } });
  }
  const width = Math.max(...records.map((record) => record.length));
  const headers = hasHeader
    ? Array.from({ length: width }, (_, column) => first[column]?.trim() || `column_${column + 1}`)
    : Array.from({ length: width }, (_, column) => `column_${column + 1}`);
  const column = chooseEmailColumn(headers, hasHeader, dataRows, emailColumn);
  return {
    headers,
    emailColumn: column,
    rows: dataRows.map((cells) => {
      const cell = cells[column];
      return { input: (cell ?? '').trim(), cells, unreadable: cell === undefined };
    }),
  };
}

/** The delimiter that splits the first line into the most fields (quotes respected). */
function detectDelimiter(text: string): string {
  const firstLine = firstRecordLine(text);
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

function firstRecordLine(text: string): string {
  let quoted = false;
  for (let index = 0; index < text.length; index++) {
    const character = text[index];
    if (character === '"') quoted = !quoted;
    else if (!quoted && (character === '\n' || character === '\r')) return text.slice(0, index);
  }
  return text;
}

/** A first row is a header when it names an email column, or holds no address while the next row does. */
function looksLikeHeader(first: string[], second: string[] | undefined): boolean {
  if (first.some((cell) => HEADER_NAMES.test(cell.trim()))) return true;
  const firstHasAddress = first.some((cell) => checkSyntax(cell).valid);
  const secondHasAddress = second?.some((cell) => checkSyntax(cell).valid) ?? false;
  return !firstHasAddress && secondHasAddress;
}

function chooseEmailColumn(
  headers: string[],
  hasHeader: boolean,
  rows: string[][],
  requested: string | undefined,
): number {
  if (requested !== undefined && requested !== '') {
    if (/^\d+$/.test(requested)) {
      const position = Number(requested);
      if (position >= headers.length) {
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

// A CSV of outcomes, as the dashboard takes it (docs/verdicts.md, "Outcomes"): the columns
// `email,outcome,at,diagnostic` (a header row naming them is optional), each row read into the
// API's `OutcomeInput` and the whole checked by the API's own schema, so that a file is refused
// for exactly what a request would be, with the same paths (`outcomes.<row>.<field>`).
import { MAX_OUTCOMES_PER_REQUEST, type OutcomeInput, OutcomesRequest } from '@rcpt/shared/contract/api';
import { ApiError, validationError } from '@rcpt/shared/errors';
import { CsvError, parse } from 'csv-parse/sync';

const COLUMNS = ['email', 'outcome', 'at', 'diagnostic'] as const;

/** The outcomes of `text`, or a 400 VALIDATION_ERROR naming the first rows that are not. */
export function outcomesFromCsv(text: string): OutcomeInput[] {
  let records: string[][];
  try {
    records = parse(text, {
      bom: true,
      skip_empty_lines: true,
      relax_column_count: true,
      trim: true,
    }) as string[][];
  } catch (error) {
    if (error instanceof CsvError)
      throw new ApiError('VALIDATION_ERROR', { message: `The file is not CSV: ${error.message}` });
    throw error;
  }
  const header = records[0]?.map((cell) => cell.toLowerCase());
  const rows = header && header[0] === 'email' ? records.slice(1) : records;
  if (rows.length > MAX_OUTCOMES_PER_REQUEST) {
    throw new ApiError('VALIDATION_ERROR', {
      message: `A file holds at most ${MAX_OUTCOMES_PER_REQUEST} outcomes; this one has ${rows.length}.`,
    });
  }
  const outcomes = rows.map((row) => {
    const outcome: Record<string, string> = {};
    COLUMNS.forEach((column, index) => {
      const cell = row[index];
      if (cell !== undefined && cell !== '') outcome[column] = cell;
    });
    return outcome;
  });
  const checked = OutcomesRequest.safeParse({ outcomes });
  if (!checked.success) {
    throw validationError(
      checked.error,
      rows.length === 0
        ? 'The file has no outcomes.'
        : 'Some rows are not outcomes: each is email,outcome,at,diagnostic (see the details).',
    );
  }
  return checked.data.outcomes;
}

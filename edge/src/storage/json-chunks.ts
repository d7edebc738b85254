// Many rows written by one statement each: `INSERT … SELECT … FROM json_each(?)` over a JSON
// array of rows, bound as one parameter. D1 takes a value of up to 1 MB (Cloudflare D1 limits,
// "Maximum string, BLOB or table row size"); a chunk stays well below it.

/** Largest JSON array bound to one statement. */
export const MAX_JSON_PARAMETER_BYTES = 400_000;
/** Most rows per INSERT … json_each statement. */
export const MAX_ROWS_PER_STATEMENT = 1000;

/** A JSON array of `count` rows, small enough to bind as one parameter. */
export interface JsonChunk {
  json: string;
  count: number;
}

/**
 * Gathers rows already encoded as JSON into bounded JSON arrays as they come, so that a large
 * upload is held once, in the form it is written in, and not also row by row.
 */
export class JsonChunker {
  readonly #chunks: JsonChunk[] = [];
  #current: string[] = [];
  #bytes = 2;

  push(encoded: string): void {
    const full =
      this.#current.length >= MAX_ROWS_PER_STATEMENT ||
      this.#bytes + encoded.length + 1 > MAX_JSON_PARAMETER_BYTES;
    if (this.#current.length > 0 && full) this.#close();
    this.#current.push(encoded);
    this.#bytes += encoded.length + 1;
  }

  /** The chunks of every row pushed, in order. */
  finish(): JsonChunk[] {
    if (this.#current.length > 0) this.#close();
    return this.#chunks;
  }

  #close(): void {
    this.#chunks.push({ json: `[${this.#current.join(',')}]`, count: this.#current.length });
    this.#current = [];
    this.#bytes = 2;
  }
}

/** Splits rows into JSON arrays small enough to bind as one parameter each. */
export function jsonChunks<T>(
  rows: Iterable<T>,
  encode: (row: T) => string = (row) => JSON.stringify(row),
): JsonChunk[] {
  const chunker = new JsonChunker();
  for (const row of rows) chunker.push(encode(row));
  return chunker.finish();
}

// Request bodies are read here once, before validation, so that each way a body can be
// wrong has its own answer: 415 wrong type, 413 too large, 400 not UTF-8 or not JSON.
import { ApiError } from '@rcpt/shared/errors';
import type { Context } from 'hono';
import { createMiddleware } from 'hono/factory';
import type { AppEnv } from '../app-env.ts';
import { MAX_CSV_BYTES } from '../services/batch/input.ts';
import { digestOf } from '../services/money/idempotency.ts';

export const MAX_JSON_BODY_BYTES = 1024 * 1024;
/** Largest form body read (a CSV upload of MAX_CSV_BYTES plus the multipart framing). */
export const MAX_FORM_BYTES = MAX_CSV_BYTES + 64 * 1024;

const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i;
const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

export function isJsonContentType(contentType: string | undefined): boolean {
  return contentType !== undefined && JSON_TYPE.test(contentType);
}

export const jsonBody = createMiddleware<AppEnv>(async (c, next) => {
  await readJsonBody(c);
  await next();
});

/**
 * Reads the request's JSON body once: a second reader (the route's `jsonBody` after an earlier
 * one, middleware/early-desk.ts) gets the first read's outcome, its refusal included.
 */
export function readJsonBody(c: Context<AppEnv>): Promise<void> {
  let read = c.get('jsonBodyRead');
  if (!read) {
    read = readOnce(c);
    c.set('jsonBodyRead', read);
  }
  return read;
}

async function readOnce(c: Context<AppEnv>): Promise<void> {
  if (!isJsonContentType(c.req.header('content-type'))) {
    throw new ApiError('UNSUPPORTED_MEDIA_TYPE', { message: 'Send the body as application/json.' });
  }
  const digest = await readBoundedBody(c.req.raw, MAX_JSON_BODY_BYTES, (bytes) => {
    let text: string;
    try {
      text = strictUtf8.decode(bytes);
    } catch {
      throw new ApiError('VALIDATION_ERROR', { message: 'The body is not valid UTF-8.' });
    }
    if (text.trim() === '') throw new ApiError('VALIDATION_ERROR', { message: 'The body is empty.' });
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new ApiError('VALIDATION_ERROR', { message: 'The body is not valid JSON.' });
    }
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
      throw new ApiError('VALIDATION_ERROR', { message: 'The body must be a JSON object.' });
    }
    // Later readers (the zod validator) get the parsed value from Hono's body cache.
    c.req.bodyCache.json = Promise.resolve(parsed);
    // The raw bytes identify a request sent with an Idempotency-Key (services/money/idempotency.ts).
    return c.req.header('idempotency-key') === undefined ? null : digestOf(bytes);
  });
  if (digest !== null) c.set('bodyDigest', await digest);
}

/**
 * Reads at most `limit` bytes of the body, failing with 413 as soon as it is exceeded
 * (the Content-Length header is checked first, but a chunked body is counted as it streams).
 */
export async function readBoundedBody<T>(
  request: { headers: Headers; body: ReadableStream<Uint8Array> | null },
  limit: number,
  use: (bytes: Uint8Array) => T,
): Promise<T> {
  const declared = Number(request.headers.get('content-length') ?? Number.NaN);
  if (declared > limit) throw tooLarge(limit);
  if (!request.body) return use(new Uint8Array());
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = request.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel();
      throw tooLarge(limit);
    }
    chunks.push(value);
  }
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return use(bytes);
}

/**
 * Reads a multipart or URL-encoded form within MAX_FORM_BYTES (413 past it, even when the
 * body is chunked and declares no length): `Request.formData()` alone would buffer any size.
 */
export async function readBoundedForm(request: {
  headers: Headers;
  body: ReadableStream<Uint8Array> | null;
}): Promise<FormData> {
  const contentType = request.headers.get('content-type') ?? '';
  return readBoundedBody(request, MAX_FORM_BYTES, (bytes) =>
    new Response(bytes, { headers: { 'content-type': contentType } }).formData().catch(() => {
      throw new ApiError('VALIDATION_ERROR', { message: 'The form could not be read.' });
    }),
  );
}

function tooLarge(limit: number): ApiError {
  return new ApiError('PAYLOAD_TOO_LARGE', { details: { maxBytes: limit } });
}

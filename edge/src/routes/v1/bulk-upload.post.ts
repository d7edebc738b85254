import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import {
  BulkUploadJsonRequest,
  BulkUploadResponse,
  EvidenceFormField,
  IdempotencyHeaders,
  MAX_BATCH_EMAILS,
  MaxWaitSeconds,
  RecheckField,
  WATCH_DEFAULT_DAYS,
  WatchDays,
  WatchField,
} from '@rcpt/shared/contract/api';
import { ApiError, validationError } from '@rcpt/shared/errors';
import type { Context } from 'hono';
import type { AppEnv } from '../../app-env.ts';
import { requireScope } from '../../middleware/auth.ts';
import { isJsonContentType, readBoundedBody, readBoundedForm } from '../../middleware/json-body.ts';
import { linkedProbeSlots } from '../../services/batch/estimate.ts';
import { MAX_CSV_BYTES, type ParsedUpload, rowsFromCsv, rowsFromJson } from '../../services/batch/input.ts';
import { createBatchJob } from '../../services/batch/jobs.ts';
import { paceSamplerOf } from '../../services/batch/pace-sample.ts';
import { digestingBody } from '../../services/money/idempotency.ts';
import { quotasOf } from '../../services/money/quotas.ts';
import { validateWebhookUrl } from '../../services/webhooks/settings.ts';
import { findAccount } from '../../storage/accounts.ts';
import { answerRequestOnce, replyWith } from '../idempotent-reply.ts';
import { chargedPostResponses } from '../openapi-errors.ts';

const PATH = '/api/v1/bulk/upload';
/** 10,000 addresses of the longest accepted length, with JSON overhead. */
const MAX_JSON_BYTES = 6 * 1024 * 1024;

const CsvOptions = z.object({
  emailColumn: z
    .string()
    .max(200)
    .optional()
    .describe('header name (case-insensitive) or 0-based column position'),
  name: z.string().max(200).optional(),
  webhookUrl: z.string().max(2048).optional(),
  maxWaitSeconds: MaxWaitSeconds.optional(),
  recheck: RecheckField.optional(),
  evidence: EvidenceFormField.optional(),
  watch: WatchField.optional(),
  watchDays: WatchDays.optional(),
});

const route = createRoute({
  method: 'post',
  path: PATH,
  tags: ['Batch'],
  summary: 'Upload a list',
  description:
    'Creates a job of 1 to 10,000 addresses and starts verifying at once. Send JSON `{ "emails": [...] }`, a CSV ' +
    `file as \`multipart/form-data\` (field \`file\`) or a raw \`text/csv\` body (options in the query; with JSON, in the body or the query, and an option given in both must agree); CSV files up to ${
      MAX_CSV_BYTES / 1024 / 1024
    } MB, at most 1,000 columns and 1,000,000 cells (rows × columns), delimiters \`,\` \`;\` or tab, header row ` +
    'detected, UTF-8 with or without BOM. Jobs of test keys send no webhooks: a `webhookUrl` with a test key is ' +
    "400. A `webhookUrl` needs the account's signing secret (`POST /api/v1/webhooks/secret`): without one, 400 " +
    '`WEBHOOK_SECRET_MISSING`. Duplicates (same local part, ' +
    'domain in any case) are verified and charged once; rows without a parsable address are answered `undeliverable / ' +
    'invalid_syntax` free of charge. The unique valid addresses are charged in one debit before the job exists. ' +
    'The job completes by its deadline (`maxWaitSeconds`, default 180 s plus 1 s per 25 addresses): a temporary ' +
    'answer (greylisting, a tarpit, a refused or failing connection) is asked again on its own schedule until ' +
    'then, and whatever is still temporary at the deadline is reported `unknown` with its reason as subStatus, ' +
    "refunded when the provider deferred or blocked it. Storing a list needs the account's email confirmed: until " +
    'then only a test key may try a list of at most 100 rows (kept a day); past that, 403 `EMAIL_NOT_CONFIRMED`. ' +
    'Per-account quotas: at most `QUOTA_JOBS_IN_FLIGHT` jobs (default 10) pending or processing, and a storage ' +
    "budget a UTC day for the bytes written by all of the account's requests, a list counting its rows, cells and " +
    'results to come, charged or not (5 MB, plus 10 KB for each credit bought in the last 30 days or held, at most ' +
    '`QUOTA_STORAGE_BYTES_PER_DAY`, 100 MB); past one, 429 `QUOTA_EXCEEDED` with ' +
    '`details: { quota, limit, used, requested, resetAt }` (`resetAt` and `Retry-After` for the daily quota, null ' +
    'otherwise), nothing stored or charged, and an `Idempotency-Key` stays free for a later retry. When the store ' +
    'has taken its day of new data, 503 `DAILY_STORAGE_FULL` until midnight UTC. Rows that cost nothing (no ' +
    'address, or a duplicate) are dropped 7 days after upload (`FREE_ROWS_RETENTION_DAYS`; the results then say ' +
    'how many in `droppedRows`). Test-key jobs ' +
    "are deleted after 7 days (`SANDBOX_RETENTION_DAYS`), other jobs after 60. With `recheck` (or the account's " +
    'setting), addresses whose final answer is temporary are asked again over the next hours; a refunded ' +
    'address a round answers with a known verdict is charged 1 credit then (as far as the balance covers it), ' +
    'and each round that changes a verdict updates the completed job and sends `job.updated`. With `watch` (or ' +
    "the account's setting), the completed job watches its domains for `watchDays` days: a domain that moves its " +
    'MX, stops taking mail or turns catch-all on or off gets its addresses verified again, free for addresses ' +
    'already paid for, and a `job.updated` says what changed.',
  security: [{ ApiKeyAuth: [] }],
  request: {
    headers: IdempotencyHeaders,
    query: CsvOptions,
    body: {
      required: true,
      content: {
        'application/json': { schema: BulkUploadJsonRequest },
        'multipart/form-data': {
          schema: CsvOptions.extend({ file: z.string().meta({ format: 'binary' }).describe('the CSV file') }),
        },
        'text/csv': { schema: z.string().describe('the CSV file itself') },
      },
    },
  },
  responses: chargedPostResponses(
    { description: 'The job was created and queued.', schema: BulkUploadResponse },
    [
      'TOO_MANY_EMAILS',
      'WEBHOOK_SECRET_MISSING',
      'EMAIL_NOT_CONFIRMED',
      'SERVICE_UNAVAILABLE',
      'DAILY_STORAGE_FULL',
    ],
  ),
});

interface UploadOptions {
  name: string | null;
  webhookUrl: string | null;
  maxWaitSeconds: number | null;
  recheck: boolean | null;
  evidence: boolean | null;
  watch: boolean | null;
  watchDays: number | null;
}

interface UploadRequest extends UploadOptions {
  upload: ParsedUpload;
  source: 'json' | 'csv';
}

/**
 * Reads the upload from `body` (the request's body, or the same passed through the
 * idempotency fingerprint's hash).
 */
async function readUpload(
  c: Context<AppEnv>,
  body: ReadableStream<Uint8Array> | null,
): Promise<UploadRequest> {
  const contentType = c.req.header('content-type');
  const request = { headers: c.req.raw.headers, body };
  if (isJsonContentType(contentType)) {
    const body = await readBoundedBody(request, MAX_JSON_BYTES, (bytes) => {
      try {
        return JSON.parse(
          new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(bytes),
        ) as unknown;
      } catch {
        throw new ApiError('VALIDATION_ERROR', { message: 'The body is not valid UTF-8 JSON.' });
      }
    });
    if (body && typeof body === 'object' && Array.isArray((body as { emails?: unknown }).emails)) {
      const count = (body as { emails: unknown[] }).emails.length;
      if (count > MAX_BATCH_EMAILS)
        throw new ApiError('TOO_MANY_EMAILS', { details: { rows: count, max: MAX_BATCH_EMAILS } });
    }
    const parsed = BulkUploadJsonRequest.safeParse(body);
    if (!parsed.success) {
      throw validationError(parsed.error);
    }
    return {
      upload: rowsFromJson(parsed.data.emails),
      source: 'json',
      ...jsonOptions(parsed.data, c.req.query()),
    };
  }
  if (contentType?.toLowerCase().startsWith('multipart/form-data')) {
    const form = await readBoundedForm(request);
    const file = form.get('file');
    if (!(file instanceof File))
      throw new ApiError('VALIDATION_ERROR', { message: 'Attach the CSV as the form field "file".' });
    const options = csvOptions({
      emailColumn: form.get('emailColumn') ?? c.req.query('emailColumn'),
      name: form.get('name') ?? c.req.query('name'),
      webhookUrl: form.get('webhookUrl') ?? c.req.query('webhookUrl'),
      maxWaitSeconds: form.get('maxWaitSeconds') ?? c.req.query('maxWaitSeconds'),
      recheck: form.get('recheck') ?? c.req.query('recheck'),
      evidence: form.get('evidence') ?? c.req.query('evidence'),
      watch: form.get('watch') ?? c.req.query('watch'),
      watchDays: form.get('watchDays') ?? c.req.query('watchDays'),
    });
    return {
      upload: await rowsFromCsv(file.stream(), options.emailColumn),
      source: 'csv',
      ...nameAndHook(options),
    };
  }
  if (contentType?.toLowerCase().startsWith('text/csv')) {
    const options = csvOptions(c.req.query());
    if (Number(c.req.header('content-length')) > MAX_CSV_BYTES)
      throw new ApiError('PAYLOAD_TOO_LARGE', { details: { maxBytes: MAX_CSV_BYTES } });
    const upload = await rowsFromCsv(body ?? new Uint8Array(), options.emailColumn);
    return { upload, source: 'csv', ...nameAndHook(options) };
  }
  throw new ApiError('UNSUPPORTED_MEDIA_TYPE', {
    message: 'Send application/json, multipart/form-data or text/csv.',
  });
}

function csvOptions(raw: Record<string, unknown>): z.infer<typeof CsvOptions> {
  const values = Object.fromEntries(
    Object.entries(raw).filter(([, value]) => typeof value === 'string' && value !== ''),
  );
  const parsed = CsvOptions.safeParse(values);
  if (!parsed.success) throw new ApiError('VALIDATION_ERROR', { message: parsed.error.issues[0]?.message });
  return parsed.data;
}

/**
 * A JSON upload's options: its body's fields, and the query's, which the OpenAPI document lists
 * for every content type. The same option given in both with different values, or an
 * `emailColumn` (a JSON list has no columns), is a 400: an option is never dropped unsaid.
 */
function jsonOptions(body: BulkUploadJsonRequest, query: Record<string, string>): UploadOptions {
  if (query.emailColumn !== undefined) {
    throw new ApiError('VALIDATION_ERROR', {
      message: 'emailColumn picks a CSV column; a JSON upload lists its addresses in "emails".',
    });
  }
  const fromQuery = nameAndHook(csvOptions(query));
  const fromBody: UploadOptions = {
    name: body.name ?? null,
    webhookUrl: body.webhookUrl ?? null,
    maxWaitSeconds: body.maxWaitSeconds ?? null,
    recheck: body.recheck ?? null,
    evidence: body.evidence ?? null,
    watch: body.watch ?? null,
    watchDays: body.watchDays ?? null,
  };
  const merged = { ...fromQuery };
  for (const option of Object.keys(fromBody) as (keyof UploadOptions)[]) {
    const [inBody, inQuery] = [fromBody[option], fromQuery[option]];
    if (inBody !== null && inQuery !== null && inBody !== inQuery) {
      throw new ApiError('VALIDATION_ERROR', {
        message: `${option} is given in the query and in the body with different values.`,
      });
    }
    if (inBody !== null) Object.assign(merged, { [option]: inBody });
  }
  return merged;
}

function nameAndHook(options: z.infer<typeof CsvOptions>): UploadOptions {
  return {
    name: options.name ?? null,
    webhookUrl: options.webhookUrl ?? null,
    maxWaitSeconds: options.maxWaitSeconds ?? null,
    recheck: options.recheck === undefined ? null : options.recheck === 'true',
    evidence: options.evidence === undefined ? null : options.evidence === 'true',
    watch: options.watch === undefined ? null : options.watch === 'true',
    watchDays: options.watchDays ?? null,
  };
}

/**
 * The days an upload watches its job: its `watchDays`, or the default with `watch: true`; 'off'
 * with `watch: false` (and `watchDays` beside it contradicts it); null when it says neither, for
 * the account's default.
 */
function watchDaysOf(options: UploadOptions): number | 'off' | null {
  if (options.watch === false) {
    if (options.watchDays !== null)
      throw new ApiError('VALIDATION_ERROR', {
        message: 'watchDays is given with watch false: leave one out.',
      });
    return 'off';
  }
  return options.watchDays ?? (options.watch ? WATCH_DEFAULT_DAYS : null);
}

export function registerBulkUpload(app: OpenAPIHono<AppEnv>): void {
  app.openAPIRegistry.registerPath(route);
  app.post(PATH, requireScope(['bulk']), async (c) => {
    const headers = IdempotencyHeaders.safeParse({ 'idempotency-key': c.req.header('idempotency-key') });
    if (!headers.success) {
      throw new ApiError('VALIDATION_ERROR', {
        message: `Idempotency-Key: ${headers.error.issues[0]?.message}`,
      });
    }
    const key = headers.data['idempotency-key'];
    // With a key, the body is hashed as it is read: the fingerprint never needs a copy of it.
    const digesting = key === undefined ? null : digestingBody(c.req.raw.body);
    const request = await readUpload(c, digesting ? digesting.body : c.req.raw.body);
    const watchDays = watchDaysOf(request);
    const config = c.get('config');
    const caller = c.get('caller');
    // Sandbox jobs send no webhooks (docs/money.md, "Sandbox keys"): the account's signing secret is
    // a live secret, and a test key must not make rcpt sign events for it.
    if (request.webhookUrl && caller.mode === 'test') {
      throw new ApiError('VALIDATION_ERROR', {
        message: 'Jobs of test keys send no webhooks: upload without webhookUrl, and poll the job status.',
      });
    }
    const webhookUrl = request.webhookUrl
      ? validateWebhookUrl(request.webhookUrl, config.ALLOW_PRIVATE_TARGETS)
      : null;
    const db = c.get('db');
    // Events are signed with the account's secret: without one, none could ever be sent, so the
    // upload is refused before anything is charged (docs/api.md, "Webhooks").
    if (webhookUrl && !(await findAccount(db, caller.accountId))?.webhookSecret)
      throw new ApiError('WEBHOOK_SECRET_MISSING');
    const now = Date.now();
    // Made here: the job's charge is recorded under its id, which the key's claim names.
    const jobId = crypto.randomUUID();
    const answer = await answerRequestOnce(
      c,
      {
        operation: 'bulk-upload',
        key,
        bodyDigest: async () => (digesting ? await digesting.digest() : ''),
        chargeReference: jobId,
        now,
      },
      () =>
        createBatchJob({
          jobId,
          db,
          queue: c.get('services').queue,
          caller,
          upload: request.upload,
          source: request.source,
          name: request.name,
          webhookUrl,
          maxWaitSeconds: request.maxWaitSeconds,
          recheck: request.recheck,
          evidence: request.evidence ?? false,
          watchDays,
          quotas: quotasOf(config),
          probeSlots: () => linkedProbeSlots(c.get('services').hubs, config),
          samplePaces: paceSamplerOf(c.get('services'), caller),
          now,
        }),
    );
    return replyWith(c, answer);
  });
}

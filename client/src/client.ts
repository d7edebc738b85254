// The hand-written layer over the generated client: the calls an integration makes, with what a
// generator cannot know — polling a job with backoff, idempotent retries of charged calls,
// downloading results in upload order, and errors as exceptions that carry `code` and `requestId`.
import createClient, { type Client } from 'openapi-fetch';
import { checkedBaseUrl } from './base-url.ts';
import { errorOf, RcptConnectionError, RcptJobFailedError } from './errors.ts';
import type { components, paths } from './openapi.d.ts';
import { RetryingTransport } from './transport.ts';

type Schemas = components['schemas'];
export type VerificationResult = Schemas['VerificationResult'];
export type Job = Schemas['Job'];
export type UploadResponse = Schemas['BulkUploadResponse'];
export type Account = Schemas['AccountResponse']['account'];
export type Status = VerificationResult['status'];
export const STATUSES: readonly Status[] = ['deliverable', 'risky', 'unknown', 'undeliverable'];
/**
 * Whether to send to an address, per subStatus (the API's send advice, docs/verdicts.md "What to
 * send to"): the results filter `advice` keeps the rows of the subStatuses marked so.
 */
export type SendAdvice = 'send' | 'decide' | 'do_not_send';
export const SEND_ADVICE: readonly SendAdvice[] = ['send', 'decide', 'do_not_send'];

/** Which rows of a job's results to keep: all when neither is given, else those matching both. */
export interface ResultsFilter {
  /** Keep only rows whose verdict has one of these statuses. */
  only?: readonly Status[];
  /** Keep only rows whose subStatus has one of these send advices (`['send']`: the addresses to send to). */
  advice?: readonly SendAdvice[];
}

export interface RcptOptions {
  apiKey: string;
  /**
   * The deployment's base URL; default `http://127.0.0.1:8787` (what `npm start` serves). Plain
   * `http://` is refused unless the host is this machine: the key would travel in clear.
   */
  baseUrl?: string;
  /** Retries of a failed request (429, 5xx, network) after the first attempt; default 5. */
  maxRetries?: number;
  fetch?: typeof fetch;
  sleep?: (ms: number) => Promise<void>;
  random?: () => number;
}

/** A list: addresses, or a CSV file whose email column the API finds (or `emailColumn` names). */
export type ListInput = readonly string[] | { csv: string | Blob; filename?: string; emailColumn?: string };

export interface UploadOptions {
  name?: string;
  webhookUrl?: string;
  /** The job completes by this many seconds after the upload (30 to 10,800; the API's default when absent). */
  maxWaitSeconds?: number;
  /** Ask temporary answers again over the next hours (greylist follow-up); the account's setting when absent. */
  recheck?: boolean;
  /**
   * Watch the completed job's domains and verify their addresses again when one changes (MX moved,
   * mail stopped, catch-all on or off); the account's setting when absent.
   */
  watch?: boolean;
  /** How many days the watch lasts (1 to 60; 30 when absent). */
  watchDays?: number;
  /** Sent as `Idempotency-Key`; one is generated per call when absent, and reused by its retries. */
  idempotencyKey?: string;
}

export interface WaitOptions {
  onProgress?: (job: Job) => void;
  signal?: AbortSignal;
  /** First polling interval; it grows ×1.5 up to 5 s while the job does not move. Default 500 ms. */
  pollIntervalMs?: number;
}

export interface CleanOptions extends UploadOptions, WaitOptions {
  /** Told the upload's answer (the job id) as soon as the job exists, before the wait. */
  onUpload?: (upload: UploadResponse) => void;
}

export interface CleanedList {
  upload: UploadResponse;
  job: Job;
}

const MAX_POLL_INTERVAL_MS = 5_000;

export class Rcpt {
  /** The generated, fully typed client, for operations this layer does not wrap. */
  readonly api: Client<paths>;
  private readonly sleep: (ms: number) => Promise<void>;

  constructor(options: RcptOptions) {
    this.sleep = options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
    const transport = new RetryingTransport({
      fetch: options.fetch ?? globalThis.fetch,
      maxRetries: options.maxRetries ?? 5,
      sleep: this.sleep,
      random: options.random ?? Math.random,
    });
    this.api = createClient<paths>({
      baseUrl: checkedBaseUrl(options.baseUrl ?? 'http://127.0.0.1:8787'),
      headers: { 'X-API-Key': options.apiKey },
      fetch: transport.fetch,
    });
  }

  /**
   * Verifies one address (1 credit); a retry after a lost answer is not charged again. The
   * account's recent answer for the address is given again (`meta.cached`) unless `fresh`.
   * `timeoutMs`: answer by then (`timeout_exceeded` if the server is slower).
   * With `evidence`, an answer from SMTP carries the session behind it (`result.evidence`).
   */
  async verify(
    email: string,
    options: { idempotencyKey?: string; fresh?: boolean; timeoutMs?: number; evidence?: boolean } = {},
  ): Promise<{ result: VerificationResult; creditsRemaining: number }> {
    const { data } = await this.call(
      this.api.POST('/api/v1/verify', {
        body: {
          email,
          ...(options.fresh ? { fresh: true } : {}),
          ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
          ...(options.evidence ? { evidence: true } : {}),
        },
        headers: { 'Idempotency-Key': options.idempotencyKey ?? crypto.randomUUID() },
      }),
    );
    return { result: data.data, creditsRemaining: data.creditsRemaining };
  }

  /** Creates a job from a list; its unique valid addresses are charged once. */
  async upload(list: ListInput, options: UploadOptions = {}): Promise<UploadResponse> {
    const headers = { 'Idempotency-Key': options.idempotencyKey ?? crypto.randomUUID() };
    const query = {
      name: options.name,
      webhookUrl: options.webhookUrl,
      maxWaitSeconds: options.maxWaitSeconds,
      recheck: options.recheck,
      watch: options.watch,
      watchDays: options.watchDays,
    };
    if (isAddressList(list)) {
      const { data } = await this.call(
        this.api.POST('/api/v1/bulk/upload', { body: { emails: [...list], ...query }, headers }),
      );
      return data;
    }
    const form = new FormData();
    const file = list.csv instanceof Blob ? list.csv : new Blob([list.csv], { type: 'text/csv' });
    form.set('file', file, list.filename ?? 'list.csv');
    if (list.emailColumn !== undefined) form.set('emailColumn', list.emailColumn);
    for (const [field, value] of Object.entries(query))
      if (value !== undefined) form.set(field, String(value));
    const { data } = await this.call(
      this.api.POST('/api/v1/bulk/upload', {
        // The generated type describes the form's fields; the body sent is the FormData itself.
        body: form as unknown as { file: string },
        bodySerializer: (body) => body as unknown as FormData,
        headers,
      }),
    );
    return data;
  }

  async job(jobId: string): Promise<Job> {
    const { data } = await this.call(
      this.api.GET('/api/v1/bulk/status/{jobId}', { params: { path: { jobId } } }),
    );
    return data.job;
  }

  /** Polls a job until it completes; throws RcptJobFailedError if it fails. */
  async waitForJob(jobId: string, options: WaitOptions = {}): Promise<Job> {
    let interval = options.pollIntervalMs ?? 500;
    let lastProcessed = -1;
    for (;;) {
      options.signal?.throwIfAborted();
      const job = await this.job(jobId);
      options.onProgress?.(job);
      if (job.status === 'completed') return job;
      if (job.status === 'failed') throw new RcptJobFailedError(job);
      if (job.processedEmails === lastProcessed) interval = Math.min(MAX_POLL_INTERVAL_MS, interval * 1.5);
      lastProcessed = job.processedEmails;
      await this.sleep(interval);
    }
  }

  /** A completed job's results in upload order, optionally only some of them; free of charge. */
  async results(
    jobId: string,
    filter: ResultsFilter = {},
  ): Promise<{ results: VerificationResult[]; originalCsvData: Schemas['OriginalCsvData'] }> {
    const { data } = await this.call(
      this.api.GET('/api/v1/bulk/results/{jobId}', {
        params: { path: { jobId }, query: filterQuery(filter) },
      }),
    );
    // The operation also answers text/csv; without `format: 'csv'` the body is the JSON one.
    const body = data as Schemas['BulkResultsResponse'];
    return { results: body.results, originalCsvData: body.originalCsvData };
  }

  /**
   * A completed job's results as CSV: the original columns plus rcpt's verdict columns. As often
   * as asked, free of charge: a list is paid for once, at upload.
   */
  async resultsCsv(jobId: string, filter: ResultsFilter = {}): Promise<string> {
    const { data } = await this.call(
      this.api.GET('/api/v1/bulk/results/{jobId}', {
        params: { path: { jobId }, query: { format: 'csv', ...filterQuery(filter) } },
        parseAs: 'text',
      }),
    );
    return data;
  }

  /** Upload, wait, and report the finished job: the whole list-cleaning loop in one call. */
  async cleanList(list: ListInput, options: CleanOptions = {}): Promise<CleanedList> {
    const upload = await this.upload(list, options);
    options.onUpload?.(upload);
    const job = await this.waitForJob(upload.jobId, options);
    return { upload, job };
  }

  async jobs(page: { offset?: number; limit?: number } = {}): Promise<Schemas['BulkJobsResponse']> {
    const { data } = await this.call(this.api.GET('/api/v1/bulk/jobs', { params: { query: page } }));
    return data;
  }

  async account(): Promise<Account> {
    const { data } = await this.call(this.api.GET('/api/v1/account'));
    return data.account;
  }

  /** The call's data, or its error thrown as an RcptError / RcptConnectionError. */
  private async call<T>(
    pending: Promise<{ data?: T; error?: unknown; response: Response }>,
  ): Promise<{ data: T }> {
    let outcome: { data?: T; error?: unknown; response: Response };
    try {
      outcome = await pending;
    } catch (error) {
      throw new RcptConnectionError(`no answer from the rcpt API: ${(error as Error).message}`, {
        cause: error,
      });
    }
    if (!outcome.response.ok || outcome.data === undefined) throw errorOf(outcome.response, outcome.error);
    return { data: outcome.data };
  }
}

function isAddressList(list: ListInput): list is readonly string[] {
  return Array.isArray(list);
}

function filterQuery(filter: ResultsFilter): { status?: string; advice?: string } {
  return {
    ...(filter.only && filter.only.length > 0 ? { status: filter.only.join(',') } : {}),
    ...(filter.advice && filter.advice.length > 0 ? { advice: filter.advice.join(',') } : {}),
  };
}

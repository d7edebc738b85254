// The fetch the typed client runs on: it paces itself by the rate-limit headers, waits out a 429
// for as long as `Retry-After` says, and retries network failures and 5xx answers with jittered
// exponential backoff — but a POST only when it carries an `Idempotency-Key`, so that a retry can
// never be charged twice. A 429 `QUOTA_EXCEEDED` is answered at once: an account quota frees at
// midnight UTC or when a job finishes, not within a retry's wait.

export interface TransportOptions {
  fetch: typeof fetch;
  /** Retries after the first attempt. */
  maxRetries: number;
  sleep: (ms: number) => Promise<void>;
  /** 0 ≤ x < 1, for the backoff's jitter. */
  random: () => number;
}

const BASE_DELAY_MS = 500;
const MAX_DELAY_MS = 30_000;
const RETRYABLE_STATUSES = new Set([429, 500, 502, 503, 504]);

export class RetryingTransport {
  /** When the key's rate window has a free slot again (epoch ms); 0 when it has one now. */
  private windowOpensAt = 0;
  private readonly options: TransportOptions;

  constructor(options: TransportOptions) {
    this.options = options;
  }

  readonly fetch = async (request: Request): Promise<Response> => {
    const safeToRepeat = request.method === 'GET' || request.headers.has('idempotency-key');
    for (let attempt = 0; ; attempt++) {
      await this.waitForWindow();
      let response: Response;
      try {
        response = await this.options.fetch(request.clone());
      } catch (error) {
        if (!safeToRepeat || attempt >= this.options.maxRetries) throw error;
        await this.options.sleep(this.backoff(attempt));
        continue;
      }
      this.noteRateLimit(response);
      const retryable =
        RETRYABLE_STATUSES.has(response.status) &&
        (response.status === 429 || safeToRepeat) &&
        !(await isQuotaRefusal(response));
      if (!retryable || attempt >= this.options.maxRetries) return response;
      await response.body?.cancel();
      await this.options.sleep(retryAfterMs(response) ?? this.backoff(attempt));
    }
  };

  private async waitForWindow(): Promise<void> {
    const wait = this.windowOpensAt - Date.now();
    if (wait > 0) await this.options.sleep(wait);
  }

  private noteRateLimit(response: Response): void {
    const remaining = Number(response.headers.get('x-ratelimit-remaining'));
    const reset = Number(response.headers.get('x-ratelimit-reset'));
    const exhausted = response.headers.has('x-ratelimit-remaining') && remaining <= 0 && reset > 0;
    this.windowOpensAt = exhausted ? Date.now() + reset * 1000 : 0;
  }

  private backoff(attempt: number): number {
    const ceiling = Math.min(MAX_DELAY_MS, BASE_DELAY_MS * 2 ** attempt);
    return Math.round(ceiling / 2 + (this.options.random() * ceiling) / 2);
  }
}

/** A 429 whose body says an account quota, not the per-minute rate limit, refused the request. */
async function isQuotaRefusal(response: Response): Promise<boolean> {
  if (response.status !== 429) return false;
  const body = (await response
    .clone()
    .json()
    .catch(() => null)) as { code?: unknown } | null;
  return body?.code === 'QUOTA_EXCEEDED';
}

/** RFC 9110 §10.2.3: delay-seconds, or an HTTP date. */
function retryAfterMs(response: Response): number | null {
  const value = response.headers.get('retry-after');
  if (!value) return null;
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? null : Math.max(0, date - Date.now());
}

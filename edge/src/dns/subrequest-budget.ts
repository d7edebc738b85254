// What one Worker invocation may still fetch. Cloudflare counts every fetch() of an invocation
// against its plan's subrequest limit and fails the ones past it
// (https://developers.cloudflare.com/workers/platform/limits/#subrequests: Workers Free 50
// requests to the internet per invocation, Workers Paid 10,000 by default), and `wrangler dev`
// enforces none of it, so the code counts for itself.

export class SubrequestBudget {
  readonly limit: number;
  #left: number;

  constructor(limit: number) {
    this.limit = limit;
    this.#left = limit;
  }

  /** Fetches this budget still allows. */
  get left(): number {
    return this.#left;
  }

  /**
   * `fetch`, counted against the budget. Past it, the request is not made: it fails as a request
   * that could not be sent, which a DNS-over-HTTPS lookup reports as a transport failure.
   */
  readonly fetch: typeof fetch = (input, init) => {
    if (this.#left <= 0)
      return Promise.reject(new Error(`this invocation's subrequest budget (${this.limit}) is spent`));
    this.#left--;
    // workerd's fetch throws "Illegal invocation" when called detached from the global.
    return fetch(input, init);
  };
}

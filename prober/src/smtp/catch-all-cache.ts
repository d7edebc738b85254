// The catch-all answer of each domain, kept across probes: a list of 10,000 addresses over 200
// domains arrives as many probes per domain, and each would otherwise spend an RCPT for a
// made-up address (one more rejection towards the server's error limits) to learn the same
// thing. How long an answer holds and which answers are kept is the shared catch-all rule,
// which the edge's domain facts follow too.
import type { SmtpReply } from '@rcpt/shared/contract/prober';
import { CATCH_ALL_TTL_MS, isLastingCatchAllReply } from '@rcpt/shared/verify/catch-all';

const MAX_DOMAINS = 100_000;

export class CatchAllCache {
  readonly #ttlMs: number;
  readonly #now: () => number;
  readonly #answers = new Map<string, { reply: SmtpReply; at: number }>();

  constructor(options: { ttlMs?: number; now?: () => number } = {}) {
    this.#ttlMs = options.ttlMs ?? CATCH_ALL_TTL_MS;
    this.#now = options.now ?? Date.now;
  }

  /** The answer to the random address of `domain` (lower-case A-labels), while fresh. */
  get(domain: string): SmtpReply | null {
    const entry = this.#answers.get(domain);
    if (!entry) return null;
    if (this.#now() - entry.at < this.#ttlMs) return entry.reply;
    this.#answers.delete(domain);
    return null;
  }

  /** Keeps a lasting answer (2xx: catch-all; 5xx: not); a 4xx is about the moment and is not kept. */
  set(domain: string, reply: SmtpReply): void {
    if (!isLastingCatchAllReply(reply)) return;
    this.#answers.delete(domain);
    this.#answers.set(domain, { reply, at: this.#now() });
    if (this.#answers.size > MAX_DOMAINS) {
      const oldest = this.#answers.keys().next().value;
      if (oldest !== undefined) this.#answers.delete(oldest);
    }
  }
}

// The services of one request, assembled once per request (middleware/services.ts puts them on
// the Hono context) from the deployment's bindings and config, so that no route builds its own:
// routes take what they need from here and pass plain values on. Nothing here sees the Context.
import type { VerifyDeps } from '@rcpt/shared/verify/verify-address';
import type { Config } from '../config.ts';
import type { Db } from '../storage/db.ts';
import { directoryOf, shardNumberOf } from '../storage/shards.ts';
import { type AccountMailDeps, accountMailDepsOf } from './accounts/email-confirmation.ts';
import { type BatchMessage, verifyQueueOf } from './batch/queue.ts';
import { watchBalance, watchDepsOf } from './money/balance-watch.ts';
import { domainFactsOf, type ProbingCaller, verifyDepsOf } from './verify/deps.ts';
import type { DomainFactsStore } from './verify/domain-facts.ts';

export interface RequestServices {
  /** The database of the request's account (the directory's until the caller is known). */
  db: Db;
  config: Config;
  /** Work that goes on after the answer (the Worker's `waitUntil`). */
  inBackground: (work: Promise<unknown>) => void;
  /** The shared domain facts, one store for the request: what it reads, it reads once. */
  readonly facts: DomainFactsStore;
  /** The verify-batch queue, which an upload sends its work to. */
  queue: Queue<BatchMessage>;
  /** The region hubs of the prober fleet. */
  hubs: Env['PROBER_HUB'];
  /** The KeyLimiter objects: rate limits, daily caps, sign-in and account-mail limits. */
  limiters: Env['KEY_LIMITER'];
  /** The accounts' desks: their single calls, and what readers of D1 settle first (money/account-desk.ts). */
  desks: Env['ACCOUNT_DESK'];
  /** What the account's emails (confirmation, password reset) are sent and limited with. */
  readonly accountMail: AccountMailDeps;
  /**
   * The verification pipeline's deps for the caller's call over the request's domain facts;
   * `timeoutMs`: the whole verification's budget (default: the deployment's).
   */
  verifyDeps(caller: ProbingCaller, timeoutMs?: number): VerifyDeps;
  /** The account's balance watch (low-balance email, automatic top-up), run in the background. */
  watchBalance(accountId: string): void;
}

export function requestServicesOf(parts: {
  env: Env;
  config: Config;
  db: Db;
  inBackground: (work: Promise<unknown>) => void;
}): RequestServices {
  const { env, config, db, inBackground } = parts;
  let facts: DomainFactsStore | undefined;
  let accountMail: AccountMailDeps | undefined;
  const services: RequestServices = {
    db,
    config,
    inBackground,
    // Built when first asked for: most requests never look at a domain.
    get facts() {
      // A request's reads may come from the isolate's snapshot of the facts (docs/architecture.md).
      // Facts are shared by every account: they live in the directory's database.
      facts ??= domainFactsOf(directoryOf(db), config, undefined, { snapshot: true });
      return facts;
    },
    // Stamps each message with the shard of the request's account (storage/shards.ts).
    queue: verifyQueueOf(env, shardNumberOf(db)),
    hubs: env.PROBER_HUB,
    limiters: env.KEY_LIMITER,
    desks: env.ACCOUNT_DESK,
    // Built when first asked for: choosing the sender refuses a misconfigured one.
    get accountMail() {
      accountMail ??= accountMailDepsOf(db, config, env);
      return accountMail;
    },
    verifyDeps: (caller, timeoutMs) => verifyDepsOf(env, config, services.facts, caller, timeoutMs),
    watchBalance: (accountId) =>
      inBackground(watchBalance(watchDepsOf(db, config, env, Date.now()), accountId)),
  };
  return services;
}

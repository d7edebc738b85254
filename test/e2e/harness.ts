// Whole-system harness: the fake mail world, then the real edge under `wrangler dev` with a
// fresh database and a real prober process linked to it — driven through HTTP only.
import { appendFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, inject } from 'vitest';
import { normaliseAccountEmail } from '../../edge/src/services/accounts/account-email.ts';
import { CONSOLE_LINK_LINE } from '../../edge/src/services/accounts/confirmation-sender.ts';
import { executeSqlAsync, queryRowsAsync, shardTarget, sqlLiteral } from '../../scripts/stack/d1.ts';
import {
  type LocalStack,
  startLocalStack,
  stopStartedProcessesOnSigterm,
} from '../../scripts/stack/local-stack.ts';
import { accountCreation, createApiKey } from '../../scripts/stack/operator.ts';
import { until, untilValue } from '../eventually.ts';
import { type OpenApiDocument, OpenApiResponseChecker } from '../openapi/response-check.ts';
import { type FakeStripe, startFakeStripe, stripeEdgeVars } from '../world/fake-stripe.ts';
import { type MailWorld, startWorld, type WorldOptions } from '../world/index.ts';

const LOG_DIR = join(import.meta.dirname, '..', '..', '.test-artifacts', 'e2e-logs');

// vitest ends a test file's worker with SIGTERM, also when a hook timed out while the
// system was still starting: the stack it was building must not outlive the worker.
stopStartedProcessesOnSigterm();

export interface System {
  world: MailWorld;
  stack: LocalStack;
  /** The fake Stripe the edge buys credits from, posting its events to the edge; null unless asked for. */
  stripe: FakeStripe | null;
  logs: string[];
  api(
    path: string,
    init?: {
      method?: string;
      json?: unknown;
      key?: string | null;
      headers?: Record<string, string>;
      body?: RequestInit['body'];
    },
  ): Promise<Response>;
  /**
   * Freezes the prober process (SIGSTOP) until the returned function resumes it (SIGCONT):
   * probes sent to it wait, so a job stays running for as long as a test looks at it.
   */
  holdProber(): () => void;
  /**
   * The confirmation link the console sender printed for `email` (the edge's output is the
   * development inbox), waiting for it; `after` skips that many earlier links to it.
   */
  confirmationLink(email: string, after?: number): Promise<string>;
  close(): Promise<void>;
}

export async function startSystem(
  options: {
    greylistDelayMs?: number;
    /** How long the `slowgreylist` server defers a new triplet (the world's default: postgrey's 300 s). */
    slowGreylistDelayMs?: number;
    vars?: Record<string, string>;
    credits?: number;
    /** Link the prober at start (default); false: a test links it with `stack.startProber()`. */
    startProber?: boolean;
    /** Run the fake Stripe and turn purchases on (its keys as the edge's Stripe secrets). */
    stripe?: boolean;
    /** More of the world: block-listed clients, the company hosts. */
    world?: Omit<WorldOptions, 'greylistDelayMs' | 'slowGreylistDelayMs'>;
    /** More prober settings (SOURCE_ADDRESSES, …). */
    proberEnv?: Record<string, string>;
  } = {},
): Promise<System> {
  const world = await startWorld({
    ...options.world,
    greylistDelayMs: options.greylistDelayMs ?? 60_000,
    ...(options.slowGreylistDelayMs === undefined
      ? {}
      : { slowGreylistDelayMs: options.slowGreylistDelayMs }),
  });
  const stripe = options.stripe ? await startFakeStripe() : null;
  const persistTo = mkdtempSync(join(tmpdir(), 'rcpt-e2e-'));
  const logs: string[] = [];
  // The edge's and the prober's output, also kept on disk as it arrives: when a hook times out
  // while the system is still starting, this file is what says why.
  mkdirSync(LOG_DIR, { recursive: true });
  const logFile = join(LOG_DIR, `system-${Date.now()}-${process.pid}.log`);
  const startedAt = Date.now();
  appendFileSync(logFile, `[harness] starting ${new Date(startedAt).toISOString()}\n`);
  const common = { ALLOW_PRIVATE_TARGETS: 'true' };
  let stack: LocalStack;
  try {
    stack = await startLocalStack({
      persistTo,
      migratedFrom: inject('migratedDatabase'),
      vars: {
        DOH_URL: world.dohUrl,
        VERIFY_TIMEOUT_MS: '8000',
        ...common,
        ...(stripe ? stripeEdgeVars(stripe) : {}),
        ...options.vars,
      },
      proberEnv: {
        ...common,
        SMTP_PORT: String(world.smtpPort),
        // The prober's resolver (its egresses' health check) is the world's.
        DNS_SERVERS: world.dnsServer,
        COMMAND_TIMEOUT_MS: '3000',
        CONNECT_TIMEOUT_MS: '2000',
        ...options.proberEnv,
      },
      onLog: (source, line) => {
        logs.push(`[${source}] ${line}`);
        // Seconds since the start: where a start that timed out spent its time.
        appendFileSync(logFile, `+${((Date.now() - startedAt) / 1000).toFixed(1)} [${source}] ${line}\n`);
      },
      devCredits: options.credits ?? 100,
      startProber: options.startProber ?? true,
    });
  } catch (error) {
    await world.close();
    await stripe?.close();
    throw new Error(`${error instanceof Error ? error.message : String(error)}\n${logs.join('\n')}`);
  }
  if (stripe) stripe.webhookUrl = `${stack.baseUrl}/stripe/webhook`;
  let checker: OpenApiResponseChecker | null = null;
  return {
    world,
    stack,
    stripe,
    logs,
    async api(path, init = {}) {
      const headers = new Headers(init.headers);
      const key = init.key === undefined ? stack.apiKey : init.key;
      if (key) headers.set('X-API-Key', key);
      let body = init.body;
      if (init.json !== undefined) {
        headers.set('content-type', 'application/json');
        body = JSON.stringify(init.json);
      }
      const method = init.method ?? (body ? 'POST' : 'GET');
      const response = await fetch(`${stack.baseUrl}${path}`, { method, headers, body });
      checker ??= new OpenApiResponseChecker(
        (await (await fetch(`${stack.baseUrl}/openapi.json`)).json()) as OpenApiDocument,
      );
      const contentType = response.headers.get('content-type');
      const json = contentType?.startsWith('application/json') ? await response.clone().json() : null;
      const problems = checker.problems(
        method,
        new URL(path, stack.baseUrl).pathname,
        response.status,
        contentType,
        json,
      );
      if (problems.length > 0)
        throw new Error(`response does not match the OpenAPI document:\n${problems.join('\n')}`);
      return response;
    },
    holdProber() {
      const prober = stack.prober;
      if (!prober) throw new Error('no prober is running');
      prober.kill('SIGSTOP');
      return () => prober.kill('SIGCONT');
    },
    async confirmationLink(email, after = 0) {
      const prefix = `[edge] ${CONSOLE_LINK_LINE} ${email.toLowerCase()}: `;
      const links = () => logs.filter((line) => line.startsWith(prefix));
      try {
        await until(() => links().length > after, `the confirmation link to ${email} is printed`);
      } catch (error) {
        // The edge's last words say why (a failed send logs 'confirmation email not sent').
        throw new Error(`${(error as Error).message}; the edge's last lines:\n${logs.slice(-20).join('\n')}`);
      }
      return (links().at(-1) as string).slice(prefix.length);
    },
    async close() {
      await stack.close();
      await world.close();
      await stripe?.close();
      rmSync(persistTo, { recursive: true, force: true });
    },
  };
}

/**
 * The rows of one query of the system's local D1 (scripts/stack/d1.ts). The async form: where the
 * database must be left to wrangler, the blocking one would stop this process for the seconds
 * wrangler takes, it would not see the edge close an idle keep-alive connection, and its next
 * request would go out on it and fail.
 */
export async function sqlRows<T>(system: System, query: string): Promise<T[]> {
  return (await queryRowsAsync(system.stack.d1, query)) as T[];
}

/**
 * The rows of `query` in the database of the shard holding the account `email` signed up (a
 * sign-up may be placed in any: docs/architecture.md, "Sharding what still grows"), found through
 * the directory's lookup of the email.
 */
export async function accountSqlRows<T>(system: System, email: string, query: string): Promise<T[]> {
  const [placed] = await sqlRows<{ shard: number | null }>(
    system,
    `SELECT s.shard FROM account_lookups l LEFT JOIN account_shards s ON s.account_id = l.account_id
     WHERE l.kind = 'email' AND l.value = ${sqlLiteral(normaliseAccountEmail(email))}`,
  );
  if (!placed) throw new Error(`no account signed up as ${email}`);
  return (await queryRowsAsync(shardTarget(system.stack.d1, placed.shard ?? 0), query)) as T[];
}

/** Spacing of polls of the database: each look opens its file, a millisecond or two. */
export const SQL_POLL_MS = 100;

/** An account's credit balance as the database holds it (the development account's by default). */
export async function balanceOf(system: System, accountId = system.stack.accountId): Promise<number> {
  const [row] = await sqlRows<{ credit_balance: number }>(
    system,
    `SELECT credit_balance FROM accounts WHERE id = '${accountId}'`,
  );
  return Number(row?.credit_balance);
}

/** One more account with `credits` and a live API key of its own, for a test that needs a second customer. */
export async function newAccount(
  system: System,
  credits: number,
): Promise<{ accountId: string; key: string }> {
  const account = accountCreation({ credits });
  await executeSqlAsync(system.stack.d1, account.sql);
  const key = await createApiKey(system.stack.d1, { accountId: account.id, name: 'e2e', mode: 'live' });
  return { accountId: account.id, key: key.secret };
}

/** The body of a 200 answer; any other status fails the test with the body as its message. */
export async function okJson<T>(response: Response): Promise<T> {
  expect(response.status, await response.clone().text()).toBe(200);
  return response.json() as Promise<T>;
}

/**
 * Spacing of polls that each cost a rate-limited call: a key may make 100 requests a minute
 * (README, "Using the API"). One a second leaves room for the test's other calls, however long
 * a loaded machine makes the wait.
 */
export const API_POLL_MS = 1_000;

/** A job's status once `done` holds for it, asked of the API as a client would (every API_POLL_MS). */
export function jobWhen<J extends { status: string }>(
  system: System,
  jobId: string,
  done: (job: J) => boolean,
  options: { what?: string; limitMs?: number; key?: string } = {},
): Promise<J> {
  return untilValue(
    async () => {
      const { job } = await okJson<{ job: J }>(
        await system.api(`/api/v1/bulk/status/${jobId}`, options.key ? { key: options.key } : {}),
      );
      return done(job) ? job : undefined;
    },
    options.what ?? `job ${jobId} is done`,
    options.limitMs ?? 120_000,
    API_POLL_MS,
  );
}

/** Each address's subStatus in a job's results, read page by page as a client would. */
export async function subStatusesOf(system: System, jobId: string): Promise<Map<string, string>> {
  const found = new Map<string, string>();
  for (let offset = 0; ; offset += 100) {
    const page = await okJson<{ results: { email: string; subStatus: string }[] }>(
      await system.api(`/api/v1/bulk/results/${jobId}?offset=${offset}&limit=100`),
    );
    for (const result of page.results) found.set(result.email, result.subStatus);
    if (page.results.length < 100) return found;
  }
}

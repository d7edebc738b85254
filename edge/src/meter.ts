// Platform operations, counted for the benchmark when the deployment sets RCPT_METER=true
// (never in production): each entry point, queue send and consumer decision, Durable Object
// call (at the caller and inside the object), D1 statement and request to the internet logs one
// `rcpt-meter {…}` line that the benchmark adds up. What each count is priced at is in the
// README ("What a batch costs"); which limit each one meets is in docs/capacity.md.

import { type MeterCounts, meterLine } from './meter-line.ts';

export type { MeterCounts };

let enabled = false;

/** The deployment's metering settings, read by every entry point. */
export interface MeterVars {
  RCPT_METER?: string;
  /** Milliseconds added to each round trip to D1, as if its primary were far away. */
  RCPT_METER_D1_DELAY_MS?: string;
  /** Milliseconds added to each call to a Durable Object, as if it ran in another colo. */
  RCPT_METER_DO_DELAY_MS?: string;
}

/**
 * Distances the benchmark puts between this Worker and its stores (bench/store-distance.ts):
 * locally every store answers from the same machine, where a deployed Worker may be a continent
 * from D1's primary (docs/capacity.md, "Measured: a single call with D1 far away").
 */
const delays = { d1: 0, durableObject: 0 };

/** Turns metering on for this isolate when the deployment asks for it; called by every entry point. */
export function meterFrom(env: MeterVars): void {
  enabled = env.RCPT_METER === 'true';
  delays.d1 = enabled ? delayOf(env.RCPT_METER_D1_DELAY_MS) : 0;
  delays.durableObject = enabled ? delayOf(env.RCPT_METER_DO_DELAY_MS) : 0;
  if (enabled) countFetches();
}

function delayOf(setting: string | undefined): number {
  const ms = Number(setting ?? 0);
  return Number.isFinite(ms) && ms > 0 ? ms : 0;
}

async function travel(ms: number): Promise<void> {
  if (ms > 0) await new Promise((resolve) => setTimeout(resolve, ms));
}

export function meter(counts: MeterCounts): void {
  if (enabled) console.log(meterLine(counts));
}

let fetchesCounted = false;

/**
 * Every request to the internet goes through the global `fetch` (the DoH client, webhook
 * deliveries and Turnstile call it when they run): wrapped once per isolate, each is counted.
 */
function countFetches(): void {
  if (fetchesCounted) return;
  fetchesCounted = true;
  const send = globalThis.fetch;
  globalThis.fetch = (input, init) => {
    meter({ fetches: 1 });
    return send(input, init);
  };
}

/**
 * The Worker's bindings with their Durable Object namespaces counting each call made through a
 * stub (a subrequest of the invocation). D1 is counted by `meteredD1` and the verify-batch queue
 * by `meteredQueue`, where the code reaches them.
 */
export function meteredEnv(env: Env): Env {
  if (!enabled) return env;
  return {
    ...env,
    PROBER_HUB: meteredNamespace(env.PROBER_HUB),
    KEY_LIMITER: meteredNamespace(env.KEY_LIMITER),
    ACCOUNT_DESK: meteredNamespace(env.ACCOUNT_DESK),
    JOB_STORE: meteredNamespace(env.JOB_STORE),
  };
}

function meteredNamespace<T extends Rpc.DurableObjectBranded | undefined>(
  namespace: DurableObjectNamespace<T>,
): DurableObjectNamespace<T> {
  const countingStub = (stub: DurableObjectStub<T>): DurableObjectStub<T> =>
    new Proxy(stub, {
      get(target, property) {
        const value = Reflect.get(target, property, target);
        if (typeof value !== 'function' || property === 'then') return value;
        const call = (args: unknown[]) =>
          Reflect.apply(value as (...args: unknown[]) => unknown, target, args);
        return (...args: unknown[]) => {
          meter({ doCalls: 1 });
          // Without a distance the call goes out as it is, its promise pipelining kept.
          if (delays.durableObject === 0) return call(args);
          return travel(delays.durableObject).then(() => call(args));
        };
      },
    });
  return new Proxy(namespace, {
    get(target, property) {
      const value = Reflect.get(target, property, target);
      if (property === 'get' || property === 'getByName')
        return (...args: unknown[]) =>
          countingStub(Reflect.apply(value as (...args: unknown[]) => DurableObjectStub<T>, target, args));
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/** A queue producer binding counting each message written and each send call. */
export function meteredQueue<Body>(queue: Queue<Body>): Queue<Body> {
  if (!enabled) return queue;
  return new Proxy(queue, {
    get(target, property) {
      if (property === 'send')
        return async (body: Body, options?: QueueSendOptions) => {
          const sent = await target.send(body, options);
          meter({ queueWrites: 1, queueSendCalls: 1 });
          return sent;
        };
      if (property === 'sendBatch')
        return async (messages: Iterable<MessageSendRequest<Body>>, options?: QueueSendBatchOptions) => {
          const batch = [...messages];
          const sent = await target.sendBatch(batch, options);
          meter({ queueWrites: batch.length, queueSendCalls: 1 });
          return sent;
        };
      const value = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/**
 * A consumer batch that counts what becomes of each message: acknowledged (deleted) or retried,
 * explicitly or — when the handler left it undecided — as Queues decides at the end: acknowledged
 * when the handler returned, retried when it threw. Call `settle` once the handler is done.
 */
export function meteredBatch<Body>(batch: MessageBatch<Body>): {
  batch: MessageBatch<Body>;
  settle(handlerFailed: boolean): void;
} {
  if (!enabled) return { batch, settle: () => {} };
  const outcomes = new Map<string, 'ack' | 'retry'>();
  const decide = (id: string, outcome: 'ack' | 'retry') => {
    if (!outcomes.has(id)) outcomes.set(id, outcome);
  };
  const messages = batch.messages.map(
    (message) =>
      new Proxy(message, {
        get(target, property) {
          if (property === 'ack')
            return () => {
              decide(target.id, 'ack');
              target.ack();
            };
          if (property === 'retry')
            return (options?: QueueRetryOptions) => {
              decide(target.id, 'retry');
              target.retry(options);
            };
          return Reflect.get(target, property, target);
        },
      }),
  );
  const counted = new Proxy(batch, {
    get(target, property) {
      if (property === 'messages') return messages;
      if (property === 'ackAll')
        return () => {
          for (const message of target.messages) decide(message.id, 'ack');
          target.ackAll();
        };
      if (property === 'retryAll')
        return (options?: QueueRetryOptions) => {
          for (const message of target.messages) decide(message.id, 'retry');
          target.retryAll(options);
        };
      const value = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return {
    batch: counted,
    settle(handlerFailed) {
      for (const message of batch.messages) decide(message.id, handlerFailed ? 'retry' : 'ack');
      let acks = 0;
      for (const outcome of outcomes.values()) if (outcome === 'ack') acks++;
      meter({ queueAcks: acks, queueRetries: outcomes.size - acks });
    },
  };
}

const metered = new WeakSet<object>();
/** The SQL of each counted statement, by which a round trip of reads is told from one that writes. */
const sqlOf = new WeakMap<D1PreparedStatement, string>();
const READ_ONLY = /^\s*select\b/i;

/**
 * The D1 binding (or a session of it), counting each statement, each round trip, and the rows
 * each statement read and wrote (D1 reports them in `meta`). `raw()`, drizzle's way to select,
 * reports no meta: while metering it runs as `all()` and returns the row's values in column
 * order, as drizzle's own `db.batch` does (so, as there, a select must not name two columns alike).
 */
export function meteredD1<T extends D1Database | D1DatabaseSession>(d1: T): T {
  if (!enabled || metered.has(d1)) return d1;
  const count = (results: (D1Result | D1Response)[], statements: D1PreparedStatement[]) =>
    meter({
      d1Queries: results.length,
      d1Calls: 1,
      d1ReadCalls: statements.every((statement) => READ_ONLY.test(sqlOf.get(statement) ?? '')) ? 1 : 0,
      d1RowsRead: results.reduce((sum, result) => sum + (result.meta.rows_read ?? 0), 0),
      d1RowsWritten: results.reduce((sum, result) => sum + (result.meta.rows_written ?? 0), 0),
    });
  const wrapStatement = (statement: D1PreparedStatement, sql: string): D1PreparedStatement => {
    const wrapped: D1PreparedStatement = new Proxy(statement, {
      get(target, property) {
        if (property === 'bind') return (...values: unknown[]) => wrapStatement(target.bind(...values), sql);
        if (property === 'run' || property === 'all')
          return async () => {
            await travel(delays.d1);
            const result = await target[property]();
            count([result], [wrapped]);
            return result;
          };
        if (property === 'first')
          return async (column?: string) => {
            await travel(delays.d1);
            const result = await target.all();
            count([result], [wrapped]);
            const row = (result.results[0] ?? null) as Record<string, unknown> | null;
            return column === undefined || row === null ? row : row[column];
          };
        if (property === 'raw')
          return async (options?: { columnNames?: boolean }) => {
            await travel(delays.d1);
            const result = await target.all<Record<string, unknown>>();
            count([result], [wrapped]);
            const rows = result.results.map((row) => Object.values(row));
            const first = result.results[0];
            return options?.columnNames ? [first ? Object.keys(first) : [], ...rows] : rows;
          };
        const value = Reflect.get(target, property, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    sqlOf.set(wrapped, sql);
    return wrapped;
  };
  const wrapped = new Proxy(d1, {
    get(target, property) {
      if (property === 'prepare') return (query: string) => wrapStatement(target.prepare(query), query);
      if (property === 'batch')
        return async (statements: D1PreparedStatement[]) => {
          await travel(delays.d1);
          const results = await target.batch(statements);
          count(results, statements);
          return results;
        };
      if (property === 'withSession' && 'withSession' in target)
        return (constraintOrBookmark?: string) => meteredD1(target.withSession(constraintOrBookmark));
      const value = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  metered.add(wrapped);
  return wrapped;
}

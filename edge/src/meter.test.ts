import { createExecutionContext, createMessageBatch, getQueueResult } from 'cloudflare:test';
import { env } from 'cloudflare:workers';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { meteredBatch, meteredD1, meteredEnv, meteredQueue, meterFrom } from './meter.ts';
import { type MeterCounts, sumMeterLines } from './meter-line.ts';
import { createDb } from './storage/db.ts';
import { jobLists, knowStore } from './storage/job-lists/index.ts';

let lines: string[] = [];

beforeEach(() => {
  lines = [];
  vi.spyOn(console, 'log').mockImplementation((...args: unknown[]) => {
    lines.push(args.map(String).join(' '));
  });
  meterFrom({ RCPT_METER: 'true' });
});

afterEach(() => {
  meterFrom({});
  vi.restoreAllMocks();
});

/** The counters the lines logged so far add up to, without the ones that stayed 0. */
function counted(): MeterCounts {
  return Object.fromEntries(Object.entries(sumMeterLines(lines)).filter(([, value]) => value !== 0));
}

describe('meteredD1', () => {
  beforeEach(async () => {
    await env.DB.prepare('CREATE TABLE IF NOT EXISTS meter_rows (n INTEGER PRIMARY KEY, label TEXT)').run();
    await env.DB.prepare('DELETE FROM meter_rows').run();
    lines = [];
  });

  it('counts a batch as one round trip of several statements, with the rows they wrote', async () => {
    const db = meteredD1(env.DB);
    const insert = db.prepare('INSERT INTO meter_rows (n, label) VALUES (?1, ?2)');
    await db.batch([insert.bind(1, 'a'), insert.bind(2, 'b'), insert.bind(3, 'c')]);
    expect(counted()).toMatchObject({ d1Queries: 3, d1Calls: 1, d1RowsWritten: 3 });
    // A round trip with a write goes to the primary: not one a replica could answer.
    expect(sumMeterLines(lines).d1ReadCalls).toBe(0);
  });

  it('puts the configured distance before each round trip, and none without metering', async () => {
    meterFrom({ RCPT_METER: 'true', RCPT_METER_D1_DELAY_MS: '40' });
    const far = meteredD1(env.DB);
    const insert = far.prepare('INSERT INTO meter_rows (n, label) VALUES (?1, ?2)');
    const rowsNow = async () =>
      (await env.DB.prepare('SELECT COUNT(*) AS n FROM meter_rows').first<number>('n')) ?? 0;
    // The clock is the test's: the batch goes out once the distance has passed, not before (a
    // measured elapsed time would depend on how the runtime's clock advances, not on the meter).
    vi.useFakeTimers();
    try {
      const written = far.batch([insert.bind(1, 'a'), insert.bind(2, 'b')]);
      await vi.advanceTimersByTimeAsync(39);
      expect(await rowsNow()).toBe(0);
      await vi.advanceTimersByTimeAsync(1);
      await written;
      expect(await rowsNow()).toBe(2);
    } finally {
      vi.useRealTimers();
    }
    // Without metering the binding is not wrapped at all: no distance in production.
    meterFrom({ RCPT_METER_D1_DELAY_MS: '40' });
    expect(meteredD1(env.DB)).toBe(env.DB);
  });

  it('counts the rows a select read, and answers raw() as the binding does', async () => {
    await env.DB.batch(
      [1, 2, 3].map((n) =>
        env.DB.prepare('INSERT INTO meter_rows (n, label) VALUES (?1, ?2)').bind(n, `r${n}`),
      ),
    );
    const select = 'SELECT label, n FROM meter_rows ORDER BY n';
    const expected = await env.DB.prepare(select).raw();
    const expectedWithNames = await env.DB.prepare(select).raw({ columnNames: true });
    lines = [];
    const db = meteredD1(env.DB);
    expect(await db.prepare(select).raw()).toEqual(expected);
    expect(await db.prepare(select).raw({ columnNames: true })).toEqual(expectedWithNames);
    expect(await db.prepare('SELECT label FROM meter_rows WHERE n = ?1').bind(2).first('label')).toBe('r2');
    const reads = sumMeterLines(lines);
    expect(reads.d1Queries).toBe(3);
    expect(reads.d1Calls).toBe(3);
    expect(reads.d1ReadCalls).toBe(3);
    // A full scan of three rows twice, and at least the one row found by its key.
    expect(reads.d1RowsRead).toBeGreaterThanOrEqual(7);
    expect(reads.d1RowsWritten).toBe(0);
  });

  it('counts the statements of a session, which answers with a bookmark', async () => {
    const session = meteredD1(env.DB).withSession('first-unconstrained');
    await session.prepare('INSERT INTO meter_rows (n, label) VALUES (?1, ?2)').bind(9, 'x').run();
    const row = await session.prepare('SELECT label FROM meter_rows WHERE n = ?1').bind(9).first('label');
    expect(row).toBe('x');
    expect(session.getBookmark()).toEqual(expect.any(String));
    expect(counted()).toMatchObject({ d1Queries: 2, d1Calls: 2, d1ReadCalls: 1, d1RowsWritten: 1 });
  });

  it('counts nothing when the meter is off', async () => {
    meterFrom({});
    const db = meteredD1(env.DB);
    expect(db).toBe(env.DB);
    await db.prepare('SELECT n FROM meter_rows').all();
    expect(lines).toEqual([]);
  });
});

describe('meteredQueue', () => {
  it('counts each message written and each send call', async () => {
    const sent: unknown[] = [];
    const queue = meteredQueue<string>({
      metrics: async () => ({ backlogCount: 0, backlogBytes: 0 }),
      send: async (body) => {
        sent.push(body);
        return { metadata: { metrics: { backlogCount: 0, backlogBytes: 0 } } };
      },
      sendBatch: async (messages) => {
        for (const message of messages) sent.push(message.body);
        return { metadata: { metrics: { backlogCount: 0, backlogBytes: 0 } } };
      },
    });
    await queue.send('one');
    await queue.sendBatch(['two', 'three', 'four'].map((body) => ({ body })));
    expect(sent).toEqual(['one', 'two', 'three', 'four']);
    expect(counted()).toEqual({ queueWrites: 4, queueSendCalls: 2 });
  });
});

describe('meteredBatch', () => {
  const messagesOf = (count: number) =>
    Array.from({ length: count }, (_, index) => ({
      id: `m${index}`,
      timestamp: new Date(),
      attempts: 1,
      body: index,
    }));

  it('counts the messages retried one by one and the rest acknowledged together', async () => {
    const batch = createMessageBatch<number>('verify-batch', messagesOf(3));
    const consumer = meteredBatch(batch);
    consumer.batch.messages[1]?.retry();
    consumer.batch.ackAll();
    consumer.settle(false);
    const result = await getQueueResult(batch, createExecutionContext());
    expect(result.retryMessages.map((message) => message.msgId)).toEqual(['m1']);
    expect(result.ackAll).toBe(true);
    expect(counted()).toEqual({ queueAcks: 2, queueRetries: 1 });
  });

  it('counts undecided messages as Queues settles them: acknowledged, or retried when the handler threw', () => {
    const returned = meteredBatch(createMessageBatch<number>('verify-batch', messagesOf(2)));
    returned.settle(false);
    expect(counted()).toEqual({ queueAcks: 2 });
    lines = [];
    const threw = meteredBatch(createMessageBatch<number>('verify-batch', messagesOf(2)));
    threw.batch.messages[0]?.ack();
    threw.settle(true);
    expect(counted()).toEqual({ queueAcks: 1, queueRetries: 1 });
  });
});

describe('meteredEnv', () => {
  it("counts each call through a Durable Object stub as the caller's", async () => {
    const metered = meteredEnv(env);
    const limiter = metered.KEY_LIMITER.get(metered.KEY_LIMITER.idFromName(`meter-${crypto.randomUUID()}`));
    const decision = await limiter.hit(5, 60_000);
    expect(decision).toMatchObject({ allowed: true, remaining: 4 });
    expect(sumMeterLines(lines).doCalls).toBe(1);
  });

  it("counts each call to a job's lists in its object, at the caller", async () => {
    const jobId = crypto.randomUUID();
    knowStore(jobId, 'object');
    const report = await jobLists(createDb(env.DB), jobId).report();
    expect(report).toMatchObject({ seq: 0, pending: 0 });
    expect(sumMeterLines(lines).doCalls).toBe(1);
  });

  it('counts each request to the internet', async () => {
    // Nothing listens on port 9 of loopback: the request fails, and was made all the same.
    await fetch('http://127.0.0.1:9/').catch(() => undefined);
    expect(sumMeterLines(lines).fetches).toBe(1);
  });
});

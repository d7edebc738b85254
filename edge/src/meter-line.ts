// The cost meter's line format: what the edge prints and what the benchmark reads back.
// No Worker types here, so Node scripts can import it.

/**
 * What one entry point, binding call or Durable Object handler used, each counted where it
 * happens (docs/capacity.md says which limit each one meets).
 */
export interface MeterCounts {
  /** Invocations of the Worker: HTTP requests, queue consumer batches, cron runs. */
  workerRequests?: number;
  /** Requests a Durable Object handled (RPC calls, fetches, alarms), counted inside the object. */
  doRequests?: number;
  /** Incoming WebSocket messages of a Durable Object (billed at 20 messages per request). */
  doWebSocketMessages?: number;
  /** Durable Object calls made through a stub: subrequests of the caller's invocation. */
  doCalls?: number;
  /** Messages sent to a queue (one write each). */
  queueWrites?: number;
  /** `send` and `sendBatch` calls: subrequests of the sender's invocation. */
  queueSendCalls?: number;
  /** Consumer invocations, and the messages they were handed (one read each). */
  queueBatches?: number;
  queueReads?: number;
  /** Messages acknowledged (deleted from the queue) and handed back for a retry. */
  queueAcks?: number;
  queueRetries?: number;
  /** D1 statements run, and round trips to D1 (a batch of statements is one). */
  d1Queries?: number;
  d1Calls?: number;
  /** Round trips of SELECTs only: the ones a read replica may answer. */
  d1ReadCalls?: number;
  d1RowsRead?: number;
  d1RowsWritten?: number;
  /** Requests to the internet (DNS over HTTPS, webhooks, Turnstile): subrequests. */
  fetches?: number;
}

export type MeterKey = keyof MeterCounts;

/** Every counter, in the order the benchmark prints them. */
export const METER_KEYS: readonly MeterKey[] = [
  'workerRequests',
  'doRequests',
  'doWebSocketMessages',
  'doCalls',
  'queueWrites',
  'queueSendCalls',
  'queueBatches',
  'queueReads',
  'queueAcks',
  'queueRetries',
  'd1Queries',
  'd1Calls',
  'd1ReadCalls',
  'd1RowsRead',
  'd1RowsWritten',
  'fetches',
];

const PREFIX = 'rcpt-meter ';

export function meterLine(counts: MeterCounts): string {
  return `${PREFIX}${JSON.stringify(counts)}`;
}

/** The counts a line of the deployment's output carries, or null when it is not a meter line. */
export function meterCountsOf(line: string): MeterCounts | null {
  const at = line.indexOf(PREFIX);
  return at === -1 ? null : (JSON.parse(line.slice(at + PREFIX.length)) as MeterCounts);
}

/** The sum of every meter line among `lines`, each counter present (0 when none counted it). */
export function sumMeterLines(lines: Iterable<string>): Required<MeterCounts> {
  const total = Object.fromEntries(METER_KEYS.map((key) => [key, 0])) as Required<MeterCounts>;
  for (const line of lines) {
    const counts = meterCountsOf(line);
    if (!counts) continue;
    for (const key of METER_KEYS) total[key] += counts[key] ?? 0;
  }
  return total;
}

/**
 * The subrequests those counts made: requests to the internet plus, on Workers Paid, every D1
 * round trip, Durable Object call and queue send (Workers limits, "Subrequests").
 */
export function subrequestsOf(counts: Required<MeterCounts>): number {
  return counts.fetches + counts.d1Calls + counts.doCalls + counts.queueSendCalls;
}

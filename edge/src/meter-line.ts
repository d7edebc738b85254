// The cost meter's line format: what the edge prints and what the benchmark reads back.
// No Worker types here, so Node scripts can import it.

export interface MeterCounts {
  workerRequests?: number;
  doRequests?: number;
  /** Incoming WebSocket messages of a Durable Object (billed at 20 messages per request). */
  doWebSocketMessages?: number;
  queueWrites?: number;
  queueReads?: number;
  queueDeletes?: number;
  d1RowsRead?: number;
  d1RowsWritten?: number;
}

const PREFIX = 'rcpt-meter ';

export function meterLine(counts: MeterCounts): string {
  return `${PREFIX}${JSON.stringify(counts)}`;
}

/** The counts a line of the deployment's output carries, or null when it is not a meter line. */
export function meterCountsOf(line: string): MeterCounts | null {
  const at = line.indexOf(PREFIX);
  return at === -1 ? null : (JSON.parse(line.slice(at + PREFIX.length)) as MeterCounts);
}

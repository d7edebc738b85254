// How `rcpt clean` shows a job's progress: one line redrawn in place on a terminal, and on
// anything else (a log, a CI job) a plain line each time another tenth of the list is done.
import { STATUSES } from './client.ts';
import type { components } from './openapi.d.ts';

type Job = components['schemas']['Job'];

const BAR_WIDTH = 24;
const COUNT_OF = {
  deliverable: 'deliverableCount',
  risky: 'riskyCount',
  unknown: 'unknownCount',
  undeliverable: 'undeliverableCount',
} as const;

/** Seconds left at the rate seen so far; null until the job has moved. */
export function etaSeconds(job: Job, elapsedMs: number): number | null {
  if (job.processedEmails <= 0 || job.processedEmails >= job.totalEmails) return null;
  const perMs = job.processedEmails / Math.max(1, elapsedMs);
  return Math.ceil((job.totalEmails - job.processedEmails) / perMs / 1000);
}

/** `[#########---------------]  38%  3,800/10,000  deliverable 2,100 · risky 300 · … ETA 12s` */
export function progressLine(job: Job, elapsedMs: number, bar = true): string {
  const filled = Math.round((job.progress / 100) * BAR_WIDTH);
  const counts = STATUSES.map((status) => `${status} ${formatCount(job[COUNT_OF[status]])}`).join(' · ');
  const eta = etaSeconds(job, elapsedMs);
  return [
    bar ? `[${'#'.repeat(filled)}${'-'.repeat(BAR_WIDTH - filled)}]` : job.status,
    `${String(job.progress).padStart(3)}%`,
    `${formatCount(job.processedEmails)}/${formatCount(job.totalEmails)}`,
    counts,
    eta === null ? '' : `ETA ${formatDuration(eta)}`,
  ]
    .filter(Boolean)
    .join('  ');
}

export interface ProgressWriter {
  update(job: Job): void;
  done(): void;
}

/** Progress to `stream`: redrawn in place on a TTY, a line per tenth otherwise. */
export function progressWriter(
  stream: { write(text: string): unknown; isTTY?: boolean },
  now: () => number = Date.now,
): ProgressWriter {
  const started = now();
  let lastTenth = -1;
  let drawn = false;
  return {
    update(job) {
      const elapsed = now() - started;
      if (stream.isTTY) {
        stream.write(`\r\x1b[2K${progressLine(job, elapsed)}`);
        drawn = true;
        return;
      }
      const tenth = Math.floor(job.progress / 10);
      if (tenth === lastTenth) return;
      lastTenth = tenth;
      stream.write(`${progressLine(job, elapsed, false)}\n`);
    },
    done() {
      if (drawn) stream.write('\n');
    },
  };
}

export function formatCount(count: number): string {
  return count.toLocaleString('en-US');
}

function formatDuration(seconds: number): string {
  if (seconds < 60) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  return minutes < 60
    ? `${minutes}m${String(seconds % 60).padStart(2, '0')}s`
    : `${Math.floor(minutes / 60)}h${String(minutes % 60).padStart(2, '0')}m`;
}

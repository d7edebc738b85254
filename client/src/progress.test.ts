import { describe, expect, it } from 'vitest';
import type { Job } from './client.ts';
import { etaSeconds, progressLine, progressWriter } from './progress.ts';

function job(processed: number, total = 10_000): Job {
  return {
    id: '00000000-0000-4000-8000-00000000000a',
    name: 'list.csv',
    status: processed >= total ? 'completed' : 'processing',
    progress: Math.floor((processed / total) * 100),
    totalEmails: total,
    processedEmails: processed,
    deliverableCount: Math.floor(processed / 2),
    undeliverableCount: processed - Math.floor(processed / 2),
    riskyCount: 0,
    unknownCount: 0,
    catchAllCount: 0,
    createdAt: '2026-11-23T10:00:00.000Z',
    completedAt: null,
    deadlineAt: '2026-11-23T10:03:00.000Z',
    bounceEstimate: null,
    creditsCharged: total,
    creditsRefunded: 0,
    failureReason: null,
    recheck: false,
    recheckedAt: null,
    nextRecheckAt: null,
    evidence: false,
    watchDays: null,
    watchedUntil: null,
  };
}

describe('rcpt clean progress', () => {
  it('shows a bar, the counts per status and an ETA from the rate so far', () => {
    const line = progressLine(job(2_500), 10_000);
    expect(line).toContain('[######------------------]');
    expect(line).toContain(' 25%');
    expect(line).toContain('2,500/10,000');
    expect(line).toContain('deliverable 1,250 · risky 0 · unknown 0 · undeliverable 1,250');
    expect(line).toContain('ETA 30s');
  });

  it('has no ETA before the job moves or after it is done', () => {
    expect(etaSeconds(job(0), 5_000)).toBeNull();
    expect(etaSeconds(job(10_000), 5_000)).toBeNull();
    expect(etaSeconds(job(1_000), 1_000)).toBe(9);
  });

  it('redraws one line in place on a terminal', () => {
    const written: string[] = [];
    const writer = progressWriter({ isTTY: true, write: (text: string) => written.push(text) }, () => 0);
    writer.update(job(100));
    writer.update(job(200));
    writer.done();
    expect(written).toHaveLength(3);
    expect(written[0]?.startsWith('\r\x1b[2K[')).toBe(true);
    expect(written[2]).toBe('\n');
  });

  it('writes a plain line per tenth of the list elsewhere', () => {
    const written: string[] = [];
    const writer = progressWriter({ isTTY: false, write: (text: string) => written.push(text) }, () => 0);
    for (let processed = 0; processed <= 10_000; processed += 500) writer.update(job(processed));
    writer.done();
    expect(written).toHaveLength(11);
    expect(written.every((line) => line.endsWith('\n') && !line.includes('\r'))).toBe(true);
    expect(written.at(-1)).toMatch(/^completed\s+100%\s+10,000\/10,000/);
  });
});

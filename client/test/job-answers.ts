// A job's answers as the scripted API gives them to the tests of `rcpt clean`, `rcpt results`
// and the MCP server's clean_csv: the upload, the job's status, and its cleaned CSV.
import type { Job } from '../src/client.ts';
import { jsonAnswer } from './scripted-api.ts';

export const JOB_ID = '6d1f9c1e-4f0a-4a57-9d8e-2b8f5e0c7a11';

export function job(overrides: Partial<Job> = {}): Job {
  return {
    id: JOB_ID,
    name: 'list.csv',
    status: 'completed',
    progress: 100,
    totalEmails: 2,
    processedEmails: 2,
    deliverableCount: 1,
    undeliverableCount: 1,
    riskyCount: 0,
    unknownCount: 0,
    catchAllCount: 0,
    createdAt: '2026-11-26T10:00:00.000Z',
    completedAt: '2026-11-26T10:00:09.000Z',
    deadlineAt: '2026-11-26T10:10:00.000Z',
    bounceEstimate: { percent: 50, level: 'high', basis: '1 of 2 addresses undeliverable' },
    creditsCharged: 2,
    creditsRefunded: 0,
    failureReason: null,
    recheck: true,
    recheckedAt: null,
    nextRecheckAt: '2026-11-26T10:15:09.000Z',
    evidence: false,
    watchDays: null,
    watchedUntil: null,
    ...overrides,
  };
}

export const uploaded = () =>
  jsonAnswer(200, {
    success: true,
    jobId: JOB_ID,
    totalEmails: 2,
    duplicateCount: 1,
    skippedRows: 0,
    emptyRows: 0,
    invalidRows: 0,
    estimatedTimeSeconds: 20,
    creditsCharged: 2,
  });

export const CLEANED_CSV =
  'name,email,rcpt_status,rcpt_sub_status,rcpt_score,rcpt_is_deliverable,rcpt_reason,rcpt_is_catch_all,rcpt_suggestion\r\n' +
  'Alice,alice@example.com,deliverable,accepted_email,97,true,The mail server accepted the address.,false,\r\n' +
  'Alice again,alice@example.com,deliverable,accepted_email,97,true,The mail server accepted the address.,false,\r\n';

export const csvAnswer = () =>
  new Response(CLEANED_CSV, { status: 200, headers: { 'content-type': 'text/csv' } });

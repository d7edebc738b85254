/** @jsxImportSource hono/jsx */
// Bulk (`/bulk`): a CSV upload. Without JavaScript the form creates the job directly; with
// it, app.js previews the first rows, lets the person pick the email column, and shows the
// counts and the cost from POST /bulk/preview (nothing stored) before they confirm. Below the
// form, the account's recent jobs, each linked to its page.
import { type Job, MAX_BATCH_EMAILS } from '@rcpt/shared/contract/api';
import { MAX_EVIDENCE_BYTES } from '@rcpt/shared/contract/prober';
import { ApiError } from '@rcpt/shared/errors';
import type { Context, Hono } from 'hono';
import type { DashboardEnv } from '../../middleware/session.ts';
import { MAX_CSV_BYTES, rowsFromCsv } from '../../services/batch/input.ts';
import { createBatchJob, jobView } from '../../services/batch/jobs.ts';
import { addressOfRow } from '../../services/batch/plan.ts';
import { previewCsvUpload } from '../../services/dashboard/bulk-preview.ts';
import { quotasOf } from '../../services/money/quotas.ts';
import { readBalance } from '../../storage/accounts.ts';
import { listJobs } from '../../storage/jobs.ts';
import { DataTable } from './data-table.tsx';
import { CsrfField, FileField, formText, Notice, SubmitButton, TextField, Timestamp } from './forms.tsx';
import { signedInPage, spendingJson, spendingPage } from './guards.ts';
import { Card, Layout, layoutContext, renderPage } from './layout.tsx';
import { StatusBadge } from './verification-result.tsx';

const UPLOAD_ERRORS = new Set([
  'VALIDATION_ERROR',
  'TOO_MANY_EMAILS',
  'PAYLOAD_TOO_LARGE',
  'INSUFFICIENT_CREDITS',
  'EMAIL_NOT_CONFIRMED',
  'QUOTA_EXCEEDED',
  'DAILY_STORAGE_FULL',
]);

/** Jobs listed under the upload form; the rest are in the history. */
const RECENT_JOBS = 10;

function RecentJobs(props: { jobs: Job[] }) {
  return (
    <Card id="jobs-heading" title="Your recent jobs">
      {props.jobs.length === 0 ? (
        <p class="muted">No list uploaded yet.</p>
      ) : (
        <DataTable columns={['List', 'Created', 'Status', 'Addresses']} data-recent-jobs>
          {props.jobs.map((job) => (
            <tr>
              <td data-label="List">
                <a href={`/jobs/${job.id}`}>{job.name ?? `Job ${job.id.slice(0, 8)}`}</a>
              </td>
              <td data-label="Created">
                <Timestamp at={Date.parse(job.createdAt)} />
              </td>
              <td data-label="Status">
                <StatusBadge status={job.status} /> {job.status === 'completed' ? null : `${job.progress}%`}
              </td>
              <td data-label="Addresses">
                {job.processedEmails} of {job.totalEmails} verified
              </td>
            </tr>
          ))}
        </DataTable>
      )}
      <p>
        <a href="/history?kind=batch">All batch jobs</a>
      </p>
    </Card>
  );
}

function BulkPage(props: {
  csrfToken: string;
  creditsAvailable: number;
  jobs: Job[];
  error?: string | null;
  name?: string;
  emailColumn?: string;
}) {
  return (
    <>
      <h1>Bulk verification</h1>
      <p>
        Upload a CSV file of up to {MAX_BATCH_EMAILS.toLocaleString('en-US')} rows (
        {MAX_CSV_BYTES / 1024 / 1024} MB). Each unique valid address uses one credit; duplicates, empty and
        invalid rows are free. You have <strong>{props.creditsAvailable.toLocaleString('en-US')}</strong>{' '}
        credits.
      </p>
      {props.error ? <Notice kind="error">{props.error}</Notice> : null}
      <form
        method="post"
        action="/bulk"
        enctype="multipart/form-data"
        class="card stack bulk-form"
        data-bulk-preview="/bulk/preview"
      >
        <CsrfField token={props.csrfToken} />
        <FileField
          id="bulk-file"
          name="file"
          label="CSV file"
          accept=".csv,.tsv,.txt,text/csv,text/plain"
          required
          dropzone
          hint={
            <>
              Choose a file
              <span class="js-only" hidden>
                , or drop it here
              </span>
              . Comma, semicolon or tab separated, UTF-8, with or without a header row.
            </>
          }
        />
        <TextField
          id="bulk-email-column"
          name="emailColumn"
          label="Email column (optional)"
          value={props.emailColumn}
          maxlength={200}
          hint="The header name, or the column's position counting from 0. Leave empty to detect it."
        />
        <TextField
          id="bulk-name"
          name="name"
          label="List name (optional)"
          value={props.name}
          maxlength={200}
        />
        <label class="checkbox">
          <input type="checkbox" name="evidence" value="true" /> Keep the SMTP evidence behind each answer (up
          to {MAX_EVIDENCE_BYTES / 1024} KB an address, counted in your storage budget)
        </label>
        <section class="preview" data-preview hidden aria-live="polite" aria-label="Preview of the upload" />
        <div class="button-row">
          <SubmitButton>Verify list</SubmitButton>
        </div>
      </form>
      <RecentJobs jobs={props.jobs} />
    </>
  );
}

async function recentJobs(c: Context<DashboardEnv>): Promise<Job[]> {
  const rows = await listJobs(c.get('db'), c.get('caller').accountId, { offset: 0, limit: RECENT_JOBS });
  return rows.map(jobView);
}

async function uploadedFile(c: Context<DashboardEnv>): Promise<ReadableStream<Uint8Array>> {
  const file = (await c.req.formData()).get('file');
  if (!(file instanceof File) || file.size === 0)
    throw new ApiError('VALIDATION_ERROR', { message: 'Choose a CSV file to upload.' });
  return file.stream();
}

async function optionalText(c: Context<DashboardEnv>, name: string): Promise<string | undefined> {
  const value = (await formText(c, name)).trim();
  return value === '' ? undefined : value.slice(0, 200);
}

export function registerBulkPages(dashboard: Hono<DashboardEnv>): void {
  /** The Bulk page with the account's balance and recent jobs; a refused upload adds its form's state. */
  const bulkPage = async (
    c: Context<DashboardEnv>,
    refused?: {
      error: string;
      name: string | undefined;
      emailColumn: string | undefined;
      status: 400 | 402 | 403 | 413 | 429 | 503;
    },
  ) => {
    // The balance the session middleware read for this request: a refused upload charged nothing.
    const creditsAvailable = c.get('caller').creditBalance;
    return renderPage(
      c,
      <Layout title="Bulk verification" section="bulk" {...layoutContext(c)}>
        <BulkPage
          csrfToken={c.get('csrfToken')}
          creditsAvailable={creditsAvailable}
          jobs={await recentJobs(c)}
          {...(refused ? { error: refused.error, name: refused.name, emailColumn: refused.emailColumn } : {})}
        />
      </Layout>,
      refused?.status,
    );
  };

  dashboard.get('/bulk', ...signedInPage, (c) => bulkPage(c));

  dashboard.post('/bulk', ...spendingPage, async (c) => {
    const db = c.get('db');
    const caller = c.get('caller');
    const emailColumn = await optionalText(c, 'emailColumn');
    const name = await optionalText(c, 'name');
    const evidence = (await formText(c, 'evidence')) === 'true';
    try {
      const upload = await rowsFromCsv(await uploadedFile(c), emailColumn);
      // A column picked by hand without a single address in it (the wrong one) would be a job of
      // invalid rows only: say so instead of creating it.
      if (emailColumn !== undefined && !upload.rows.some((row) => addressOfRow(row) !== null)) {
        const column = upload.headers?.[upload.emailColumn ?? -1] ?? emailColumn;
        throw new ApiError('VALIDATION_ERROR', {
          message: `The column “${column}” holds no email addresses: pick the column that does.`,
        });
      }
      const created = await createBatchJob({
        db,
        queue: c.get('services').queue,
        caller,
        upload,
        source: 'csv',
        name: name ?? null,
        webhookUrl: null,
        maxWaitSeconds: null,
        evidence,
        quotas: quotasOf(c.get('config')),
        now: Date.now(),
      });
      return c.redirect(`/jobs/${created.jobId}`, 303);
    } catch (error) {
      if (!(error instanceof ApiError) || !UPLOAD_ERRORS.has(error.code)) throw error;
      const creditsAvailable = (await readBalance(db, caller.accountId)) ?? 0;
      const message =
        error.code === 'INSUFFICIENT_CREDITS'
          ? `This list needs ${String(error.details?.required)} credits; you have ${creditsAvailable}.`
          : error.code === 'PAYLOAD_TOO_LARGE'
            ? `The file is larger than ${MAX_CSV_BYTES / 1024 / 1024} MB.`
            : error.message;
      if (error.retryAfterSeconds !== undefined) c.header('Retry-After', String(error.retryAfterSeconds));
      return bulkPage(c, {
        error: message,
        name,
        emailColumn,
        status: error.httpStatus as 400 | 402 | 403 | 413 | 429 | 503,
      });
    }
  });

  // What the upload would do, for the page's script: counts and cost, nothing stored.
  dashboard.post('/bulk/preview', ...spendingJson, async (c) => {
    const preview = await previewCsvUpload(c.get('db'), {
      accountId: c.get('caller').accountId,
      file: await uploadedFile(c),
      emailColumn: await optionalText(c, 'emailColumn'),
      now: Date.now(),
    });
    return c.json({ success: true as const, preview });
  });
}

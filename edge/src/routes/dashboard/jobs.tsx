/** @jsxImportSource hono/jsx */
// A batch job (`/jobs/:id`): live progress (app.js polls /jobs/:id/status every second;
// without JavaScript the page refreshes itself while the job runs), per-status counts, and
// the results as CSV (original columns plus verdicts) or JSON once it is completed.
import { type Job, MAX_BATCH_EMAILS } from '@rcpt/shared/contract/api';
import type { Context, Hono } from 'hono';
import type { DashboardEnv } from '../../middleware/session.ts';
import { jobView, notFoundJob, readJobResults, resultsToCsv } from '../../services/batch-jobs.ts';
import { findJob, type JobRow } from '../../storage/jobs.ts';
import { Timestamp } from './forms.tsx';
import { signedInJson, signedInPage } from './guards.ts';
import { Layout, layoutContext, renderPage } from './layout.tsx';
import { StatusBadge } from './verification-result.tsx';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** How often the page reloads itself without JavaScript while the job runs. */
const NO_SCRIPT_REFRESH_SECONDS = 2;

const COUNTS: { field: keyof Job; label: string }[] = [
  { field: 'totalEmails', label: 'Addresses to verify' },
  { field: 'processedEmails', label: 'Verified' },
  { field: 'deliverableCount', label: 'Deliverable' },
  { field: 'undeliverableCount', label: 'Undeliverable' },
  { field: 'riskyCount', label: 'Risky' },
  { field: 'unknownCount', label: 'Unknown' },
  { field: 'catchAllCount', label: 'Catch-all' },
];

function isRunning(job: Job): boolean {
  return job.status === 'pending' || job.status === 'processing';
}

function JobPage(props: { job: Job; row: JobRow }) {
  const { job, row } = props;
  const base = `/jobs/${job.id}`;
  return (
    <section data-job-status-url={`${base}/status`} data-job-state={job.status} aria-labelledby="job-heading">
      <h1 id="job-heading">{job.name ?? 'Bulk job'}</h1>
      <p class="muted">
        Job <code>{job.id}</code> · created <Timestamp at={row.createdAt} />
      </p>
      <div class="card">
        <p class="job-status" aria-live="polite">
          Status:{' '}
          <span data-job-field="status">
            <StatusBadge status={job.status} />
          </span>
        </p>
        <div class="progress-row">
          <label for="job-progress">Progress</label>
          <progress id="job-progress" max={100} value={job.progress} data-job-progress>
            {job.progress}%
          </progress>
          <span class="progress-value" aria-hidden="true">
            <span data-job-field="progress">{job.progress}</span>%
          </span>
        </div>
        {isRunning(job) && row.deadlineAt !== null ? (
          <p class="muted" data-job-deadline>
            Finishes by <Timestamp at={row.deadlineAt} /> at the latest: an address whose mail server has not
            answered by then is reported unknown, and refunded when the provider deferred it.
          </p>
        ) : null}
        <dl class="counts">
          {COUNTS.map((count) => (
            <div class={`count count-${count.field}`}>
              <dt>{count.label}</dt>
              <dd data-job-field={count.field}>{String(job[count.field])}</dd>
            </div>
          ))}
          <div class="count">
            <dt>Rows in the file</dt>
            <dd>{row.totalRows}</dd>
          </div>
          <div class="count">
            <dt>Duplicates</dt>
            <dd>{row.duplicateCount}</dd>
          </div>
          <div class="count">
            <dt>Empty rows</dt>
            <dd>{row.emptyRows}</dd>
          </div>
          <div class="count">
            <dt>Invalid rows</dt>
            <dd>{row.invalidRows}</dd>
          </div>
        </dl>
        <p class="muted">
          Credits charged: {job.creditsCharged}
          {job.creditsRefunded > 0 ? `, refunded: ${job.creditsRefunded}` : ''}.
          {job.bounceEstimate
            ? ` Estimated bounce rate if sent as is: ${job.bounceEstimate.percent}% (${job.bounceEstimate.level}).`
            : ''}
        </p>
        {job.failureReason ? <p class="notice notice-error">{job.failureReason}</p> : null}
      </div>
      <div class="card button-row" data-job-downloads hidden={job.status !== 'completed'}>
        <h2 class="visually-hidden">Downloads</h2>
        <a class="button" href={`${base}/results.csv`} download>
          Download CSV
        </a>
        <a class="button button-secondary" href={`${base}/results.json`} download>
          Download JSON
        </a>
      </div>
      <p>
        <a href="/history?kind=batch">All batch jobs</a>
      </p>
    </section>
  );
}

async function jobOf(c: Context<DashboardEnv>): Promise<JobRow> {
  const jobId = c.req.param('id') ?? '';
  const job = UUID.test(jobId) ? await findJob(c.get('db'), c.get('caller').accountId, jobId) : null;
  if (!job) throw notFoundJob();
  return job;
}

export function registerJobPages(dashboard: Hono<DashboardEnv>): void {
  dashboard.get('/jobs/:id', ...signedInPage, async (c) => {
    const row = await jobOf(c);
    const job = jobView(row);
    const refresh = isRunning(job) ? (
      <noscript>
        <meta http-equiv="refresh" content={String(NO_SCRIPT_REFRESH_SECONDS)} />
      </noscript>
    ) : null;
    return renderPage(
      c,
      <Layout title={job.name ?? 'Bulk job'} section="history" head={refresh} {...layoutContext(c)}>
        <JobPage job={job} row={row} />
      </Layout>,
    );
  });

  dashboard.get('/jobs/:id/status', ...signedInJson, async (c) => {
    return c.json({ success: true as const, job: jobView(await jobOf(c)) });
  });

  dashboard.get('/jobs/:id/results.csv', ...signedInPage, async (c) => {
    const job = await jobOf(c);
    const page = await readJobResults(c.get('db'), job, { offset: 0, limit: MAX_BATCH_EMAILS });
    c.header('Content-Disposition', `attachment; filename="rcpt-${job.id}.csv"`);
    return c.body(resultsToCsv(page), 200, { 'Content-Type': 'text/csv; charset=utf-8' });
  });

  dashboard.get('/jobs/:id/results.json', ...signedInPage, async (c) => {
    const job = await jobOf(c);
    const page = await readJobResults(c.get('db'), job, { offset: 0, limit: MAX_BATCH_EMAILS });
    c.header('Content-Disposition', `attachment; filename="rcpt-${job.id}.json"`);
    return c.json({
      success: true as const,
      job: jobView(job),
      results: page.results,
      originalCsvData: page.originalCsvData,
    });
  });
}

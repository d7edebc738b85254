/** @jsxImportSource hono/jsx */
// A batch job (`/jobs/:id`): live progress (app.js polls /jobs/:id/status every second and
// redraws the live part from a fresh copy of the page; without JavaScript the page refreshes
// itself while the job runs), the rows by verdict, the results as they arrive, and the
// addresses still pending with their state. Once the job has ended, its report: the verdict
// mix and the bounce estimate as pictures and CSV downloads of the whole list or of a subset
// (the `status` list the API's results take). Every count on the page is of rows of the file,
// from one query, so each equals the rows of the download it names; only the progress counts
// unique addresses, and says so.
import {
  type BounceEstimate,
  BulkResultsQuery,
  type Job,
  MAX_BATCH_EMAILS,
  VERIFICATION_STATUSES,
  type VerificationStatus,
  type WatchChange,
  type WatchChangeKind,
} from '@rcpt/shared/contract/api';
import { ApiError } from '@rcpt/shared/errors';
import type { Context, Hono } from 'hono';
import type { Child } from 'hono/jsx';
import type { DashboardEnv } from '../../middleware/session.ts';
import { BOUNCE_LEVEL_FROM, rowsBounceEstimate } from '../../services/batch/bounce-estimate.ts';
import { domainChangesOf } from '../../services/batch/domain-changes.ts';
import {
  DROPPED_ROWS_HEADER,
  downloadFileName,
  droppedRowsHeader,
  type ResultsPage,
  readJobResults,
  resultsCsvStream,
  resultsJsonStream,
} from '../../services/batch/downloads.ts';
import { jobView, notFoundJob } from '../../services/batch/jobs.ts';
import {
  countRowsByVerdict,
  findJob,
  type JobRow,
  type PendingAddress,
  pendingAddresses,
  type ResultRowsQuery,
  type RowCounts,
} from '../../storage/jobs.ts';
import { DataTable } from './data-table.tsx';
import { EvidenceView } from './evidence.tsx';
import { SubmitButton, TextField, Timestamp } from './forms.tsx';
import { signedInJson, signedInPage } from './guards.ts';
import { Card, Layout, layoutContext, renderPage } from './layout.tsx';
import { VerdictMix } from './verdict-mix.tsx';
import { readableSubStatus, StatusBadge } from './verification-result.tsx';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** How often the page reloads itself without JavaScript while the job runs. */
const NO_SCRIPT_REFRESH_SECONDS = 2;

/** Rows of the file by verdict, as the filter and the downloads count them. */
const ROW_COUNTS: { status: VerificationStatus | 'catch-all'; label: string }[] = [
  { status: 'deliverable', label: 'Deliverable' },
  { status: 'undeliverable', label: 'Undeliverable' },
  { status: 'risky', label: 'Risky' },
  { status: 'catch-all', label: 'of which catch-all' },
  { status: 'unknown', label: 'Unknown' },
];

/** Pending addresses listed on a running job's page. */
const PENDING_LIST_SIZE = 20;

/** Rows of the results table per page. */
const RESULTS_PAGE_SIZE = 50;
/** Longer search text cannot match an address (RFC 5321 §4.5.3.1.3: a path is at most 256 octets). */
const MAX_SEARCH_LENGTH = 254;

/** The subsets offered for download, as the `status` lists the API's results take. */
const SUBSETS: { slug: string; label: string; hint: string; statuses: VerificationStatus[] | null }[] = [
  {
    slug: 'deliverable',
    label: 'Deliverable only',
    hint: 'the safest list to send to',
    statuses: ['deliverable'],
  },
  {
    slug: 'worth-mailing',
    label: 'Deliverable and risky',
    hint: 'the addresses worth mailing',
    statuses: ['deliverable', 'risky'],
  },
  {
    slug: 'without-undeliverable',
    label: 'All but undeliverable',
    hint: 'keeps unknown addresses too',
    statuses: ['deliverable', 'risky', 'unknown'],
  },
  { slug: 'all', label: 'All rows', hint: 'every row of the upload', statuses: null },
];

function isRunning(job: Job): boolean {
  return job.status === 'pending' || job.status === 'processing';
}

/** What the results table shows and the downloads contain: the query string of the page. */
interface ResultsFilter {
  statuses: VerificationStatus[] | undefined;
  search: string;
  page: number;
}

/** The `status` list as the API parses it; undefined when absent, null when malformed. */
function statusesOf(value: string | undefined): VerificationStatus[] | undefined | null {
  if (!value) return undefined;
  const parsed = BulkResultsQuery.shape.status.safeParse(value);
  return parsed.success ? parsed.data : null;
}

function filterOf(query: Record<string, string>): ResultsFilter {
  const page = Number.parseInt(query.page ?? '1', 10);
  return {
    // The page forgives a hand-edited query string: a malformed status list shows all rows.
    statuses: statusesOf(query.status) ?? undefined,
    search: (query.q ?? '').trim().slice(0, MAX_SEARCH_LENGTH),
    page: Number.isFinite(page) && page >= 1 ? Math.min(page, MAX_BATCH_EMAILS) : 1,
  };
}

function filterLink(path: string, filter: Omit<ResultsFilter, 'page'> & { page?: number }): string {
  const params = new URLSearchParams();
  if (filter.statuses) params.set('status', filter.statuses.join(','));
  if (filter.search) params.set('q', filter.search);
  if (filter.page && filter.page > 1) params.set('page', String(filter.page));
  const query = params.toString();
  return query ? `${path}?${query}` : path;
}

function rowsQuery(filter: Omit<ResultsFilter, 'page'>, offset: number, limit: number): ResultRowsQuery {
  return { offset, limit, statuses: filter.statuses, search: filter.search || undefined };
}

// The gauge's three bands are drawn equally wide, each spanning its own range of percent:
// a linear scale would squeeze "low" (under 2 %) into a sliver.
const GAUGE_BANDS = [
  { level: 'low', from: 0, to: BOUNCE_LEVEL_FROM.medium, label: `under ${BOUNCE_LEVEL_FROM.medium}%` },
  {
    level: 'medium',
    from: BOUNCE_LEVEL_FROM.medium,
    to: BOUNCE_LEVEL_FROM.high,
    label: `${BOUNCE_LEVEL_FROM.medium}–${BOUNCE_LEVEL_FROM.high}%`,
  },
  { level: 'high', from: BOUNCE_LEVEL_FROM.high, to: 25, label: `${BOUNCE_LEVEL_FROM.high}% and over` },
] as const;
const GAUGE = { width: 300, height: 24, bandTop: 6, bandHeight: 12 } as const;

function gaugePosition(percent: number): number {
  const bandWidth = GAUGE.width / GAUGE_BANDS.length;
  const index = GAUGE_BANDS.findIndex((band) => percent < band.to);
  if (index === -1) return GAUGE.width;
  const band = GAUGE_BANDS[index] ?? GAUGE_BANDS[0];
  return bandWidth * (index + (percent - band.from) / (band.to - band.from));
}

function BounceGauge(props: { estimate: BounceEstimate }) {
  const { estimate } = props;
  const bandWidth = GAUGE.width / GAUGE_BANDS.length;
  const x = gaugePosition(estimate.percent);
  return (
    <figure class="chart bounce">
      <p class="bounce-figure">
        <span class="big-number">{estimate.percent}%</span>{' '}
        <span class={`badge badge-bounce-${estimate.level}`}>{estimate.level}</span>
      </p>
      {/* Stretched to the card's width (preserveAspectRatio none): the band labels are HTML below. */}
      <svg
        viewBox={`0 0 ${GAUGE.width} ${GAUGE.height}`}
        preserveAspectRatio="none"
        class="bounce-gauge"
        aria-hidden="true"
      >
        {GAUGE_BANDS.map((band, index) => (
          <rect
            class={`gauge-${band.level}`}
            x={index * bandWidth}
            y={GAUGE.bandTop}
            width={bandWidth}
            height={GAUGE.bandHeight}
          />
        ))}
        <line
          class="gauge-marker"
          x1={x}
          x2={x}
          y1={0}
          y2={GAUGE.height}
          vector-effect="non-scaling-stroke"
        />
      </svg>
      <ul class="bounce-bands" aria-hidden="true">
        {GAUGE_BANDS.map((band) => (
          <li>
            {band.level}: {band.label}
          </li>
        ))}
      </ul>
      <figcaption>
        Estimated bounce rate if the whole list is sent as is: {estimate.percent}%, {estimate.level} (low is
        under {BOUNCE_LEVEL_FROM.medium}%, high from {BOUNCE_LEVEL_FROM.high}%). Based on {estimate.basis}.
      </figcaption>
    </figure>
  );
}

function ListHealth(props: { rows: RowCounts; estimate: BounceEstimate | null }) {
  return (
    <Card id="health-heading" title="List health">
      <div class="health">
        <div>
          <h3>Verdict mix</h3>
          <VerdictMix
            mix={props.rows.byStatus}
            catchAll={props.rows.catchAll}
            unit="rows"
            empty="No row has a verdict."
          />
        </div>
        <div>
          <h3>Bounce estimate</h3>
          {props.estimate ? (
            <BounceGauge estimate={props.estimate} />
          ) : (
            <p class="muted">No estimate: no address was checked.</p>
          )}
        </div>
      </div>
    </Card>
  );
}

/** The file's rows: by verdict (those that have one), and the rows that hold no address to verify. */
function RowsCard(props: { row: JobRow; rows: RowCounts }) {
  const { row, rows } = props;
  const countOf = (status: VerificationStatus | 'catch-all') =>
    status === 'catch-all' ? rows.catchAll : rows.byStatus[status];
  return (
    <Card id="rows-heading" title="Rows of the file">
      <p class="muted">
        Each count is of rows, as in the downloads: an address that appears twice is counted on both of its
        rows.
      </p>
      <dl class="counts">
        <div class="count">
          <dt>Rows in the file</dt>
          <dd>{row.totalRows}</dd>
        </div>
        {ROW_COUNTS.map((count) => (
          <div class={`count count-${count.status}`}>
            <dt>{count.label}</dt>
            <dd data-row-count={count.status}>{countOf(count.status)}</dd>
          </div>
        ))}
        <div class="count">
          <dt>Duplicate rows</dt>
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
    </Card>
  );
}

/** What a pending address is waiting for, in words. */
function pendingState(address: PendingAddress): Child {
  if (address.subStatus === null) return 'waiting for its mail server';
  const answer = readableSubStatus(address.subStatus);
  return address.retryAt === null ? (
    answer
  ) : (
    <>
      {answer}, asked again at <Timestamp at={address.retryAt} />
    </>
  );
}

function PendingCard(props: { pending: { total: number; addresses: PendingAddress[] } }) {
  const { total, addresses } = props.pending;
  return (
    <section class="card" aria-labelledby="pending-heading" data-job-pending>
      <h2 id="pending-heading">Still being verified</h2>
      {total === 0 ? (
        <p class="muted">Every address has its answer; the job is finishing.</p>
      ) : (
        <>
          <p class="muted">
            {total} {total === 1 ? 'address has' : 'addresses have'} no final answer yet
            {total > addresses.length ? `; the first ${addresses.length}:` : ':'}
          </p>
          <ul class="pending-list">
            {addresses.map((address) => (
              <li>
                <span class="email-cell">{address.email}</span>{' '}
                <span class="muted">{pendingState(address)}</span>
              </li>
            ))}
          </ul>
        </>
      )}
    </section>
  );
}

function Downloads(props: { base: string; rows: RowCounts; totalRows: number }) {
  const rowsOf = (statuses: VerificationStatus[] | null) =>
    statuses ? statuses.reduce((sum, status) => sum + props.rows.byStatus[status], 0) : props.totalRows;
  return (
    <section class="card" aria-labelledby="downloads-heading" data-job-downloads>
      <h2 id="downloads-heading">Download the results</h2>
      <p class="muted">CSV files keep your original columns and add the verdict columns, in upload order.</p>
      <ul class="downloads">
        {SUBSETS.map((subset) => (
          <li>
            <a
              class={`button${subset.statuses ? ' button-secondary' : ''}`}
              href={filterLink(`${props.base}/results.csv`, {
                statuses: subset.statuses ?? undefined,
                search: '',
              })}
              download
              data-subset={subset.slug}
            >
              CSV: {subset.label}
            </a>
            <span class="muted">
              {rowsOf(subset.statuses)} rows · {subset.hint}
            </span>
          </li>
        ))}
        <li>
          <a class="button button-secondary" href={`${props.base}/results.json`} download>
            JSON: all rows
          </a>
          <span class="muted">every field of every verdict</span>
        </li>
      </ul>
    </section>
  );
}

function ResultsTable(props: {
  base: string;
  filter: ResultsFilter;
  page: ResultsPage;
  rows: RowCounts;
  /** The job is still running: the table holds the rows answered so far. */
  running: boolean;
}) {
  const { base, filter, page } = props;
  const pages = Math.max(1, Math.ceil(page.total / RESULTS_PAGE_SIZE));
  const selected = filter.statuses?.join(',') ?? '';
  const filtered = Boolean(filter.statuses || filter.search);
  return (
    <section class="card" aria-labelledby="results-heading" id="results">
      <h2 id="results-heading">{props.running ? 'Results so far' : 'Results'}</h2>
      <form method="get" action={`${base}#results`} class="filters" aria-label="Filter the results">
        <div class="field">
          <label for="results-status">Status</label>
          <select id="results-status" name="status">
            <option value="" selected={selected === ''}>
              Any
            </option>
            {VERIFICATION_STATUSES.map((status) => (
              <option value={status} selected={selected === status}>
                {status} ({props.rows.byStatus[status]})
              </option>
            ))}
            {/* A list chosen elsewhere (a download's link, the API's syntax) stays selected. */}
            {selected && !selected.includes(',') ? null : selected ? (
              <option value={selected} selected>
                {selected.replaceAll(',', ', ')}
              </option>
            ) : null}
          </select>
        </div>
        <TextField
          id="results-search"
          name="q"
          label="Address contains"
          type="search"
          value={filter.search}
          maxlength={MAX_SEARCH_LENGTH}
          autocomplete="off"
        />
        <div class="button-row">
          <SubmitButton>Filter</SubmitButton>
          <a href={`${base}#results`} class="button button-secondary">
            Clear
          </a>
        </div>
      </form>
      <p class="results-summary" aria-live="polite">
        {page.total} {page.total === 1 ? 'row' : 'rows'}
        {filtered ? ' match' : ''}
        {filtered && page.total > 0 && !props.running ? (
          <>
            {' · '}
            <a href={filterLink(`${base}/results.csv`, filter)} download data-subset="filtered">
              Download these rows as CSV
            </a>
          </>
        ) : null}
      </p>
      {page.results.length === 0 ? (
        <p class="muted">No row matches this filter.</p>
      ) : (
        <DataTable columns={['Address', 'Verdict', 'Score']} class="results-table">
          {page.results.map((result) => (
            <tr data-result-status={result.status}>
              <td data-label="Address" class="email-cell">
                {result.email || <span class="muted">(empty)</span>}
              </td>
              <td data-label="Verdict">
                <StatusBadge status={result.status} />{' '}
                <span class="muted">{readableSubStatus(result.subStatus)}</span>
                {result.evidence ? <EvidenceView evidence={result.evidence} /> : null}
              </td>
              <td data-label="Score">{result.score}</td>
            </tr>
          ))}
        </DataTable>
      )}
      {pages > 1 ? (
        <nav class="pagination" aria-label="Result pages">
          {filter.page > 1 ? (
            <a href={`${filterLink(base, { ...filter, page: filter.page - 1 })}#results`} rel="prev">
              ← Previous
            </a>
          ) : (
            <span />
          )}
          <span>
            Page {Math.min(filter.page, pages)} of {pages}
          </span>
          {filter.page < pages ? (
            <a href={`${filterLink(base, { ...filter, page: filter.page + 1 })}#results`} rel="next">
              Next →
            </a>
          ) : (
            <span />
          )}
        </nav>
      ) : null}
    </section>
  );
}

/** What the page shows of the job beside its progress: read once per request. */
interface JobLive {
  rows: RowCounts;
  page: ResultsPage;
  /** Only while the job runs. */
  pending: { total: number; addresses: PendingAddress[] } | null;
}

interface JobPageProps {
  job: Job;
  row: JobRow;
  /** A watched job's changed domains, each with its latest change. */
  domainChanges: WatchChange[];
  filter: ResultsFilter;
  live: JobLive;
}

/**
 * The rows, the results and what is pending; once the job has ended, its report and downloads.
 * app.js swaps it for a fresh copy as answers arrive.
 */
function JobLiveSection(props: JobPageProps) {
  const { job, row, live } = props;
  const base = `/jobs/${job.id}`;
  const running = isRunning(job);
  return (
    <div data-job-live>
      <RowsCard row={row} rows={live.rows} />
      {live.pending ? <PendingCard pending={live.pending} /> : null}
      {job.status === 'completed' ? (
        <div data-job-report>
          <ListHealth rows={live.rows} estimate={rowsBounceEstimate(live.rows, row.emptyRows)} />
          <Downloads base={base} rows={live.rows} totalRows={row.totalRows} />
        </div>
      ) : null}
      {job.status === 'failed' ? null : (
        <ResultsTable base={base} filter={props.filter} page={live.page} rows={live.rows} running={running} />
      )}
    </div>
  );
}

function JobPage(props: JobPageProps) {
  const { job, row } = props;
  const base = `/jobs/${job.id}`;
  return (
    <section data-job-status-url={`${base}/status`} data-job-state={job.status} aria-labelledby="job-heading">
      <nav aria-label="Breadcrumb" class="breadcrumb">
        <a href="/bulk">Bulk</a> <span aria-hidden="true">›</span>{' '}
        <span aria-current="page">{job.name ?? 'Bulk job'}</span>
      </nav>
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
        <p>
          <span data-job-field="processedEmails">{job.processedEmails}</span> of{' '}
          <span data-job-field="totalEmails">{job.totalEmails}</span> unique addresses verified.
        </p>
        {isRunning(job) && row.deadlineAt !== null ? (
          <p class="muted" data-job-deadline>
            Finishes by <Timestamp at={row.deadlineAt} /> at the latest: an address whose mail server has not
            answered by then is reported unknown, and refunded when the provider deferred it.
          </p>
        ) : null}
        {job.recheckedAt !== null || job.nextRecheckAt !== null ? (
          <p class="muted" data-job-recheck>
            {job.recheckedAt !== null ? (
              <>
                Greylist follow-up changed verdicts at <Timestamp at={row.recheckedAt} />.{' '}
              </>
            ) : null}
            {job.nextRecheckAt !== null ? (
              <>
                Temporary answers are asked again at <Timestamp at={row.recheckDueAt} />; a refunded address
                that then gets an answer costs its credit again.
              </>
            ) : null}
          </p>
        ) : null}
        <WatchSection row={row} changes={props.domainChanges} />
        <p class="muted">
          Credits charged: {job.creditsCharged}
          {job.creditsRefunded > 0 ? `, refunded: ${job.creditsRefunded}` : ''}.
        </p>
        {job.failureReason ? <p class="notice notice-error">{job.failureReason}</p> : null}
      </div>
      <JobLiveSection {...props} />
      <p>
        <a href="/history?kind=batch">All batch jobs</a>
      </p>
    </section>
  );
}

const CHANGE_TEXT: Record<WatchChangeKind, string> = {
  mx_moved: 'moved its mail to other MX hosts',
  mail_stopped: 'stopped taking mail',
  mail_resumed: 'takes mail again',
  catch_all_on: 'turned catch-all on',
  catch_all_off: 'turned catch-all off',
  tenant_changed: 'has another mail tenant behind its gateway',
};

const MAIL_TEXT: Record<NonNullable<WatchChange['after']['mail']>, string> = {
  mx: 'MX',
  null_mx: 'a null MX',
  no_mail_route: 'no MX and no address',
  nxdomain: 'no longer exists',
  unroutable: 'only private addresses',
};

/** How the domain took mail, in a few words: its MX hosts, or why it takes none. */
function mailText(state: WatchChange['before']): string {
  if (state.mail === null) return 'unknown';
  return state.mail === 'mx' ? state.mxHosts.join(', ') : MAIL_TEXT[state.mail];
}

/** Until when a watched job watches its domains, and what changed (docs/architecture.md, "Watched jobs"). */
function WatchSection(props: { row: JobRow; changes: WatchChange[] }) {
  const { row, changes } = props;
  if (row.watchDays === null) return null;
  return (
    <div data-job-watch>
      <p class="muted">
        {row.watchUntil !== null ? (
          <>
            Watched until <Timestamp at={row.watchUntil} />
          </>
        ) : (
          <>Watched for {row.watchDays} days once complete</>
        )}
        : when a domain of this list moves its MX, stops taking mail or turns catch-all on or off, its
        addresses are verified again, free for addresses already paid for.
      </p>
      {changes.length > 0 ? (
        <DataTable
          columns={['Domain', 'What changed', 'Mail before → now', 'Seen', 'Verdicts changed']}
          caption="Domain changes"
        >
          {changes.map((change) => (
            <tr data-domain-change={change.domain}>
              <td data-label="Domain">{change.domain}</td>
              <td data-label="What changed">{change.changes.map((kind) => CHANGE_TEXT[kind]).join('; ')}</td>
              <td data-label="Mail before → now">
                {mailText(change.before)} → {mailText(change.after)}
              </td>
              <td data-label="Seen">
                <Timestamp at={Date.parse(change.seenAt)} />
              </td>
              <td data-label="Verdicts changed">
                {change.changedAddresses} of {change.addresses}
              </td>
            </tr>
          ))}
        </DataTable>
      ) : null}
    </div>
  );
}

async function jobOf(c: Context<DashboardEnv>): Promise<JobRow> {
  const jobId = c.req.param('id') ?? '';
  const job = UUID.test(jobId) ? await findJob(c.get('db'), c.get('caller').accountId, jobId) : null;
  if (!job) throw notFoundJob();
  return job;
}

/** The rows a download or the table asks for; a malformed `status` list is a 400, as in the API. */
function downloadFilter(c: Context<DashboardEnv>): Omit<ResultsFilter, 'page'> {
  const statuses = statusesOf(c.req.query('status'));
  if (statuses === null) {
    throw new ApiError('VALIDATION_ERROR', {
      message: 'status must be a comma-separated list of deliverable, undeliverable, risky, unknown.',
    });
  }
  return { statuses, search: filterOf(c.req.query()).search };
}

/** The list's name (or `rcpt-<job>`) and the subset: `newsletter-deliverable-risky.csv`. */
function downloadName(
  job: { id: string; name: string | null },
  filter: Omit<ResultsFilter, 'page'>,
  extension: 'csv' | 'json',
): string {
  return downloadFileName(job, [...(filter.statuses ?? []), ...(filter.search ? ['search'] : [])], extension);
}

export function registerJobPages(dashboard: Hono<DashboardEnv>): void {
  dashboard.get('/jobs/:id', ...signedInPage, async (c) => {
    const row = await jobOf(c);
    const job = jobView(row);
    const filter = filterOf(c.req.query());
    const db = c.get('db');
    const live: JobLive = {
      rows: await countRowsByVerdict(db, job.id),
      page: await readJobResults(
        db,
        row,
        rowsQuery(filter, (filter.page - 1) * RESULTS_PAGE_SIZE, RESULTS_PAGE_SIZE),
        {
          soFar: isRunning(job),
        },
      ),
      pending: isRunning(job) ? await pendingAddresses(db, job.id, PENDING_LIST_SIZE) : null,
    };
    const refresh = isRunning(job) ? (
      <noscript>
        <meta http-equiv="refresh" content={String(NO_SCRIPT_REFRESH_SECONDS)} />
      </noscript>
    ) : null;
    return renderPage(
      c,
      <Layout title={job.name ?? 'Bulk job'} section="bulk" head={refresh} {...layoutContext(c)}>
        <JobPage
          job={job}
          row={row}
          filter={filter}
          live={live}
          domainChanges={row.watchDays === null ? [] : await domainChangesOf({ db }, job.id)}
        />
      </Layout>,
    );
  });

  dashboard.get('/jobs/:id/status', ...signedInJson, async (c) => {
    return c.json({ success: true as const, job: jobView(await jobOf(c)) });
  });

  dashboard.get('/jobs/:id/results.csv', ...signedInPage, async (c) => {
    const job = await jobOf(c);
    const filter = downloadFilter(c);
    // With a byte-order mark unless asked not to: the dashboard's downloads go to spreadsheets,
    // and Excel on Windows reads a CSV file without one in its ANSI code page.
    const csv = resultsCsvStream(c.get('db'), job, rowsQuery(filter, 0, MAX_BATCH_EMAILS), {
      byteOrderMark: c.req.query('bom') !== '0',
    });
    c.header('Content-Disposition', `attachment; filename="${downloadName(job, filter, 'csv')}"`);
    const dropped = droppedRowsHeader(job);
    if (dropped) c.header(DROPPED_ROWS_HEADER, dropped);
    return c.body(csv, 200, { 'Content-Type': 'text/csv; charset=utf-8' });
  });

  dashboard.get('/jobs/:id/results.json', ...signedInPage, async (c) => {
    const job = await jobOf(c);
    const filter = downloadFilter(c);
    const json = await resultsJsonStream(c.get('db'), job, rowsQuery(filter, 0, MAX_BATCH_EMAILS), {
      lead: { success: true, job: jobView(job) },
      pagination: false,
    });
    c.header('Content-Disposition', `attachment; filename="${downloadName(job, filter, 'json')}"`);
    return c.body(json, 200, { 'Content-Type': 'application/json; charset=UTF-8' });
  });
}

/** @jsxImportSource hono/jsx */
// History (`/history`): single verifications and batch jobs, newest first, filtered by
// kind, status and date range (UTC days), 25 a page; a batch links to its job page.
import { VERIFICATION_STATUSES, type VerificationStatus } from '@rcpt/shared/contract/api';
import type { Hono } from 'hono';
import type { DashboardEnv } from '../../middleware/session.ts';
import { type HistoryEntry, historyPage } from '../../services/history.ts';
import type { HistoryFilters } from '../../storage/verifications.ts';
import { DataTable } from './data-table.tsx';
import { SubmitButton, Timestamp } from './forms.tsx';
import { signedInPage } from './guards.ts';
import { Layout, layoutContext, renderPage } from './layout.tsx';
import { readableSubStatus, StatusBadge } from './verification-result.tsx';

const PAGE_SIZE = 25;
const DAY_MS = 86_400_000;
const DATE = /^\d{4}-\d{2}-\d{2}$/;

interface HistoryQuery {
  kind: 'single' | 'batch' | '';
  status: VerificationStatus | '';
  from: string;
  to: string;
  page: number;
}

function parseQuery(query: Record<string, string>): HistoryQuery {
  const kind = query.kind === 'single' || query.kind === 'batch' ? query.kind : '';
  const status = (VERIFICATION_STATUSES as readonly string[]).includes(query.status ?? '')
    ? (query.status as VerificationStatus)
    : '';
  const date = (value: string | undefined) =>
    value && DATE.test(value) && !Number.isNaN(Date.parse(value)) ? value : '';
  const page = Number.parseInt(query.page ?? '1', 10);
  return {
    kind,
    status,
    from: date(query.from),
    to: date(query.to),
    page: Number.isFinite(page) && page >= 1 ? Math.min(page, 10_000) : 1,
  };
}

function filtersOf(query: HistoryQuery): HistoryFilters {
  return {
    ...(query.kind ? { kind: query.kind } : {}),
    ...(query.status ? { status: query.status } : {}),
    ...(query.from ? { from: Date.parse(query.from) } : {}),
    // "To" is inclusive: up to the end of that UTC day.
    ...(query.to ? { to: Date.parse(query.to) + DAY_MS - 1 } : {}),
  };
}

function pageLink(query: HistoryQuery, page: number): string {
  const params = new URLSearchParams();
  if (query.kind) params.set('kind', query.kind);
  if (query.status) params.set('status', query.status);
  if (query.from) params.set('from', query.from);
  if (query.to) params.set('to', query.to);
  params.set('page', String(page));
  return `/history?${params}`;
}

function Filters(props: { query: HistoryQuery }) {
  const { query } = props;
  return (
    <form method="get" action="/history" class="card filters" aria-label="Filter the history">
      <div class="field">
        <label for="history-kind">Type</label>
        <select id="history-kind" name="kind">
          <option value="" selected={query.kind === ''}>
            All
          </option>
          <option value="single" selected={query.kind === 'single'}>
            Single
          </option>
          <option value="batch" selected={query.kind === 'batch'}>
            Batch
          </option>
        </select>
      </div>
      <div class="field">
        <label for="history-status">Status</label>
        <select id="history-status" name="status" aria-describedby="history-filters-hint">
          <option value="" selected={query.status === ''}>
            Any
          </option>
          {VERIFICATION_STATUSES.map((status) => (
            <option value={status} selected={query.status === status}>
              {status}
            </option>
          ))}
        </select>
      </div>
      <div class="field">
        <label for="history-from">From</label>
        <input id="history-from" name="from" type="date" value={query.from} />
      </div>
      <div class="field">
        <label for="history-to">To</label>
        <input id="history-to" name="to" type="date" value={query.to} />
      </div>
      <div class="button-row">
        <SubmitButton>Filter</SubmitButton>
        <a href="/history" class="button button-secondary">
          Clear
        </a>
      </div>
      <p class="hint filters-hint" id="history-filters-hint">
        The status applies to single verifications; dates are whole days in UTC.
      </p>
    </form>
  );
}

function HistoryEntryRow(props: { row: HistoryEntry }) {
  const { row } = props;
  return (
    <tr data-kind={row.kind}>
      <td data-label="When">
        <Timestamp at={row.createdAt} />
      </td>
      {row.kind === 'batch' ? <BatchCells row={row} /> : <SingleCells row={row} />}
    </tr>
  );
}

/** A list's cells: its name and size, and how far it got. */
function BatchCells(props: { row: HistoryEntry }) {
  const { row } = props;
  const { job } = row;
  return (
    <>
      <td data-label="Type">Batch</td>
      <td data-label="List">
        {row.jobId ? <a href={`/jobs/${row.jobId}`}>{job?.name ?? `Job ${row.jobId.slice(0, 8)}`}</a> : '—'}
        {job ? <span class="muted"> · {job.totalEmails} addresses</span> : null}
      </td>
      <td data-label="Result">
        {job ? (
          <>
            <StatusBadge status={job.status} /> <span class="muted">{job.progress}%</span>
          </>
        ) : (
          <span class="muted">deleted</span>
        )}
      </td>
      <td data-label="Score">—</td>
    </>
  );
}

/** A single verification's cells: the address and its verdict. */
function SingleCells(props: { row: HistoryEntry }) {
  const { row } = props;
  return (
    <>
      <td data-label="Type">Single</td>
      <td data-label="Address" class="email-cell">
        {row.email}
      </td>
      <td data-label="Result">
        {row.status ? <StatusBadge status={row.status} /> : null}{' '}
        {row.subStatus ? <span class="muted">{readableSubStatus(row.subStatus)}</span> : null}
      </td>
      <td data-label="Score">{row.score ?? '—'}</td>
    </>
  );
}

export function registerHistoryPage(dashboard: Hono<DashboardEnv>): void {
  dashboard.get('/history', ...signedInPage, async (c) => {
    const db = c.get('db');
    const { accountId } = c.get('caller');
    const query = parseQuery(c.req.query());
    const { entries: rows, total } = await historyPage(db, accountId, filtersOf(query), {
      offset: (query.page - 1) * PAGE_SIZE,
      limit: PAGE_SIZE,
    });
    const pages = Math.max(1, Math.ceil(total / PAGE_SIZE));
    return renderPage(
      c,
      <Layout title="History" section="history" {...layoutContext(c)}>
        <h1>History</h1>
        <Filters query={query} />
        <section class="card" aria-labelledby="history-heading">
          <h2 id="history-heading">
            {total} {total === 1 ? 'entry' : 'entries'}
          </h2>
          {rows.length === 0 ? (
            <p class="muted">Nothing matches these filters.</p>
          ) : (
            <DataTable columns={['When', 'Type', 'Address or list', 'Result', 'Score']}>
              {rows.map((row) => (
                <HistoryEntryRow row={row} />
              ))}
            </DataTable>
          )}
          <nav class="pagination" aria-label="History pages">
            {query.page > 1 ? (
              <a href={pageLink(query, query.page - 1)} rel="prev">
                ← Newer
              </a>
            ) : null}
            <span>
              Page {query.page} of {pages}
            </span>
            {query.page < pages ? (
              <a href={pageLink(query, query.page + 1)} rel="next">
                Older →
              </a>
            ) : null}
          </nav>
        </section>
      </Layout>,
    );
  });
}

/** @jsxImportSource hono/jsx */
// Accuracy (`/accuracy`): the last 30 days of the account's reported outcomes against the
// verdicts they were matched to, as GET /api/v1/accuracy counts them (docs/verdicts.md,
// "Accuracy"): by status with the counts behind each rate, by provider, the rate by week as a
// picture with its figures in a table, and each wrong verdict with its reply and a link to it.
import {
  type AccuracyCounts,
  type AccuracyResponse,
  VERIFICATION_STATUSES,
  type VerificationStatus,
} from '@rcpt/shared/contract/api';
import type { Hono } from 'hono';
import type { DashboardEnv } from '../../middleware/session.ts';
import { accuracyOf, accuracyRange, wrongOutcomesOf } from '../../services/outcomes/accuracy.ts';
import type { WrongOutcome } from '../../storage/accuracy.ts';
import { DataTable } from './data-table.tsx';
import { Timestamp } from './forms.tsx';
import { signedInPage } from './guards.ts';
import { Card, Layout, layoutContext, renderPage } from './layout.tsx';
import { readableSubStatus, StatusBadge } from './verification-result.tsx';

/** Providers shown, most outcomes first. */
const PROVIDERS_SHOWN = 10;
/** Wrong verdicts listed, newest first. */
const WRONG_SHOWN = 25;

/** What `wrong` means for each status, as the table's note says it. */
const WRONG_MEANS: Record<VerificationStatus, string> = {
  deliverable: 'hard-bounced on a mailbox reason',
  risky: 'hard-bounced on a mailbox reason',
  undeliverable: 'was delivered',
  unknown: '—',
};

function percent(rate: number | null): string {
  return rate === null ? '—' : `${(rate * 100).toFixed(1)} %`;
}

function StatusTable(props: { report: AccuracyResponse }) {
  const statuses = VERIFICATION_STATUSES.filter((status) => props.report.byStatus[status]);
  if (statuses.length === 0) {
    return (
      <p class="muted">
        No outcome matched a verdict yet. Report what happened to your sends (POST /api/v1/outcomes, or your
        sending service's webhook) and it shows here.
      </p>
    );
  }
  return (
    <DataTable
      columns={[
        'Status rcpt gave',
        'Sends matched',
        'Delivered',
        'Mailbox bounces',
        'Policy bounces',
        'Wrong when the send…',
        'Wrong',
      ]}
    >
      {statuses.map((status) => {
        const counts = props.report.byStatus[status] as AccuracyCounts;
        return (
          <tr>
            <td>
              <StatusBadge status={status} />
            </td>
            <td>{counts.matched}</td>
            <td>{counts.delivered}</td>
            <td>{counts.mailboxBounces}</td>
            <td>{counts.policyBounces}</td>
            <td>{WRONG_MEANS[status]}</td>
            <td>{status === 'unknown' ? '—' : `${counts.wrong} (${percent(counts.wrongRate)})`}</td>
          </tr>
        );
      })}
    </DataTable>
  );
}

/**
 * The weekly rate of wrong `deliverable` verdicts as bars (inline SVG, no text: the table beside
 * it carries every figure). A bar's height is its rate against the largest week's.
 */
function WeeklyRate(props: { report: AccuracyResponse }) {
  const weeks = props.report.byWeek.map((week) => ({
    weekStart: week.weekStart,
    counts: week.byStatus.deliverable ?? null,
  }));
  if (weeks.length === 0) return <p class="muted">No week has matched outcomes yet.</p>;
  const highest = Math.max(0.01, ...weeks.map((week) => week.counts?.wrongRate ?? 0));
  const width = 100 / weeks.length;
  return (
    <div>
      <svg viewBox="0 0 100 30" preserveAspectRatio="none" class="accuracy-bars" aria-hidden="true">
        {weeks.map((week, index) => {
          const height = ((week.counts?.wrongRate ?? 0) / highest) * 28;
          return (
            <rect
              class="mix-undeliverable"
              x={index * width + width * 0.1}
              y={30 - height}
              width={width * 0.8}
              height={height}
            />
          );
        })}
      </svg>
      <DataTable
        columns={['Week from', 'Deliverable sends matched', 'Mailbox bounces', 'Rate']}
        caption="Wrong deliverable verdicts by week"
      >
        {weeks.map((week) => (
          <tr>
            <td>{week.weekStart}</td>
            <td>{week.counts?.matched ?? 0}</td>
            <td>{week.counts?.mailboxBounces ?? 0}</td>
            <td>{percent(week.counts?.wrongRate ?? null)}</td>
          </tr>
        ))}
      </DataTable>
    </div>
  );
}

function ProviderTable(props: { report: AccuracyResponse }) {
  const providers = props.report.byProvider.slice(0, PROVIDERS_SHOWN);
  if (providers.length === 0) return <p class="muted">No provider yet.</p>;
  return (
    <DataTable
      columns={['Provider or MX host', 'Deliverable: wrong', 'Risky: wrong', 'Undeliverable: wrong']}
    >
      {providers.map((entry) => (
        <tr>
          <td>{entry.provider}</td>
          {(['deliverable', 'risky', 'undeliverable'] as const).map((status) => {
            const counts = entry.byStatus[status];
            return (
              <td>{counts ? `${counts.wrong} of ${counts.matched} (${percent(counts.wrongRate)})` : '—'}</td>
            );
          })}
        </tr>
      ))}
    </DataTable>
  );
}

function WrongList(props: { wrong: WrongOutcome[] }) {
  if (props.wrong.length === 0)
    return <p class="muted">No verdict was contradicted by a send in these 30 days.</p>;
  return (
    <DataTable columns={['When', 'Address', 'rcpt said', 'What happened', "The server's reply", 'Verdict']}>
      {props.wrong.map((row) => (
        <tr>
          <td>
            <Timestamp at={row.at} />
          </td>
          <td>{row.email}</td>
          <td>
            <StatusBadge status={row.verdictStatus as VerificationStatus} />{' '}
            {row.verdictSubStatus ? readableSubStatus(row.verdictSubStatus) : ''}
          </td>
          <td>{row.outcome === 'delivered' ? 'delivered' : 'hard bounce'}</td>
          <td>{row.diagnostic ?? '—'}</td>
          <td>
            {row.verdictSource === 'batch' ? (
              <a href={`/jobs/${encodeURIComponent(row.verdictRef)}`}>the job, with its evidence</a>
            ) : (
              <a href="/history?kind=single">single calls</a>
            )}
          </td>
        </tr>
      ))}
    </DataTable>
  );
}

export function registerAccuracyPage(dashboard: Hono<DashboardEnv>): void {
  dashboard.get('/accuracy', ...signedInPage, async (c) => {
    const db = c.get('db');
    const { accountId } = c.get('caller');
    const range = accuracyRange({}, Date.now());
    const [report, wrong] = await Promise.all([
      accuracyOf(db, accountId, range),
      wrongOutcomesOf(db, accountId, range, WRONG_SHOWN),
    ]);
    return renderPage(
      c,
      <Layout title="Accuracy" section="accuracy" {...layoutContext(c)}>
        <h1>Accuracy</h1>
        <p>
          What happened to your sends in the last 30 days, against what rcpt said of each address before it. A
          policy bounce (blocked, spam) says nothing of the mailbox and is never counted wrong.
        </p>
        {(
          [
            ['accuracy-status', 'By the status rcpt gave', <StatusTable report={report} />],
            ['accuracy-weeks', 'Wrong deliverable verdicts over time', <WeeklyRate report={report} />],
            ['accuracy-providers', 'By provider', <ProviderTable report={report} />],
            ['accuracy-wrong', 'Each wrong verdict', <WrongList wrong={wrong} />],
          ] as const
        ).map(([id, title, body]) => (
          <Card id={id} title={title}>
            {body}
          </Card>
        ))}
      </Layout>,
    );
  });
}

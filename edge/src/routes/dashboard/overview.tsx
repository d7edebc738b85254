/** @jsxImportSource hono/jsx */
// Overview (`/`): the credit balance, verifications per day over the last 30 days as an
// inline SVG bar chart, and the verdict mix of those days.
import type { Hono } from 'hono';
import type { DashboardEnv } from '../../middleware/session.ts';
import { accountOverview, OVERVIEW_DAYS, type UsageDay } from '../../services/dashboard/overview.ts';
import { confirmedNotice } from './auth.tsx';
import { Notice } from './forms.tsx';
import { signedInPage } from './guards.ts';
import { Card, Layout, layoutContext, renderPage } from './layout.tsx';
import { VerdictMix } from './verdict-mix.tsx';

const CHART = { width: 600, height: 160 } as const;

function UsageChart(props: { days: UsageDay[] }) {
  const totals = props.days.map((day) => day.singles + day.batchAddresses);
  const max = Math.max(1, ...totals);
  const slot = CHART.width / props.days.length;
  const barWidth = Math.max(2, slot * 0.7);
  // A little headroom, so that the tallest bar does not touch the top edge.
  const scale = (count: number) => (count / max) * CHART.height * 0.95;
  const singles = props.days.reduce((sum, day) => sum + day.singles, 0);
  const batch = props.days.reduce((sum, day) => sum + day.batchAddresses, 0);
  const first = props.days[0]?.date ?? '';
  const last = props.days.at(-1)?.date ?? '';
  const busiest = Math.max(0, ...totals);
  const summary = `${singles} single verifications and ${batch} batch addresses from ${first} to ${last}; the busiest day had ${busiest}.`;
  return (
    <figure class="chart">
      {/* Stretched to the card's width (preserveAspectRatio none), so it holds no text: labels are HTML below. */}
      <svg
        viewBox={`0 0 ${CHART.width} ${CHART.height}`}
        role="img"
        aria-labelledby="usage-chart-title usage-chart-desc"
        class="usage-chart"
        preserveAspectRatio="none"
      >
        <title id="usage-chart-title">Verifications per day, last {OVERVIEW_DAYS} days</title>
        <desc id="usage-chart-desc">{summary}</desc>
        <line class="chart-axis" x1={0} x2={CHART.width} y1={CHART.height} y2={CHART.height} />
        {props.days.map((day, index) => {
          const x = index * slot + (slot - barWidth) / 2;
          const singleHeight = scale(day.singles);
          const batchHeight = scale(day.batchAddresses);
          return (
            <g class="chart-day">
              <title>{`${day.date}: ${day.singles} single, ${day.batchAddresses} batch`}</title>
              <rect class="chart-hit" x={index * slot} y={0} width={slot} height={CHART.height} />
              {day.singles > 0 ? (
                <rect
                  class="bar-single"
                  x={x}
                  y={CHART.height - singleHeight}
                  width={barWidth}
                  height={singleHeight}
                />
              ) : null}
              {day.batchAddresses > 0 ? (
                <rect
                  class="bar-batch"
                  x={x}
                  y={CHART.height - singleHeight - batchHeight}
                  width={barWidth}
                  height={batchHeight}
                />
              ) : null}
            </g>
          );
        })}
      </svg>
      <div class="chart-axis-labels" aria-hidden="true">
        <span>{first}</span>
        <span>{last}</span>
      </div>
      <figcaption>
        <span class="legend-item">
          <span class="legend-swatch legend-single" aria-hidden="true" />
          Single verifications ({singles})
        </span>
        <span class="legend-item">
          <span class="legend-swatch legend-batch" aria-hidden="true" />
          Batch addresses ({batch})
        </span>
        <span class="legend-item">Busiest day: {busiest}</span>
      </figcaption>
    </figure>
  );
}

export function registerOverviewPage(dashboard: Hono<DashboardEnv>): void {
  dashboard.get('/', ...signedInPage, async (c) => {
    const overview = await accountOverview(c.get('db'), c.get('caller').accountId, Date.now());
    const welcome = c.req.query('welcome') === '1';
    const confirmed = confirmedNotice(c.req.query('email-confirmed'));
    return renderPage(
      c,
      <Layout title="Overview" section="overview" {...layoutContext(c)}>
        <h1>Overview</h1>
        {welcome ? (
          <Notice kind="success">
            Welcome to rcpt: your account is ready. Create an API key to start verifying from your code.
          </Notice>
        ) : null}
        {confirmed ? <Notice kind="success">{confirmed}</Notice> : null}
        <div class="cards">
          <Card id="balance-heading" title="Credit balance">
            <p class="big-number" data-testid="credit-balance">
              {overview.creditBalance.toLocaleString('en-US')}
            </p>
            <p class="muted">One credit per verified address. Credits do not expire.</p>
          </Card>
          <Card id="start-heading" title="Get started">
            <ul class="link-list">
              <li>
                <a href="/keys">Create an API key</a>
              </li>
              <li>
                <a href="/verify">Verify one address</a>
              </li>
              <li>
                <a href="/bulk">Upload a list</a>
              </li>
            </ul>
          </Card>
        </div>
        <section class="card" aria-labelledby="usage-heading">
          <h2 id="usage-heading">Usage, last {OVERVIEW_DAYS} days</h2>
          <UsageChart days={overview.days} />
        </section>
        <section class="card" aria-labelledby="mix-heading">
          <h2 id="mix-heading">Verdict mix, last {OVERVIEW_DAYS} days</h2>
          <VerdictMix
            mix={overview.mix}
            unit="addresses"
            empty={`No verdicts in the last ${OVERVIEW_DAYS} days yet.`}
          />
        </section>
      </Layout>,
    );
  });
}

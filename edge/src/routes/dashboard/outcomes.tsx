/** @jsxImportSource hono/jsx */
// Outcomes (`/outcomes`): report what happened to the account's sends as a CSV
// (`email,outcome,at,diagnostic`), checked exactly as POST /api/v1/outcomes checks a request, and
// make, list and revoke the endpoints the sending services post their webhooks to
// (docs/verdicts.md, "Outcomes"). Plain forms: everything works without script.
import { OUTCOME_PROVIDERS, OutcomeEndpointRequest, type OutcomesResponse } from '@rcpt/shared/contract/api';
import { ApiError, validationError } from '@rcpt/shared/errors';
import type { Context, Hono } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { DashboardEnv } from '../../middleware/session.ts';
import { quotasOf } from '../../services/money/quotas.ts';
import { outcomesFromCsv } from '../../services/outcomes/csv.ts';
import {
  type CreatedEndpoint,
  createOutcomeEndpoint,
  endpointDepsOf,
  outcomeEndpointsOf,
  revokeEndpoint,
} from '../../services/outcomes/endpoints.ts';
import { recordOutcomes, reportedOutcomes } from '../../services/outcomes/record.ts';
import { DataTable } from './data-table.tsx';
import {
  CsrfField,
  FileField,
  formText,
  Notice,
  SelectField,
  SubmitButton,
  TextAreaField,
  TextField,
} from './forms.tsx';
import { changingPage, signedInPage, spendingPage } from './guards.ts';
import { Card, Layout, layoutContext, renderPage } from './layout.tsx';

const PROVIDER_LABELS: Record<(typeof OUTCOME_PROVIDERS)[number], string> = {
  ses: 'Amazon SES (through SNS)',
  sendgrid: 'SendGrid (signed Event Webhook)',
  postmark: 'Postmark (basic auth)',
  mailgun: 'Mailgun (webhook signing key)',
};

interface OutcomesState {
  notice?: string | null;
  error?: string | null;
  /** The refused file's rows, as the API names them. */
  issues?: { path: string; message: string }[];
  csvInput?: string;
  created?: CreatedEndpoint | null;
  endpointError?: string | null;
}

async function renderOutcomes(
  c: Context<DashboardEnv>,
  state: OutcomesState,
  status: ContentfulStatusCode = 200,
) {
  const endpoints = await outcomeEndpointsOf(
    c.get('db'),
    c.get('caller').accountId,
    new URL(c.req.url).origin,
  );
  const csrfToken = c.get('csrfToken');
  return renderPage(
    c,
    <Layout title="Outcomes" section="outcomes" {...layoutContext(c)}>
      <h1>Outcomes</h1>
      <p>
        Tell rcpt what happened when you sent: each outcome is matched to the verdict rcpt gave the address in
        the 30 days before, counts on the <a href="/accuracy">Accuracy</a> page, and teaches rcpt: an address
        that hard-bounced is answered undeliverable for your account. A <code>deliverable</code> verdict that
        a sending service&apos;s signed webhook reports as a mailbox bounce gives its credit back (docs: the
        guarantee).
      </p>
      {state.notice ? <Notice kind="success">{state.notice}</Notice> : null}
      {state.error ? (
        <Notice kind="error">
          {state.error}
          {state.issues && state.issues.length > 0 ? (
            <ul>
              {state.issues.slice(0, 20).map((issue) => (
                <li>
                  <code>{issue.path}</code>: {issue.message}
                </li>
              ))}
            </ul>
          ) : null}
        </Notice>
      ) : null}
      <Card id="outcomes-upload" title="Upload outcomes">
        <form method="post" action="/outcomes/upload" enctype="multipart/form-data" class="stack">
          <CsrfField token={csrfToken} />
          <FileField
            id="outcomes-file"
            name="file"
            label="CSV file"
            accept=".csv,text/csv"
            hint={
              <>
                Columns <code>email,outcome,at,diagnostic</code> (a header row is optional); outcome is one of
                delivered, hard_bounce, soft_bounce, complaint; at is RFC 3339 (2026-03-01T08:00:00Z); up to
                1,000 rows.
              </>
            }
          />
          <TextAreaField
            id="outcomes-csv"
            name="csv"
            label="Or paste the CSV"
            value={state.csvInput ?? ''}
            hint="Used when no file is chosen."
          />
          <SubmitButton>Record outcomes</SubmitButton>
        </form>
      </Card>
      <Card id="outcomes-endpoints" title="Sending service webhooks">
        {state.created ? (
          <Notice kind="info">
            New endpoint: give your sending service <code>{state.created.endpoint.url}</code>
            {state.created.basicAuth ? (
              <>
                {' '}
                with basic auth user <code>{state.created.basicAuth.username}</code> and password{' '}
                <code>{state.created.basicAuth.password}</code>. Copy the password now: it is shown only once.
              </>
            ) : (
              '.'
            )}
          </Notice>
        ) : null}
        {endpoints.length === 0 ? (
          <p class="muted">No endpoint yet.</p>
        ) : (
          <DataTable columns={['Service', 'URL', 'Made', '']}>
            {endpoints.map((endpoint) => (
              <tr>
                <td data-label="Service">{PROVIDER_LABELS[endpoint.provider]}</td>
                <td data-label="URL" class="url-cell">
                  {endpoint.url}
                </td>
                <td data-label="Made">{endpoint.createdAt.slice(0, 10)}</td>
                <td>
                  <form
                    method="post"
                    action={`/outcomes/endpoints/${encodeURIComponent(endpoint.id)}/revoke`}
                  >
                    <CsrfField token={csrfToken} />
                    <SubmitButton kind="danger" label={`Revoke ${endpoint.url}`}>
                      Revoke
                    </SubmitButton>
                  </form>
                </td>
              </tr>
            ))}
          </DataTable>
        )}
        <form method="post" action="/outcomes/endpoints" class="stack">
          <CsrfField token={csrfToken} />
          <SelectField
            id="endpoint-provider"
            name="provider"
            label="Sending service"
            options={OUTCOME_PROVIDERS.map((provider) => ({
              value: provider,
              label: PROVIDER_LABELS[provider],
            }))}
          />
          <TextField
            id="endpoint-credential"
            name="credential"
            label="What the service signs with"
            value=""
            maxlength={1000}
            hint="SES: the SNS topic ARN. SendGrid: the verification key. Mailgun: the webhook signing key. Postmark: leave empty (rcpt makes the credentials)."
            error={state.endpointError}
          />
          <SubmitButton>Make endpoint</SubmitButton>
        </form>
      </Card>
    </Layout>,
    status,
  );
}

/** The endpoint request of the form's provider and credential, checked by the API's schema. */
function endpointRequestOf(provider: string, credential: string) {
  const field = { ses: 'topicArn', sendgrid: 'publicKey', mailgun: 'signingKey', postmark: null }[
    provider as (typeof OUTCOME_PROVIDERS)[number]
  ];
  const request = { provider, ...(field ? { [field]: credential } : {}) };
  const checked = OutcomeEndpointRequest.safeParse(request);
  if (!checked.success)
    throw validationError(checked.error, 'The service or what it signs with is not valid.');
  return checked.data;
}

/** An expected refusal (bad input, quota, conflict) as the page shows it; anything else is rethrown. */
function expectedProblem(error: unknown): ApiError {
  if (error instanceof ApiError && error.httpStatus < 500) return error;
  throw error;
}

function issuesOf(error: ApiError): { path: string; message: string }[] {
  const issues = error.details?.issues;
  return Array.isArray(issues) ? (issues as { path: string; message: string }[]) : [];
}

function recordedNotice(answer: OutcomesResponse): string {
  return `Recorded ${answer.recorded} outcome${answer.recorded === 1 ? '' : 's'} (${answer.duplicates} already known), ${answer.matched} matched to a verdict.`;
}

export function registerOutcomesPage(dashboard: Hono<DashboardEnv>): void {
  dashboard.get('/outcomes', ...signedInPage, (c) => renderOutcomes(c, {}));

  dashboard.post('/outcomes/upload', ...spendingPage, async (c) => {
    const file = (await c.req.formData()).get('file');
    const pasted = await formText(c, 'csv');
    const text = file instanceof File && file.size > 0 ? await file.text() : pasted;
    try {
      const { answer } = await recordOutcomes(
        {
          db: c.get('db'),
          quotas: quotasOf(c.get('config')),
          now: Date.now(),
          desks: c.get('services').desks,
        },
        { accountId: c.get('caller').accountId, apiKeyId: null, mode: 'live', source: 'dashboard' },
        reportedOutcomes(outcomesFromCsv(text)),
      );
      return renderOutcomes(c, { notice: recordedNotice(answer) });
    } catch (error) {
      const problem = expectedProblem(error);
      return renderOutcomes(
        c,
        { error: problem.message, issues: issuesOf(problem), csvInput: pasted.slice(0, 100_000) },
        problem.httpStatus as ContentfulStatusCode,
      );
    }
  });

  dashboard.post('/outcomes/endpoints', ...changingPage, async (c) => {
    try {
      const request = endpointRequestOf(
        await formText(c, 'provider'),
        (await formText(c, 'credential')).trim(),
      );
      const created = await createOutcomeEndpoint(
        endpointDepsOf(c.get('db'), c.get('config'), c.req.url),
        c.get('caller').accountId,
        request,
      );
      return renderOutcomes(c, { created });
    } catch (error) {
      const problem = expectedProblem(error);
      return renderOutcomes(
        c,
        { endpointError: problem.message },
        problem.httpStatus as ContentfulStatusCode,
      );
    }
  });

  dashboard.post('/outcomes/endpoints/:id/revoke', ...changingPage, async (c) => {
    try {
      await revokeEndpoint(c.get('db'), c.get('caller').accountId, c.req.param('id'), Date.now());
      return renderOutcomes(c, { notice: 'Endpoint revoked: its URL takes nothing more.' });
    } catch (error) {
      const problem = expectedProblem(error);
      return renderOutcomes(c, { error: problem.message }, problem.httpStatus as ContentfulStatusCode);
    }
  });
}

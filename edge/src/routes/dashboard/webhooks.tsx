/** @jsxImportSource hono/jsx */
// Webhooks (`/webhooks`): the default URL for job events, the signing secret (shown once,
// rotated on request), a test event, and the recent deliveries with their HTTP status.
import { ApiError } from '@rcpt/shared/errors';
import type { Context, Hono } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { DashboardEnv } from '../../middleware/session.ts';
import { sendTestEvent } from '../../services/webhooks/delivery.ts';
import { rotateWebhookSecret, setDefaultWebhookUrl } from '../../services/webhooks/settings.ts';
import { findAccount } from '../../storage/accounts.ts';
import { listDeliveries, type WebhookDeliveryRow } from '../../storage/webhooks.ts';
import { DataTable } from './data-table.tsx';
import { CsrfField, formText, Notice, SecretField, SubmitButton, TextField, Timestamp } from './forms.tsx';
import { changingPage, signedInPage, spendingPage } from './guards.ts';
import { Card, Layout, layoutContext, renderPage } from './layout.tsx';

const RECENT_DELIVERIES = 20;

interface WebhooksState {
  notice?: string | null;
  error?: string | null;
  urlError?: string | null;
  urlInput?: string;
  newSecret?: string | null;
}

function DeliveryRows(props: { deliveries: WebhookDeliveryRow[] }) {
  return (
    <DataTable columns={['When', 'Event', 'URL', 'State', 'HTTP status', 'Attempts']}>
      {props.deliveries.map((delivery) => (
        <tr>
          <td data-label="When">
            <Timestamp at={delivery.createdAt} />
          </td>
          <td data-label="Event">
            <code>{delivery.eventType}</code>
          </td>
          <td data-label="URL" class="url-cell">
            {delivery.url}
          </td>
          <td data-label="State">
            <span class={`badge badge-delivery-${delivery.state}`}>{delivery.state}</span>
          </td>
          <td data-label="HTTP status">
            {delivery.lastStatus ??
              (delivery.lastError ? <span class="muted">{delivery.lastError}</span> : '—')}
          </td>
          <td data-label="Attempts">{delivery.attempts}</td>
        </tr>
      ))}
    </DataTable>
  );
}

async function renderWebhooks(
  c: Context<DashboardEnv>,
  state: WebhooksState,
  status: ContentfulStatusCode = 200,
) {
  const db = c.get('db');
  const { accountId } = c.get('caller');
  const [account, deliveries] = await Promise.all([
    findAccount(db, accountId),
    listDeliveries(db, accountId, { offset: 0, limit: RECENT_DELIVERIES }),
  ]);
  const csrfToken = c.get('csrfToken');
  const hasSecret = Boolean(account?.webhookSecret);
  // Webhook settings need a confirmed email (EMAIL_NOT_CONFIRMED): say so, and offer no button.
  const { unconfirmedEmail } = layoutContext(c);
  // A test event needs somewhere to go and a secret to sign it with: say what is missing
  // before the click instead of failing after it.
  const testBlocker = unconfirmedEmail
    ? 'Available once your email address is confirmed.'
    : !account?.webhookUrl && !hasSecret
      ? 'Save a default URL and create a signing secret first.'
      : !account?.webhookUrl
        ? 'Save a default URL first.'
        : !hasSecret
          ? 'Create a signing secret first.'
          : null;
  return renderPage(
    c,
    <Layout title="Webhooks" section="webhooks" {...layoutContext(c)}>
      <h1>Webhooks</h1>
      <p>
        rcpt posts <code>job.completed</code> and <code>job.failed</code> events, and <code>job.updated</code>{' '}
        when a recheck round or a watched domain&apos;s change changes a job&apos;s verdicts, signed per
        Standard Webhooks (<code>webhook-id</code>, <code>webhook-timestamp</code>,{' '}
        <code>webhook-signature</code>), and retries failed deliveries with backoff.
      </p>
      {unconfirmedEmail ? (
        <Notice kind="info">
          Webhooks can be set up once your email address is confirmed: follow the link we sent to{' '}
          {unconfirmedEmail}.
        </Notice>
      ) : null}
      {state.notice ? <Notice kind="success">{state.notice}</Notice> : null}
      {state.error ? <Notice kind="error">{state.error}</Notice> : null}
      <Card id="webhook-url-heading" title="Default URL">
        <form method="post" action="/webhooks/url" class="stack">
          <CsrfField token={csrfToken} />
          <TextField
            id="webhook-url"
            name="url"
            label="Endpoint URL"
            type="url"
            value={state.urlInput ?? account?.webhookUrl ?? ''}
            maxlength={2048}
            placeholder="https://example.com/hooks/rcpt"
            hint="https only. Leave empty to remove it; a job's own webhookUrl still applies."
            error={state.urlError}
          />
          <SubmitButton disabled={Boolean(unconfirmedEmail)}>Save URL</SubmitButton>
        </form>
      </Card>
      <Card id="webhook-secret-heading" title="Signing secret">
        {state.newSecret ? (
          <div class="secret-card">
            <Notice kind="info">Copy the new secret now: it is shown only once.</Notice>
            <SecretField id="webhook-secret" label="Signing secret" secret={state.newSecret} />
          </div>
        ) : (
          <p>
            {hasSecret
              ? 'A secret is set. It is never shown again; rotate it if it was lost or leaked.'
              : 'No secret yet: create one to sign deliveries.'}
          </p>
        )}
        <form method="post" action="/webhooks/secret" class="stack">
          <CsrfField token={csrfToken} />
          {hasSecret ? (
            <label class="checkbox">
              <input type="checkbox" name="confirm" value="yes" required /> I understand that the current
              secret stops working at once
            </label>
          ) : null}
          <SubmitButton kind={hasSecret ? 'danger' : 'primary'} disabled={Boolean(unconfirmedEmail)}>
            {hasSecret ? 'Rotate secret' : 'Create secret'}
          </SubmitButton>
        </form>
      </Card>
      <Card id="webhook-test-heading" title="Test">
        <form method="post" action="/webhooks/test" class="stack">
          <CsrfField token={csrfToken} />
          <p>
            Sends a signed <code>webhook.test</code> event to the default URL now, once (it is not retried).
          </p>
          {testBlocker ? (
            <p class="muted" id="webhook-test-needs">
              {testBlocker}
            </p>
          ) : null}
          <SubmitButton
            kind="secondary"
            disabled={testBlocker !== null}
            describedBy={testBlocker ? 'webhook-test-needs' : undefined}
          >
            Send test event
          </SubmitButton>
        </form>
      </Card>
      <Card id="webhook-deliveries-heading" title="Recent deliveries">
        {deliveries.length === 0 ? (
          <p class="muted">No deliveries yet.</p>
        ) : (
          <DeliveryRows deliveries={deliveries} />
        )}
      </Card>
    </Layout>,
    status,
  );
}

/** The message of an expected failure (bad input, no SECRETS_KEY, an unconfirmed email), or rethrows. */
function expectedProblem(error: unknown): ApiError {
  if (
    error instanceof ApiError &&
    (error.code === 'VALIDATION_ERROR' ||
      error.code === 'SERVICE_UNAVAILABLE' ||
      error.code === 'EMAIL_NOT_CONFIRMED')
  )
    return error;
  throw error;
}

export function registerWebhooksPage(dashboard: Hono<DashboardEnv>): void {
  dashboard.get('/webhooks', ...signedInPage, (c) =>
    renderWebhooks(c, { notice: c.req.query('saved') === '1' ? 'Webhook URL saved.' : null }),
  );

  dashboard.post('/webhooks/url', ...changingPage, async (c) => {
    const raw = (await formText(c, 'url')).trim();
    try {
      await setDefaultWebhookUrl(
        c.get('db'),
        c.get('caller').accountId,
        raw === '' ? null : raw,
        c.get('config').ALLOW_PRIVATE_TARGETS,
      );
    } catch (error) {
      const problem = expectedProblem(error);
      return renderWebhooks(
        c,
        { urlError: problem.message, urlInput: raw },
        problem.httpStatus as ContentfulStatusCode,
      );
    }
    return c.redirect('/webhooks?saved=1', 303);
  });

  dashboard.post('/webhooks/secret', ...changingPage, async (c) => {
    const db = c.get('db');
    const { accountId } = c.get('caller');
    const account = await findAccount(db, accountId);
    if (account?.webhookSecret && (await formText(c, 'confirm')) !== 'yes') {
      return renderWebhooks(
        c,
        { error: 'Tick the box to confirm: the current secret stops working at once.' },
        400,
      );
    }
    try {
      const newSecret = await rotateWebhookSecret(db, accountId, c.get('config').SECRETS_KEY);
      return renderWebhooks(c, { newSecret });
    } catch (error) {
      const problem = expectedProblem(error);
      return renderWebhooks(c, { error: problem.message }, problem.httpStatus as ContentfulStatusCode);
    }
  });

  dashboard.post('/webhooks/test', ...spendingPage, async (c) => {
    try {
      const delivery = await sendTestEvent(
        c.get('db'),
        c.get('caller').accountId,
        c.get('config'),
        Date.now(),
      );
      return delivery.state === 'delivered'
        ? renderWebhooks(c, { notice: `Test event delivered: HTTP ${delivery.lastStatus}.` })
        : renderWebhooks(c, {
            error: `Test event not delivered (${delivery.lastStatus ? `HTTP ${delivery.lastStatus}` : (delivery.lastError ?? 'no answer')}). A test event is sent once, never retried.`,
          });
    } catch (error) {
      const problem = expectedProblem(error);
      return renderWebhooks(c, { error: problem.message }, problem.httpStatus as ContentfulStatusCode);
    }
  });
}

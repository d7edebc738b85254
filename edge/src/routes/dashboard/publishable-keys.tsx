/** @jsxImportSource hono/jsx */
// Publishable keys (`/keys/publishable`): keys for web pages, made for a list of origins with a
// daily cap and the customer's Turnstile, on unless they untick it (docs/publishable-keys.md). A
// publishable key is embedded in pages anyone can read, so it is not a secret: the dashboard
// shows it again, with the snippet that includes the form widget, and each key's page shows
// today's use of its cap and the client networks that used it most.
import { ApiError } from '@rcpt/shared/errors';
import type { Context, Hono } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { DashboardEnv } from '../../middleware/session.ts';
import { createPublishableKey, keyLimitsOf, parseAllowedOrigins } from '../../services/keys/api-keys.ts';
import {
  DAILY_CAP,
  PUBLISHABLE_PER_CLIENT,
  publishableKeyDay,
  TOP_NETWORKS_SHOWN,
} from '../../services/keys/publishable-keys.ts';
import { megabytes, quotasOf } from '../../services/money/quotas.ts';
import { type ApiKeyRow, listApiKeys } from '../../storage/api-keys.ts';
import { DataTable } from './data-table.tsx';
import { CsrfField, formText, Notice, SubmitButton, TextAreaField, TextField } from './forms.tsx';
import { changingPage, signedInPage } from './guards.ts';
import { KeyNameField, keyNameProblem } from './key-name.tsx';
import { KeyStatusCells } from './key-status.tsx';
import { Card, Layout, layoutContext, renderPage } from './layout.tsx';

/** Cloudflare's Turnstile secret keys are short tokens; anything far longer is a paste mistake. */
const MAX_TURNSTILE_SECRET = 200;

interface FormState {
  name: string;
  origins: string;
  dailyCap: string;
  turnstile: boolean;
  errors: Partial<Record<'name' | 'origins' | 'dailyCap' | 'turnstile', string>>;
  refusal: string | null;
}

function PublishableKeyForm(props: { csrfToken: string; state?: FormState }) {
  const state = props.state;
  return (
    <>
      <h1>New publishable key</h1>
      <p>
        A publishable key (<code>rk_pub_…</code>) goes in your web pages, with the form widget: it may only
        verify single addresses, only for pages of the origins you list, at most your daily cap a day. Each
        check costs 1 credit, like any verification.
      </p>
      {state?.refusal ? <Notice kind="error">{state.refusal}</Notice> : null}
      <Card id="publishable-form-heading" title="Where it may be used">
        <form method="post" action="/keys/publishable" class="stack">
          <CsrfField token={props.csrfToken} />
          <KeyNameField
            id="publishable-name"
            value={state?.name}
            hint="Which site or form, e.g. “shop sign-up”."
            error={state?.errors.name}
          />
          <TextAreaField
            id="publishable-origins"
            name="origins"
            label="Allowed origins"
            required
            value={state?.origins}
            hint={
              <>
                One per line, scheme, host and port exactly as the browser shows them:{' '}
                <code>https://www.example.com</code>. Pages of any other origin are refused.
              </>
            }
            error={state?.errors.origins}
          />
          <TextField
            id="publishable-cap"
            name="dailyCap"
            type="number"
            label="Daily cap"
            min={DAILY_CAP.min}
            max={DAILY_CAP.max}
            required
            value={state?.dailyCap ?? String(DAILY_CAP.default)}
            hint="Verifications a day (UTC) at most: if the key is copied onto another page, it costs you no more than this."
            error={state?.errors.dailyCap}
          />
          <div class="field">
            <label class="checkbox">
              <input
                type="checkbox"
                name="turnstile"
                value="on"
                checked={state?.turnstile ?? true}
                aria-describedby="publishable-turnstile-choice-hint"
              />{' '}
              Require a Turnstile token with every check (recommended)
            </label>
            <p class="hint" id="publishable-turnstile-choice-hint">
              Anyone can copy the key from your page and send checks from a script; with Turnstile, only your
              page's visitors can. Without it, only the per-network limits and the daily cap stand in the way.
            </p>
          </div>
          <TextField
            id="publishable-turnstile"
            name="turnstileSecret"
            type="password"
            label="Turnstile secret key"
            autocomplete="off"
            maxlength={MAX_TURNSTILE_SECRET}
            hint="From your Cloudflare Turnstile widget's settings: every check must carry a token from that widget on your page. rcpt stores it encrypted."
            error={state?.errors.turnstile}
          />
          <div class="button-row">
            <SubmitButton>Create publishable key</SubmitButton>
            <a href="/keys" class="button button-secondary">
              Cancel
            </a>
          </div>
        </form>
      </Card>
    </>
  );
}

/** The account's publishable keys on the keys page, each with the snippet that embeds the widget. */
export function PublishableKeyList(props: { keys: ApiKeyRow[]; widgetUrl: string }) {
  const publishable = props.keys.filter((key) => key.kind === 'publishable');
  return (
    <Card id="publishable-list-heading" title="Publishable keys">
      <p>
        For web pages: the form widget checks addresses as people type them.{' '}
        <a href="/keys/publishable">New publishable key</a>
      </p>
      {publishable.length === 0 ? (
        <p class="muted">No publishable keys yet.</p>
      ) : (
        <DataTable
          columns={['Name', 'Key and snippet', 'Origins', 'Daily cap', 'Turnstile', 'Status']}
          actionsColumn
        >
          {publishable.map((key) => {
            const limits = keyLimitsOf(key);
            return (
              <tr data-key-id={key.id}>
                <td data-label="Name">
                  <a href={`/keys/publishable/${key.id}`}>{key.name}</a>
                </td>
                <td data-label="Key and snippet">
                  <code class="publishable-key">{key.publishableKey}</code>
                  <pre class="snippet">
                    <code>{`<script src="${props.widgetUrl}" data-rcpt-key="${key.publishableKey}" defer></script>`}</code>
                  </pre>
                </td>
                <td data-label="Origins">{limits.allowedOrigins?.join(', ')}</td>
                <td data-label="Daily cap">{limits.dailyCap?.toLocaleString('en-US')}</td>
                <td data-label="Turnstile">{limits.turnstileSecret ? 'required' : 'off'}</td>
                <KeyStatusCells apiKey={key} />
              </tr>
            );
          })}
        </DataTable>
      )}
    </Card>
  );
}

/** One publishable key's page: what it is, and today's use of its cap by client network. */
function PublishableKeyPage(props: {
  apiKey: ApiKeyRow;
  day: Awaited<ReturnType<typeof publishableKeyDay>>;
  storageLimit: number;
}) {
  const { apiKey, day } = props;
  const limits = keyLimitsOf(apiKey);
  const cap = limits.dailyCap ?? 0;
  const count = (value: number) => value.toLocaleString('en-US');
  return (
    <>
      <h1>Publishable key “{apiKey.name}”</h1>
      <p>
        <code class="publishable-key">{apiKey.publishableKey}</code> — for {limits.allowedOrigins?.join(', ')}
        ; Turnstile {limits.turnstileSecret ? 'required' : 'off'}. <a href="/keys">All keys</a>
      </p>
      <Card id="publishable-today-heading" title="Today (UTC)">
        <p>
          {count(day.used)} of {count(cap)} checks of the daily cap used; {count(Math.max(0, cap - day.used))}{' '}
          left until midnight UTC. Storage booked: {megabytes(day.bytes)} of {megabytes(props.storageLimit)}.
        </p>
        <h3>Client networks with the most checks</h3>
        <p class="muted">
          A client network is an IPv4 /24 or an IPv6 /48: each may make {PUBLISHABLE_PER_CLIENT.limit} checks
          a minute with this key. The {TOP_NETWORKS_SHOWN} busiest today are shown.
        </p>
        {day.topNetworks.length === 0 ? (
          <p class="muted">No checks yet today.</p>
        ) : (
          <DataTable columns={['Client network', 'Checks today']} data-top-networks>
            {day.topNetworks.map((row) => (
              <tr>
                <td data-label="Client network">
                  <code>{row.network}</code>
                </td>
                <td data-label="Checks today">{count(row.calls)}</td>
              </tr>
            ))}
          </DataTable>
        )}
      </Card>
    </>
  );
}

/** Where this deployment serves the widget, for the snippet. */
export function widgetUrlOf(c: Context): string {
  return `${new URL(c.req.url).origin}/widget.js`;
}

export function registerPublishableKeyPages(dashboard: Hono<DashboardEnv>): void {
  dashboard.get('/keys/publishable', ...signedInPage, (c) =>
    renderPage(
      c,
      <Layout title="New publishable key" section="keys" {...layoutContext(c)}>
        <PublishableKeyForm csrfToken={c.get('csrfToken')} />
      </Layout>,
    ),
  );

  dashboard.get('/keys/publishable/:id', ...signedInPage, async (c) => {
    const keys = await listApiKeys(c.get('db'), c.get('caller').accountId);
    const apiKey = keys.find((key) => key.id === c.req.param('id') && key.kind === 'publishable');
    if (!apiKey) throw new ApiError('NOT_FOUND', { message: 'No such publishable key on this account.' });
    const day = await publishableKeyDay(c.get('services').limiters, apiKey.id, Date.now());
    return renderPage(
      c,
      <Layout title={`Publishable key ${apiKey.name}`} section="keys" {...layoutContext(c)}>
        <PublishableKeyPage
          apiKey={apiKey}
          day={day}
          storageLimit={quotasOf(c.get('config')).publishableStorageBytesPerDay}
        />
      </Layout>,
    );
  });

  dashboard.post('/keys/publishable', ...changingPage, async (c) => {
    const { accountId } = c.get('caller');
    const config = c.get('config');
    const turnstileSecret = (await formText(c, 'turnstileSecret')).trim();
    const state: FormState = {
      name: (await formText(c, 'name')).trim(),
      origins: await formText(c, 'origins'),
      dailyCap: (await formText(c, 'dailyCap')).trim(),
      // Ticked on the form unless the customer unticks it; a secret given turns it on too.
      turnstile: (await formText(c, 'turnstile')) === 'on' || turnstileSecret !== '',
      errors: {},
      refusal: null,
    };
    const nameProblem = keyNameProblem(state.name);
    if (nameProblem) state.errors.name = nameProblem;
    const origins = parseAllowedOrigins(state.origins);
    if ('problem' in origins) state.errors.origins = origins.problem;
    const dailyCap = Number(state.dailyCap);
    if (!/^\d+$/.test(state.dailyCap) || dailyCap < DAILY_CAP.min || dailyCap > DAILY_CAP.max) {
      state.errors.dailyCap = `Give a whole number from ${DAILY_CAP.min} to ${DAILY_CAP.max.toLocaleString('en-US')}.`;
    }
    if (turnstileSecret.length > MAX_TURNSTILE_SECRET || /\s/.test(turnstileSecret)) {
      state.errors.turnstile = 'That does not look like a Turnstile secret key.';
    } else if (state.turnstile && turnstileSecret === '') {
      state.errors.turnstile =
        'Give your Turnstile secret key, or untick “Require a Turnstile token” to make the key without it.';
    }
    let status: ContentfulStatusCode = 400;
    if (Object.keys(state.errors).length === 0 && 'origins' in origins) {
      try {
        const created = await createPublishableKey(c.get('db'), {
          accountId,
          name: state.name,
          allowedOrigins: origins.origins,
          dailyCap,
          turnstileSecret: turnstileSecret || null,
          secretsKey: config.SECRETS_KEY,
          maxActiveKeys: quotasOf(config).apiKeys,
          now: Date.now(),
        });
        return c.redirect(`/keys?created=${created.id}`, 303);
      } catch (error) {
        const refused = ['QUOTA_EXCEEDED', 'EMAIL_NOT_CONFIRMED', 'SERVICE_UNAVAILABLE'];
        if (!(error instanceof ApiError && refused.includes(error.code))) throw error;
        state.refusal = error.message;
        status = error.httpStatus as ContentfulStatusCode;
      }
    }
    return renderPage(
      c,
      <Layout title="New publishable key" section="keys" {...layoutContext(c)}>
        <PublishableKeyForm csrfToken={c.get('csrfToken')} state={state} />
      </Layout>,
      status,
    );
  });
}

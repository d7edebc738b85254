/** @jsxImportSource hono/jsx */
// API keys (`/keys`): create (the secret is shown once, in the answer to the POST, and never
// again), optionally limited to scopes and client address blocks (docs/publishable-keys.md),
// list by visible prefix with their limits, and revoke after a confirmation page. A revoked
// key fails on the API's very next request (the API looks keys up on every call).
import { ApiError } from '@rcpt/shared/errors';
import type { Context, Hono } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { DashboardEnv } from '../../middleware/session.ts';
import {
  createApiKey,
  KEY_SCOPES,
  type KeyScope,
  keyLimitsOf,
  markKeysReviewed,
  parseAllowedCidrs,
  revokeKey,
} from '../../services/keys/api-keys.ts';
import { quotasOf } from '../../services/money/quotas.ts';
import { findAccount } from '../../storage/accounts.ts';
import { type ApiKeyRow, listApiKeys } from '../../storage/api-keys.ts';
import { DataTable } from './data-table.tsx';
import {
  CsrfField,
  formText,
  Notice,
  SecretField,
  SubmitButton,
  TextAreaField,
  Timestamp,
} from './forms.tsx';
import { changingPage, signedInPage } from './guards.ts';
import { KeyNameField, keyNameProblem } from './key-name.tsx';
import { KeyStatusCells, RevokeConfirmation } from './key-status.tsx';
import { Card, Layout, layoutContext, renderPage } from './layout.tsx';
import { PublishableKeyList, registerPublishableKeyPages, widgetUrlOf } from './publishable-keys.tsx';

interface CreatedKey {
  name: string;
  secret: string;
  mode: 'live' | 'test';
}

function KeysPage(props: {
  keys: ApiKeyRow[];
  csrfToken: string;
  created?: CreatedKey | null;
  notice?: string | null;
  error?: string | null;
  /** Why no key was created although the form was right (a quota, a live key before confirmation). */
  refusal?: string | null;
  name?: string;
  /** The scopes ticked and the address blocks typed, kept when the form is shown again. */
  scopes?: readonly KeyScope[];
  cidrs?: string;
  cidrsError?: string | null;
  scopesError?: string | null;
  /** The account's email while it is unconfirmed: live keys wait for it (EMAIL_NOT_CONFIRMED). */
  unconfirmedEmail?: string | null;
  widgetUrl: string;
  /** When the password was last set through a reset link, until the owner reviewed the keys made before. */
  reviewBefore?: number | null;
}) {
  const secretKeys = props.keys.filter((key) => key.kind === 'secret');
  return (
    <>
      <h1>API keys</h1>
      <p>
        Send a key in the <code>X-API-Key</code> header. Live keys (<code>rk_live_…</code>) verify for real
        and use credits; test keys (<code>rk_test_…</code>) answer from the sandbox for free.
      </p>
      {props.notice ? <Notice kind="success">{props.notice}</Notice> : null}
      {props.refusal ? <Notice kind="error">{props.refusal}</Notice> : null}
      {props.created ? <NewKeySecret created={props.created} /> : null}
      <KeysToReview keys={props.keys} before={props.reviewBefore ?? null} csrfToken={props.csrfToken} />
      <Card id="create-key-heading" title="Create a key">
        <form method="post" action="/keys" class="stack">
          <CsrfField token={props.csrfToken} />
          <KeyNameField
            id="key-name"
            value={props.name}
            hint="Where the key is used, e.g. “signup form” or “CRM import”."
            error={props.error}
          />
          <fieldset class="choices">
            <legend>Mode</legend>
            <label>
              <input
                type="radio"
                name="mode"
                value="live"
                checked={!props.unconfirmedEmail}
                disabled={Boolean(props.unconfirmedEmail)}
                aria-describedby={props.unconfirmedEmail ? 'live-key-needs-confirmation' : undefined}
              />{' '}
              Live: real verifications, 1 credit each
            </label>
            <label>
              <input type="radio" name="mode" value="test" checked={Boolean(props.unconfirmedEmail)} /> Test:
              sandbox answers, free
            </label>
            {props.unconfirmedEmail ? (
              <p class="hint" id="live-key-needs-confirmation" data-testid="live-key-needs-confirmation">
                Live keys need a confirmed email address: follow the link we sent to {props.unconfirmedEmail}.
                Test keys work meanwhile.
              </p>
            ) : null}
          </fieldset>
          <fieldset
            class="choices"
            aria-describedby={props.scopesError ? 'key-scopes-error' : 'key-scopes-hint'}
          >
            <legend>Scopes</legend>
            <input type="hidden" name="scopes-offered" value="1" />
            <p class="hint" id="key-scopes-hint">
              What the key may call. Only a key with every scope changes the account's settings and webhooks.
            </p>
            {KEY_SCOPES.map((scope) => (
              <label>
                <input
                  type="checkbox"
                  name="scopes"
                  value={scope}
                  checked={(props.scopes ?? KEY_SCOPES).includes(scope)}
                />{' '}
                {SCOPE_LABELS[scope]}
              </label>
            ))}
            {props.scopesError ? (
              <p class="field-error" id="key-scopes-error">
                {props.scopesError}
              </p>
            ) : null}
          </fieldset>
          <TextAreaField
            id="key-cidrs"
            name="cidrs"
            label="Client addresses (optional)"
            value={props.cidrs}
            hint={
              <>
                Address blocks the key may be used from, one per line: <code>203.0.113.0/24</code>,{' '}
                <code>2001:db8::/48</code> or one address. Empty: any address.
              </>
            }
            error={props.cidrsError}
          />
          <SubmitButton>Create key</SubmitButton>
        </form>
      </Card>
      <Card id="key-list-heading" title="Your keys">
        {secretKeys.length === 0 ? (
          <p class="muted">No keys yet.</p>
        ) : (
          <DataTable
            columns={['Name', 'Key', 'Mode', 'Limits', 'Created', 'Last used', 'Status']}
            actionsColumn
          >
            {secretKeys.map((key) => (
              <tr data-key-id={key.id}>
                <td data-label="Name">{key.name}</td>
                <td data-label="Key">
                  <code>{key.prefix}…</code>
                </td>
                <td data-label="Mode">{key.mode}</td>
                <td data-label="Limits">
                  <KeyLimitsSummary apiKey={key} />
                </td>
                <td data-label="Created">
                  <Timestamp at={key.createdAt} />
                </td>
                <td data-label="Last used">
                  <Timestamp at={key.lastUsedAt} empty="never" />
                </td>
                <KeyStatusCells apiKey={key} />
              </tr>
            ))}
          </DataTable>
        )}
      </Card>
      <PublishableKeyList keys={props.keys} widgetUrl={props.widgetUrl} />
    </>
  );
}

const SCOPE_LABELS: Record<KeyScope, string> = {
  verify: 'verify: the single verify',
  bulk: 'bulk: upload lists and read their jobs',
  read: 'read: the account, history and jobs',
  outcomes: 'outcomes: report what happened to sends',
};

/** A key's scopes and address blocks, as the list shows them. */
function KeyLimitsSummary(props: { apiKey: ApiKeyRow }) {
  const limits = keyLimitsOf(props.apiKey);
  return (
    <>
      <span>{limits.scopes === null ? 'every scope' : `scopes: ${limits.scopes.join(', ')}`}</span>
      <br />
      <span class="muted">
        {limits.allowedCidrs === null
          ? 'any address'
          : `from ${limits.allowedCidrs.map((block) => block.text).join(', ')}`}
      </span>
    </>
  );
}

/** Every value of a repeated form field (checkboxes). */
async function formValues(c: Context, name: string): Promise<string[]> {
  return (await c.req.formData()).getAll(name).filter((value): value is string => typeof value === 'string');
}

function NewKeySecret(props: { created: CreatedKey }) {
  return (
    <section class="card secret-card" aria-labelledby="new-key-heading">
      <h2 id="new-key-heading">Your new key “{props.created.name}”</h2>
      <Notice kind="info">Copy it now: it is shown only once. rcpt keeps only a hash of it.</Notice>
      <SecretField
        id="new-key-secret"
        label={`API key (${props.created.mode})`}
        secret={props.created.secret}
      />
    </section>
  );
}

function RevokePage(props: { apiKey: ApiKeyRow; csrfToken: string }) {
  return (
    <RevokeConfirmation
      name={props.apiKey.name}
      action={`/keys/${props.apiKey.id}/revoke`}
      button="Revoke key"
      cancelHref="/keys"
      csrfToken={props.csrfToken}
    >
      The key <code>{props.apiKey.prefix}…</code> stops working at once: every request that sends it gets 401.
      This cannot be undone.
    </RevokeConfirmation>
  );
}

/**
 * After a password reset, the active keys made before it: whoever held the account until then
 * may have made them, and they keep working whatever the password is. Listed until the owner
 * says they looked (docs/operations.md, "Account emails: sign-up confirmation and password reset").
 */
function KeysToReview(props: { keys: ApiKeyRow[]; before: number | null; csrfToken: string }) {
  const { before } = props;
  if (before === null) return null;
  const made = props.keys.filter((key) => key.revokedAt === null && key.createdAt < before);
  if (made.length === 0) return null;
  return (
    <section
      class="notice notice-error"
      role="alert"
      aria-labelledby="review-keys-heading"
      data-testid="keys-to-review"
    >
      <h2 id="review-keys-heading">Check the keys made before your password was reset</h2>
      <p>
        The password was reset through an emailed link on <Timestamp at={before} />. If someone else held the
        account before, they may have made keys, and keys work whatever the password is. Revoke any you do not
        recognise:
      </p>
      <ul>
        {made.map((key) => (
          <li>
            <a href={`/keys/${key.id}/revoke`}>
              {key.name} ({key.prefix}…)
            </a>
            , made <Timestamp at={key.createdAt} />
          </li>
        ))}
      </ul>
      <form method="post" action="/keys/reviewed">
        <CsrfField token={props.csrfToken} />
        <input type="hidden" name="before" value={String(before)} />
        <SubmitButton kind="secondary">I know these keys</SubmitButton>
      </form>
    </section>
  );
}

export function registerKeysPages(dashboard: Hono<DashboardEnv>): void {
  registerPublishableKeyPages(dashboard);
  dashboard.get('/keys', ...signedInPage, async (c) => {
    const [keys, account] = await Promise.all([
      listApiKeys(c.get('db'), c.get('caller').accountId),
      findAccount(c.get('db'), c.get('caller').accountId),
    ]);
    // The notice names the key from the list, never text from the URL.
    const revoked = keys.find((key) => key.id === c.req.query('revoked') && key.revokedAt !== null);
    const created = keys.find((key) => key.id === c.req.query('created') && key.kind === 'publishable');
    const notice = revoked
      ? `Key ${revoked.prefix}… (${revoked.name}) is revoked.`
      : created
        ? `Publishable key ${created.prefix}… (${created.name}) is ready: put the snippet below in your pages.`
        : null;
    return renderPage(
      c,
      <Layout title="API keys" section="keys" {...layoutContext(c)}>
        <KeysPage
          keys={keys}
          csrfToken={c.get('csrfToken')}
          notice={notice}
          unconfirmedEmail={layoutContext(c).unconfirmedEmail}
          widgetUrl={widgetUrlOf(c)}
          reviewBefore={account?.keysReviewBefore ?? null}
        />
      </Layout>,
    );
  });

  dashboard.post('/keys', ...changingPage, async (c) => {
    const db = c.get('db');
    const { accountId } = c.get('caller');
    const name = (await formText(c, 'name')).trim();
    const mode = (await formText(c, 'mode')) === 'test' ? 'test' : 'live';
    // A form without the scopes fieldset (a script posting name and mode) asks for every scope;
    // the page's form says it offered them, so ticking none there is a mistake to point out.
    const scopes = (await formText(c, 'scopes-offered')) ? await formValues(c, 'scopes') : KEY_SCOPES;
    const chosenScopes = KEY_SCOPES.filter((scope) => scopes.includes(scope));
    const cidrs = await formText(c, 'cidrs');
    const allowed = parseAllowedCidrs(cidrs);
    const problem = keyNameProblem(name);
    const scopesError = chosenScopes.length === 0 ? 'Tick at least one scope.' : null;
    const cidrsError = 'problem' in allowed ? allowed.problem : null;
    let created: CreatedKey | null = null;
    let refusal: ApiError | null = null;
    if (!problem && !scopesError && !('problem' in allowed)) {
      try {
        const maxActiveKeys = quotasOf(c.get('config')).apiKeys;
        const key = await createApiKey(db, {
          accountId,
          name,
          mode,
          maxActiveKeys,
          now: Date.now(),
          scopes: chosenScopes,
          allowedCidrs: allowed.blocks,
        });
        created = { name, secret: key.secret, mode };
      } catch (error) {
        if (
          !(
            error instanceof ApiError &&
            (error.code === 'QUOTA_EXCEEDED' || error.code === 'EMAIL_NOT_CONFIRMED')
          )
        )
          throw error;
        refusal = error;
      }
    }
    const keys = await listApiKeys(db, accountId);
    return renderPage(
      c,
      <Layout title="API keys" section="keys" {...layoutContext(c)}>
        <KeysPage
          keys={keys}
          csrfToken={c.get('csrfToken')}
          created={created}
          error={problem}
          scopesError={scopesError}
          cidrsError={cidrsError}
          refusal={refusal?.message ?? null}
          name={created ? '' : name}
          scopes={created ? KEY_SCOPES : chosenScopes}
          cidrs={created ? '' : cidrs}
          unconfirmedEmail={layoutContext(c).unconfirmedEmail}
          widgetUrl={widgetUrlOf(c)}
        />
      </Layout>,
      created ? 201 : refusal ? (refusal.httpStatus as ContentfulStatusCode) : 400,
    );
  });

  dashboard.post('/keys/reviewed', ...changingPage, async (c) => {
    // Only the reset the page showed: a later one is listed again.
    const before = Number(await formText(c, 'before'));
    if (Number.isSafeInteger(before)) await markKeysReviewed(c.get('db'), c.get('caller').accountId, before);
    return c.redirect('/keys', 303);
  });

  dashboard.get('/keys/:id/revoke', ...signedInPage, async (c) => {
    const apiKey = await findLiveKey(c.get('db'), c.get('caller').accountId, c.req.param('id'));
    return renderPage(
      c,
      <Layout title="Revoke key" section="keys" {...layoutContext(c)}>
        <RevokePage apiKey={apiKey} csrfToken={c.get('csrfToken')} />
      </Layout>,
    );
  });

  dashboard.post('/keys/:id/revoke', ...changingPage, async (c) => {
    const db = c.get('db');
    const { accountId } = c.get('caller');
    const apiKey = await findLiveKey(db, accountId, c.req.param('id'));
    await revokeKey({ db, limiters: c.get('services').limiters }, accountId, apiKey.id, Date.now());
    return c.redirect(`/keys?revoked=${apiKey.id}`, 303);
  });
}

async function findLiveKey(
  db: DashboardEnv['Variables']['db'],
  accountId: string,
  keyId: string,
): Promise<ApiKeyRow> {
  const apiKey = (await listApiKeys(db, accountId)).find((key) => key.id === keyId && key.revokedAt === null);
  if (!apiKey) throw new ApiError('NOT_FOUND', { message: 'No such active key on this account.' });
  return apiKey;
}

/** @jsxImportSource hono/jsx */
// Probers (`/probers`): the account's own probers (docs/operations.md, "Customer-run probers").
// Make a prober token (the secret is shown once, in the answer to the POST), list and revoke the
// account's tokens, see each of its linked probers and their egresses' health as the operator's
// view shows them — never another account's nor the shared fleet's — and choose whether the
// shared fleet takes over when none of them can probe.
import { ApiError } from '@rcpt/shared/errors';
import type { Context, Hono } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { proberRegionsOf } from '../../config.ts';
import type { DashboardEnv } from '../../middleware/session.ts';
import { requireConfirmedEmail } from '../../services/accounts/email-confirmation.ts';
import { changeAccountSettings } from '../../services/accounts/settings.ts';
import { ownProbersView, type ProberView } from '../../services/fleet/operator-view.ts';
import { createAccountProberToken, revokeProberToken } from '../../services/fleet/prober-tokens.ts';
import { quotasOf } from '../../services/money/quotas.ts';
import { findAccount } from '../../storage/accounts.ts';
import { listAccountProberTokens, type ProberTokenRow } from '../../storage/prober-tokens.ts';
import { DataTable } from './data-table.tsx';
import {
  CsrfField,
  formText,
  Notice,
  SecretField,
  SelectField,
  SettingForm,
  SubmitButton,
  Timestamp,
} from './forms.tsx';
import { changingPage, signedInPage } from './guards.ts';
import { KeyNameField, keyNameProblem } from './key-name.tsx';
import { KeyStatusCells, RevokeConfirmation } from './key-status.tsx';
import { Card, Layout, layoutContext, renderPage } from './layout.tsx';

interface CreatedToken {
  name: string;
  region: string;
  secret: string;
}

interface PageState {
  created?: CreatedToken | null;
  notice?: string | null;
  /** Why no token was made although the form was right (the quota, an unconfirmed email). */
  refusal?: string | null;
  name?: string;
  nameError?: string | null;
  region?: string;
  regionError?: string | null;
}

async function renderProbers(c: Context<DashboardEnv>, state: PageState, status: ContentfulStatusCode = 200) {
  const db = c.get('db');
  const { accountId } = c.get('caller');
  const [tokens, account, regions] = await Promise.all([
    listAccountProberTokens(db, accountId),
    findAccount(db, accountId),
    ownProbersView(c.get('services'), accountId),
  ]);
  const regionNames = proberRegionsOf(c.get('config')).map((region) => region.name);
  const csrfToken = c.get('csrfToken');
  return renderPage(
    c,
    <Layout title="Probers" section="probers" {...layoutContext(c)}>
      <h1>Probers</h1>
      <p>
        Run rcpt's prober on machines whose addresses you send mail from, and it verifies this account's
        addresses only: your single calls and your lists, never another account's. rcpt sees of it what any
        prober tells it — its addresses' health, its counts and each probe's SMTP replies — and never mail.
      </p>
      {state.notice ? <Notice kind="success">{state.notice}</Notice> : null}
      {state.refusal ? <Notice kind="error">{state.refusal}</Notice> : null}
      {state.created ? <NewTokenSecret created={state.created} edgeUrl={new URL(c.req.url).origin} /> : null}
      <Card id="create-token-heading" title="Make a prober token">
        <form method="post" action="/probers" class="stack">
          <CsrfField token={csrfToken} />
          <KeyNameField
            id="prober-token-name"
            value={state.name}
            hint="Which machine runs it, e.g. “mail-out-1 Frankfurt”."
            error={state.nameError}
          />
          <SelectField
            id="prober-token-region"
            name="region"
            label="Region"
            options={regionNames.map((name) => ({ value: name, label: name }))}
            value={state.region ?? regionNames[0]}
            hint="The region of rcpt the prober joins; pick the one nearest the machine."
            error={state.regionError}
          />
          <SubmitButton>Make token</SubmitButton>
        </form>
      </Card>
      <Card id="token-list-heading" title="Your prober tokens">
        <TokenList tokens={tokens} />
      </Card>
      <Card id="linked-probers-heading" title="Your linked probers">
        <LinkedProbers regions={regions} />
      </Card>
      <Card id="fallback-heading" title="When your probers cannot probe">
        <p>
          Your addresses go to your own probers first. When none of them can take one — none is linked, or
          each was refused at the address's mail server — rcpt's shared probers can take it instead. Without
          them, a single call answers <code>unknown</code> / <code>smtp_unavailable</code> (charged as any
          single call) and list work waits for your probers until the list's deadline.
        </p>
        <SettingForm
          action="/probers/fallback"
          csrfToken={csrfToken}
          name="sharedFleetFallback"
          checked={account?.sharedFleetFallback !== 0}
          label="Let rcpt's shared probers take over when mine cannot"
        />
      </Card>
    </Layout>,
    status,
  );
}

function NewTokenSecret(props: { created: CreatedToken; edgeUrl: string }) {
  return (
    <section class="card secret-card" aria-labelledby="new-token-heading">
      <h2 id="new-token-heading">Your new prober token “{props.created.name}”</h2>
      <Notice kind="info">Copy it now: it is shown only once. rcpt keeps only a hash of it.</Notice>
      <SecretField id="new-prober-token" label="Prober token" secret={props.created.secret} />
      <p>Run the prober with it (prober/README.md, "Running"):</p>
      <pre>
        <code>
          {`EDGE_URL=${props.edgeUrl}\nPROBER_TOKEN=<the token above>\nREGION=${props.created.region}\nSOURCE_ADDRESSES=<address>=<its PTR name>`}
        </code>
      </pre>
    </section>
  );
}

function TokenList(props: { tokens: ProberTokenRow[] }) {
  if (props.tokens.length === 0) return <p class="muted">No prober tokens yet.</p>;
  return (
    <DataTable columns={['Name', 'Token', 'Region', 'Created', 'Last linked', 'Status']} actionsColumn>
      {props.tokens.map((token) => (
        <tr data-token-id={token.id}>
          <td data-label="Name">{token.name}</td>
          <td data-label="Token">
            <code>{token.prefix}…</code>
          </td>
          <td data-label="Region">{token.region}</td>
          <td data-label="Created">
            <Timestamp at={token.createdAt} />
          </td>
          <td data-label="Last linked">
            <Timestamp at={token.lastSeenAt} empty="never" />
          </td>
          <KeyStatusCells apiKey={token} revokeHref={`/probers/${token.id}/revoke`} />
        </tr>
      ))}
    </DataTable>
  );
}

function LinkedProbers(props: { regions: { region: string; probers: ProberView[] }[] }) {
  const probers = props.regions.flatMap(({ region, probers }) =>
    probers.map((prober) => ({ region, prober })),
  );
  if (probers.length === 0) return <p class="muted">None of your probers is linked now.</p>;
  return (
    <>
      {probers.map(({ region, prober }) => (
        <article class="stack" data-prober-id={prober.proberId} aria-label={`Prober ${prober.proberId}`}>
          <h3>
            Prober <code>{prober.proberId}</code> in {region}
          </h3>
          <dl class="details">
            <dt>State</dt>
            <dd>{prober.state}</dd>
            <dt>Linked since</dt>
            <dd>{prober.connectedAt}</dd>
            <dt>Probes in flight</dt>
            <dd>
              {prober.inFlight} of {prober.capacity}
            </dd>
            <dt>SMTP sessions open</dt>
            <dd>{prober.sessions}</dd>
          </dl>
          <DataTable columns={['Egress', 'HELO', 'Health', 'Blocks', 'This hour']}>
            {prober.egresses.map((egress) => (
              <tr data-egress-id={egress.id}>
                <td data-label="Egress">
                  <code>{egress.id}</code>
                  {egress.label ? <span class="muted"> ({egress.label})</span> : null}
                </td>
                <td data-label="HELO">{egress.helo ?? '—'}</td>
                <td data-label="Health">
                  <EgressHealth health={egress.health} />
                </td>
                <td data-label="Blocks">
                  {egress.blocks.length === 0
                    ? 'none'
                    : egress.blocks.map((block) => (
                        <p>
                          at {block.scope.name} until {block.until}: {block.reply.code} {block.reply.text}
                        </p>
                      ))}
                </td>
                <td data-label="This hour">
                  {egress.hourlyUse.length === 0
                    ? '—'
                    : egress.hourlyUse.map((use) => `${use.provider} ${use.used}/${use.budget}`).join(', ')}
                </td>
              </tr>
            ))}
          </DataTable>
        </article>
      ))}
    </>
  );
}

/** An egress's newest health check in words: what receivers look up about its address. */
function EgressHealth(props: { health: ProberView['egresses'][number]['health'] }) {
  const { health } = props;
  if (!health) return <span class="muted">not checked yet</span>;
  if (health.address === null)
    return <span data-health="unknown">public address unknown, not checked; port 25 {health.port25}</span>;
  const helo = health.heloMatches === null ? null : health.heloMatches ? 'HELO = PTR' : 'HELO ≠ PTR';
  return (
    <div data-health={health.listings.length === 0 && health.fcrdns === 'pass' ? 'clean' : 'problem'}>
      <p>
        {health.address}: PTR {health.ptr ?? 'none'}, FCrDNS {health.fcrdns}
        {helo ? `, ${helo}` : ''}, port 25 {health.port25}
        {health.listings.length === 0 ? ', not listed' : ''}
      </p>
      {health.listings.map((listing) => (
        <p class="field-error">
          Listed on {listing.zone} ({listing.codes.join(', ')}): {listing.meaning}
        </p>
      ))}
      {health.unchecked.map((entry) => (
        <p class="muted">
          Not checked on {entry.zone}: {entry.why}
        </p>
      ))}
      <p class="muted">checked {health.checkedAt}</p>
    </div>
  );
}

function RevokePage(props: { token: ProberTokenRow; csrfToken: string }) {
  return (
    <RevokeConfirmation
      name={props.token.name}
      action={`/probers/${props.token.id}/revoke`}
      button="Revoke token"
      cancelHref="/probers"
      csrfToken={props.csrfToken}
    >
      The prober token <code>{props.token.prefix}…</code> stops working: a prober linked with it is cut off
      within a minute and cannot link again. This cannot be undone.
    </RevokeConfirmation>
  );
}

async function findLiveToken(c: Context<DashboardEnv>, tokenId: string): Promise<ProberTokenRow> {
  const tokens = await listAccountProberTokens(c.get('db'), c.get('caller').accountId);
  const token = tokens.find((row) => row.id === tokenId && row.revokedAt === null);
  if (!token) throw new ApiError('NOT_FOUND', { message: 'No such live prober token on this account.' });
  return token;
}

export function registerProbersPage(dashboard: Hono<DashboardEnv>): void {
  dashboard.get('/probers', ...signedInPage, async (c) => {
    const tokens = await listAccountProberTokens(c.get('db'), c.get('caller').accountId);
    // The notice names the token from the list, never text from the URL.
    const revoked = tokens.find((token) => token.id === c.req.query('revoked') && token.revokedAt !== null);
    const notice = revoked
      ? `Prober token ${revoked.prefix}… (${revoked.name}) is revoked.`
      : c.req.query('fallback-saved') === '1'
        ? 'Saved.'
        : null;
    return renderProbers(c, { notice });
  });

  dashboard.post('/probers', ...changingPage, async (c) => {
    const { accountId } = c.get('caller');
    const name = (await formText(c, 'name')).trim();
    const region = (await formText(c, 'region')).trim();
    const nameError = keyNameProblem(name);
    const regions = proberRegionsOf(c.get('config')).map((entry) => entry.name);
    const regionError = regions.includes(region) ? null : `Choose one of the regions: ${regions.join(', ')}.`;
    if (nameError || regionError) return renderProbers(c, { name, nameError, region, regionError }, 400);
    try {
      await requireConfirmedEmail(c.get('db'), accountId);
      const token = await createAccountProberToken(c.get('db'), {
        accountId,
        region,
        name,
        maxActive: quotasOf(c.get('config')).proberTokens,
        now: Date.now(),
      });
      return renderProbers(c, { created: { name, region, secret: token.secret } }, 201);
    } catch (error) {
      if (
        !(
          error instanceof ApiError &&
          (error.code === 'QUOTA_EXCEEDED' || error.code === 'EMAIL_NOT_CONFIRMED')
        )
      )
        throw error;
      return renderProbers(
        c,
        { name, region, refusal: error.message },
        error.httpStatus as ContentfulStatusCode,
      );
    }
  });

  dashboard.post('/probers/fallback', ...changingPage, async (c) => {
    // An unchecked box is absent from the form (HTML, "Constructing the entry list").
    const sharedFleetFallback = (await formText(c, 'sharedFleetFallback')) === 'true';
    await changeAccountSettings(
      { db: c.get('db'), limiters: c.get('services').limiters },
      c.get('caller').accountId,
      { sharedFleetFallback },
    );
    return c.redirect('/probers?fallback-saved=1', 303);
  });

  dashboard.get('/probers/:id/revoke', ...signedInPage, async (c) => {
    const token = await findLiveToken(c, c.req.param('id'));
    return renderPage(
      c,
      <Layout title="Revoke prober token" section="probers" {...layoutContext(c)}>
        <RevokePage token={token} csrfToken={c.get('csrfToken')} />
      </Layout>,
    );
  });

  dashboard.post('/probers/:id/revoke', ...changingPage, async (c) => {
    const token = await findLiveToken(c, c.req.param('id'));
    await revokeProberToken(c.get('db'), c.get('caller').accountId, token.id, Date.now());
    return c.redirect(`/probers?revoked=${token.id}`, 303);
  });
}

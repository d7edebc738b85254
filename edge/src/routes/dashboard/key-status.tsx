/** @jsxImportSource hono/jsx */
// The revocation of a key or prober token: the last two cells of its row (whether it is active
// or since when revoked, and the link to revoke it) and the page that confirms it.
import type { Child } from 'hono/jsx';
import type { ApiKeyRow } from '../../storage/api-keys.ts';
import { CsrfField, SubmitButton, Timestamp } from './forms.tsx';

export function KeyStatusCells(props: {
  apiKey: Pick<ApiKeyRow, 'id' | 'name' | 'prefix' | 'revokedAt'>;
  /** Where its revocation is confirmed; the API keys page's by default. */
  revokeHref?: string;
}) {
  const key = props.apiKey;
  return (
    <>
      <td data-label="Status">
        {key.revokedAt === null ? (
          <span class="badge badge-deliverable">active</span>
        ) : (
          <>
            <span class="badge badge-undeliverable">revoked</span>{' '}
            <span class="muted">
              <Timestamp at={key.revokedAt} />
            </span>
          </>
        )}
      </td>
      <td>
        {key.revokedAt === null ? (
          <a
            href={props.revokeHref ?? `/keys/${key.id}/revoke`}
            aria-label={`Revoke ${key.name} (${key.prefix}…)`}
          >
            Revoke…
          </a>
        ) : null}
      </td>
    </>
  );
}

/** The page that asks before a key or token is revoked: what stops working, then revoke or cancel. */
export function RevokeConfirmation(props: {
  /** Whose revocation, as the heading names it (“Revoke “name”?”). */
  name: string;
  action: string;
  button: string;
  cancelHref: string;
  csrfToken: string;
  /** What stops working. */
  children?: Child;
}) {
  return (
    <section class="card" aria-labelledby="revoke-heading">
      <h1 id="revoke-heading">Revoke “{props.name}”?</h1>
      <p>{props.children}</p>
      <form method="post" action={props.action} class="button-row">
        <CsrfField token={props.csrfToken} />
        <SubmitButton kind="danger">{props.button}</SubmitButton>
        <a href={props.cancelHref} class="button button-secondary">
          Cancel
        </a>
      </form>
    </section>
  );
}

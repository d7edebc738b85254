/** @jsxImportSource hono/jsx */
// The last two cells of a key's or prober token's row: whether it is active or since when
// revoked, and the link to revoke it.
import type { ApiKeyRow } from '../../storage/api-keys.ts';
import { Timestamp } from './forms.tsx';

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

/** @jsxImportSource hono/jsx */
// Errors of dashboard pages as HTML pages. The JSON error handler decides the status, the
// code and the (never internal) message, and logs what must be logged; this only renders it.
import type { ErrorBody } from '@rcpt/shared/errors';
import type { Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { handleError } from '../../middleware/error-handler.ts';
import type { DashboardEnv } from '../../middleware/session.ts';
import { csrfTokenFor } from '../../services/accounts/sessions.ts';
import { Layout, renderPage } from './layout.tsx';

const TITLES: Partial<Record<ErrorBody['code'], string>> = {
  CSRF_FAILED: 'The form has expired',
  NOT_FOUND: 'Not found',
  RATE_LIMITED: 'Too many attempts',
  INSUFFICIENT_CREDITS: 'Not enough credits',
  PAYLOAD_TOO_LARGE: 'The file is too large',
  JOB_NOT_COMPLETED: 'Not ready yet',
  FORBIDDEN: 'Not allowed',
  CONFIRMATION_LINK_INVALID: 'This link is not valid',
  CONFIRMATION_LINK_EXPIRED: 'This link has expired',
  CHALLENGE_FAILED: 'Check not passed',
  EMAIL_NOT_CONFIRMED: 'Confirm your email address first',
};

export async function renderErrorPage(error: Error, c: Context<DashboardEnv>): Promise<Response> {
  // The dashboard's env only adds variables to the app's, which is all handleError reads.
  const answer = await handleError(error, c as Context);
  const body = (await answer.json()) as ErrorBody;
  const session = c.get('session');
  // The CSRF middleware may not have run (it may be what failed), so derive the token here.
  const csrfToken = session ? await csrfTokenFor(session.token) : '';
  const retryAfter = answer.headers.get('Retry-After');
  if (retryAfter) c.header('Retry-After', retryAfter);
  return renderPage(
    c,
    <Layout
      title={TITLES[body.code] ?? 'Something went wrong'}
      signedIn={Boolean(session)}
      csrfToken={csrfToken}
    >
      <section class="error-page" aria-labelledby="error-heading">
        <h1 id="error-heading">{TITLES[body.code] ?? 'Something went wrong'}</h1>
        <p>{body.message}</p>
        <p class="muted">
          Error code <code>{body.code}</code> · request <code>{body.requestId}</code>
        </p>
        <p>
          <a href={session ? '/' : '/login'}>{session ? 'Back to the overview' : 'Go to the sign-in page'}</a>
        </p>
      </section>
    </Layout>,
    answer.status as ContentfulStatusCode,
  );
}

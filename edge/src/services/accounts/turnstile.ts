// Cloudflare Turnstile on the sign-up form, when the deployment sets TURNSTILE_SITE_KEY (and
// the TURNSTILE_SECRET_KEY secret). The widget puts its token in the form field
// `cf-turnstile-response`; the server checks it with Siteverify: a POST of `secret`,
// `response` and optionally `remoteip`, answered with JSON whose `success` says whether the
// token is valid (developers.cloudflare.com/turnstile/get-started/server-side-validation/).
// A token is good once and for 300 seconds, so it is checked at once, and never cached.
// Siteverify's answer also names the `hostname` the challenge was solved on and the widget's
// `action`; both are checked, so a token solved on another site (one whose widget uses the same
// site key, or an attacker's page for a leaked key) or for another form of the same site is
// refused, as the documentation advises ("Validate hostname … Validate action").
import type { Config } from '../../config.ts';

/** The widget's script, and the origin the CSP must allow for its script and its frame. */
export const TURNSTILE_ORIGIN = 'https://challenges.cloudflare.com';
export const TURNSTILE_SCRIPT = `${TURNSTILE_ORIGIN}/turnstile/v0/api.js`;
export const TURNSTILE_FIELD = 'cf-turnstile-response';
export { PUBLISHABLE_TURNSTILE_ACTION, SIGNUP_TURNSTILE_ACTION } from './turnstile-actions.ts';

/** Where and for what the token must have been solved: Siteverify's `hostname` and `action`. */
export interface TurnstileExpectation {
  hostname: string;
  action: string;
}

export type TurnstileConfig = Pick<
  Config,
  'TURNSTILE_SITE_KEY' | 'TURNSTILE_SECRET_KEY' | 'TURNSTILE_SITEVERIFY_URL'
>;

/** The site key when Turnstile is on for this deployment, or null (development). */
export function turnstileSiteKey(config: TurnstileConfig): string | null {
  return config.TURNSTILE_SITE_KEY ?? null;
}

/**
 * Whether the form's token passes Siteverify, solved on `expected.hostname` for
 * `expected.action`; true when Turnstile is off. A missing token, a refused one, one solved
 * elsewhere or for another action, or a Siteverify that cannot be reached or answers nonsense all
 * count as a failure: the form is shown again to be tried once more.
 */
export async function turnstilePasses(
  config: TurnstileConfig,
  token: string,
  remoteIp: string | null,
  expected: TurnstileExpectation,
  fetcher: typeof fetch = fetch,
): Promise<boolean> {
  if (!config.TURNSTILE_SITE_KEY) return true;
  if (!token || !config.TURNSTILE_SECRET_KEY) return false;
  const form = new FormData();
  form.set('secret', config.TURNSTILE_SECRET_KEY);
  form.set('response', token);
  if (remoteIp) form.set('remoteip', remoteIp);
  try {
    const response = await fetcher(config.TURNSTILE_SITEVERIFY_URL, { method: 'POST', body: form });
    if (!response.ok) return false;
    const outcome = (await response.json()) as { success?: unknown; hostname?: unknown; action?: unknown };
    return (
      outcome.success === true &&
      typeof outcome.hostname === 'string' &&
      outcome.hostname.toLowerCase() === expected.hostname.toLowerCase() &&
      outcome.action === expected.action
    );
  } catch {
    return false;
  }
}

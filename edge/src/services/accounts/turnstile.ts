// Cloudflare Turnstile on the sign-up form, when the deployment sets TURNSTILE_SITE_KEY (and
// the TURNSTILE_SECRET_KEY secret). The widget puts its token in the form field
// `cf-turnstile-response`; the server checks it with Siteverify: a POST of `secret`,
// `response` and optionally `remoteip`, answered with JSON whose `success` says whether the
// token is valid (developers.cloudflare.com/turnstile/get-started/server-side-validation/).
// A token is good once and for 300 seconds, so it is checked at once, and never cached.
import type { Config } from '../../config.ts';

/** The widget's script, and the origin the CSP must allow for its script and its frame. */
export const TURNSTILE_ORIGIN = 'https://challenges.cloudflare.com';
export const TURNSTILE_SCRIPT = `${TURNSTILE_ORIGIN}/turnstile/v0/api.js`;
export const TURNSTILE_FIELD = 'cf-turnstile-response';

export type TurnstileConfig = Pick<
  Config,
  'TURNSTILE_SITE_KEY' | 'TURNSTILE_SECRET_KEY' | 'TURNSTILE_SITEVERIFY_URL'
>;

/** The site key when Turnstile is on for this deployment, or null (development). */
export function turnstileSiteKey(config: TurnstileConfig): string | null {
  return config.TURNSTILE_SITE_KEY ?? null;
}

/**
 * Whether the form's token passes Siteverify; true when Turnstile is off. A missing token, a
 * refused one, or a Siteverify that cannot be reached or answers nonsense all count as a
 * failure: the form is shown again to be tried once more.
 */
export async function turnstilePasses(
  config: TurnstileConfig,
  token: string,
  remoteIp: string | null,
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
    const outcome = (await response.json()) as { success?: unknown };
    return outcome.success === true;
  } catch {
    return false;
  }
}

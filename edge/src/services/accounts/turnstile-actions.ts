// The Turnstile widgets' actions rcpt accepts tokens of (turnstile.ts checks Siteverify's `action`).
// A file of its own, with no imports: the whole-system tests issue tokens for them too.

/** The `data-action` of the dashboard's sign-up widget. */
export const SIGNUP_TURNSTILE_ACTION = 'signup';

/**
 * The `data-action` a customer's Turnstile widget must have for its tokens to open a publishable
 * key's check (docs/publishable-keys.md): a token of the same site's other widgets (its login
 * form, say) does not.
 */
export const PUBLISHABLE_TURNSTILE_ACTION = 'rcpt-verify';

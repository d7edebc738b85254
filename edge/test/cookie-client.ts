// For the dashboard's workerd tests: a client that keeps cookies the way a browser does and
// calls the Worker's fetch handler, never following redirects (the tests look at them), and
// an inbox that reads the confirmation links the console sender writes.
import { env, exports } from 'cloudflare:workers';
import { configOf } from '../src/config.ts';
import { CONSOLE_LINK_LINE, CONSOLE_RESET_LINE } from '../src/services/accounts/confirmation-sender.ts';
import { confirmationLink } from '../src/services/accounts/email-confirmation.ts';
import { hashPassword } from '../src/services/accounts/passwords.ts';
import { insertUnconfirmedAccount } from '../src/storage/accounts.ts';
import { shardsOf } from '../src/storage/shards.ts';
import { accountIdOfEmail, fetchWithVars } from './fixtures.ts';

/** Every link the console sender wrote in this isolate, by kind and address, oldest first. */
const sentLinks = new Map<string, string[]>();
const LINE_KINDS = [
  ['confirmation', CONSOLE_LINK_LINE],
  ['reset', CONSOLE_RESET_LINE],
] as const;
type LinkKind = (typeof LINE_KINDS)[number][0];
const consoleLog = console.log.bind(console);
console.log = (...items: unknown[]) => {
  const line = items.map(String).join(' ');
  const kind = LINE_KINDS.find(([, prefix]) => line.startsWith(prefix))?.[0];
  const match = kind ? /^.* (\S+@\S+): (\S+)$/.exec(line) : null;
  // Recorded, not printed: the inbox is where the tests read them.
  if (kind && match?.[1] && match[2]) {
    const key = `${kind}:${match[1]}`;
    sentLinks.set(key, [...(sentLinks.get(key) ?? []), match[2]]);
  } else consoleLog(...items);
};

async function linkFor(kind: LinkKind, email: string, after: number): Promise<string> {
  for (let attempt = 0; attempt < 500; attempt++) {
    const links = sentLinks.get(`${kind}:${email.toLowerCase()}`) ?? [];
    if (links.length > after) return links.at(-1) as string;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`no ${kind} link was sent to ${email}`);
}

/**
 * The latest confirmation link sent to `email`, waiting for it: sign-up sends it after
 * answering. `after` skips links already seen (a resend's new link).
 */
export function confirmationLinkFor(email: string, after = 0): Promise<string> {
  return linkFor('confirmation', email, after);
}

/** How many confirmation links were sent to `email` so far. */
export function confirmationLinkCount(email: string): number {
  return sentLinks.get(`confirmation:${email.toLowerCase()}`)?.length ?? 0;
}

/** The latest password reset link sent to `email`, past the first `after`. */
export function resetLinkFor(email: string, after = 0): Promise<string> {
  return linkFor('reset', email, after);
}

/** How many password reset links were sent to `email` so far. */
export function resetLinkCount(email: string): number {
  return sentLinks.get(`reset:${email.toLowerCase()}`)?.length ?? 0;
}

export interface SetCookie {
  name: string;
  value: string;
  attributes: Map<string, string>;
}

export function parseSetCookie(header: string): SetCookie {
  const [pair = '', ...attributes] = header.split(';').map((part) => part.trim());
  const split = pair.indexOf('=');
  return {
    name: pair.slice(0, split),
    value: pair.slice(split + 1),
    attributes: new Map(
      attributes.map((attribute) => {
        const equals = attribute.indexOf('=');
        return equals < 0
          ? [attribute.toLowerCase(), '']
          : [attribute.slice(0, equals).toLowerCase(), attribute.slice(equals + 1)];
      }),
    ),
  };
}

/** The `_csrf` value of the first form in a page. */
export function csrfFieldOf(html: string): string {
  const token = /name="_csrf" value="([^"]+)"/.exec(html)?.[1];
  if (!token) throw new Error('the page has no _csrf field');
  return token;
}

/** A loopback origin, as in development: the console sender writes links for no other host. */
export const DASHBOARD_ORIGIN = 'https://localhost';

/** The password the helpers sign up and sign in with. */
export const DEFAULT_PASSWORD = 'correct horse battery';

export class CookieClient {
  readonly cookies = new Map<string, string>();

  /**
   * `ip`: the client's address; by default one in a /64 of the documentation range of its
   * own, so that per-network limits do not mix tests.
   */
  readonly ip: string;

  /** Worker vars over the test env for every request of this client (a deployment's options). */
  readonly vars: Record<string, string> | null;

  /** Where the dashboard is reached (its scheme and host). */
  readonly origin: string;

  constructor(
    ip = `2001:db8:${randomGroup()}:${randomGroup()}::1`,
    vars: Record<string, string> | null = null,
    origin = DASHBOARD_ORIGIN,
  ) {
    this.ip = ip;
    this.vars = vars;
    this.origin = origin;
  }

  async request(path: string, init: RequestInit = {}): Promise<Response> {
    const headers = new Headers(init.headers);
    headers.set('CF-Connecting-IP', this.ip);
    if (this.cookies.size > 0) {
      headers.set('Cookie', [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; '));
    }
    const request = new Request(`${this.origin}${path}`, { ...init, headers, redirect: 'manual' });
    const response = this.vars
      ? await fetchWithVars(request, this.vars)
      : await exports.default.fetch(request);
    for (const header of response.headers.getSetCookie()) {
      const cookie = parseSetCookie(header);
      const expires = cookie.attributes.get('expires');
      const expired =
        cookie.attributes.get('max-age') === '0' ||
        (expires !== undefined && Date.parse(expires) <= Date.now());
      if (expired) this.cookies.delete(cookie.name);
      else this.cookies.set(cookie.name, cookie.value);
    }
    return response;
  }

  get(path: string): Promise<Response> {
    return this.request(path);
  }

  /** Posts a form: URL-encoded fields, or multipart when given FormData. */
  post(
    path: string,
    form: Record<string, string> | FormData,
    headers?: Record<string, string>,
  ): Promise<Response> {
    const body = form instanceof FormData ? form : new URLSearchParams(form);
    return this.request(path, { method: 'POST', body, headers });
  }

  /** GETs `pagePath` and posts `fields` to `action` with that page's CSRF token. */
  async submit(
    pagePath: string,
    action: string,
    fields: Record<string, string> | FormData,
  ): Promise<Response> {
    const page = await this.get(pagePath);
    const token = csrfFieldOf(await page.text());
    if (fields instanceof FormData) {
      fields.set('_csrf', token);
      return this.post(action, fields);
    }
    return this.post(action, { _csrf: token, ...fields });
  }

  /** The sign-up form alone: 303 to /?welcome=1 for a new email, to /login?account-exists=1 for a taken one. */
  async register(email: string, password = DEFAULT_PASSWORD): Promise<Response> {
    return this.submit('/signup', '/signup', { email, password });
  }

  /**
   * Sign-up as a person does it: the form, which signs the new account in, then the emailed
   * confirmation link (the account gets its free credits). The answer is the sign-up's.
   */
  async signUp(email: string, password = DEFAULT_PASSWORD): Promise<Response> {
    const sentBefore = confirmationLinkCount(email);
    const registered = await this.register(email, password);
    if (registered.status !== 303) return registered;
    const link = await confirmationLinkFor(email, sentBefore);
    const confirmed = await this.get(new URL(link).pathname + new URL(link).search);
    if (confirmed.status !== 303) return confirmed;
    return registered;
  }

  async logIn(email: string, password: string): Promise<Response> {
    return this.submit('/login', '/login', { email, password });
  }
}

function randomGroup(): string {
  return crypto.randomUUID().slice(0, 4);
}

export function uniqueEmail(label: string): string {
  return `${label}-${crypto.randomUUID().slice(0, 8)}@example.com`;
}

/** A new account, signed up and signed in through the dashboard's forms, and its id. */
export async function signedInAccount(label: string): Promise<{ client: CookieClient; accountId: string }> {
  const client = new CookieClient();
  const email = uniqueEmail(label);
  const signedUp = await client.signUp(email);
  if (signedUp.status !== 303) throw new Error(`sign-up answered ${signedUp.status}`);
  const accountId = await accountIdOfEmail(email);
  if (!accountId) throw new Error(`no account for ${email}`);
  return { client, accountId };
}

/**
 * A new account made unconfirmed in `shard`, as a sign-up placed there makes it (a sign-up goes
 * where `shardForNewAccount` places it, which a test cannot choose), its email confirmed through its signed link by
 * `client` and signed in through the login form.
 */
export async function signedInAccountIn(
  shard: number,
  label: string,
  options: { email?: string; client?: CookieClient } = {},
): Promise<{ client: CookieClient; accountId: string; email: string; confirmed: Response }> {
  const email = options.email ?? uniqueEmail(label);
  const client = options.client ?? new CookieClient();
  const accountId = crypto.randomUUID();
  const account = {
    id: accountId,
    email,
    passwordHash: await hashPassword(DEFAULT_PASSWORD),
    now: Date.now(),
  };
  if (!(await insertUnconfirmedAccount(shardsOf(env).db(shard), account)))
    throw new Error(`${email} is taken`);
  const loggedIn = await client.logIn(email, DEFAULT_PASSWORD);
  if (loggedIn.status !== 303) throw new Error(`sign-in answered ${loggedIn.status}`);
  const { link } = await confirmationLink(configOf(env).SECRETS_KEY, {
    accountId,
    email,
    origin: client.origin,
    now: Date.now(),
  });
  const confirmed = await client.get(new URL(link).pathname + new URL(link).search);
  return { client, accountId, email, confirmed };
}

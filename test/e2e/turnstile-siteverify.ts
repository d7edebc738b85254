// Cloudflare Turnstile's Siteverify, as its documentation describes it
// (developers.cloudflare.com/turnstile/get-started/server-side-validation/): a POST of the
// form fields `secret`, `response` and optionally `remoteip`, always answered with JSON
// `{ success, "error-codes" }`. A token is valid once: "A replayed token will be rejected with
// the `timeout-or-duplicate` error code"; an unknown one is `invalid-input-response`, a wrong
// secret `invalid-input-secret`, no token `missing-input-response`. The tokens it accepts are
// the ones `issueToken` handed out, as Turnstile's widget hands them to a page; a valid token's
// answer names the `hostname` it was solved on and the widget's `action`, as Siteverify's does.
import { createServer, type Server } from 'node:http';

export interface FakeSiteverify {
  url: string;
  /**
   * A new token, as the widget would put in `cf-turnstile-response` after a challenge solved on a
   * page of `solved.hostname` by a widget with `data-action` `solved.action`.
   */
  issueToken(solved: { hostname: string; action: string }): string;
  /** Every validation asked, in order. */
  calls: { secret: string; response: string; remoteip: string | null; success: boolean }[];
  close(): Promise<void>;
}

export async function startFakeSiteverify(secret: string): Promise<FakeSiteverify> {
  const issued = new Map<string, { hostname: string; action: string }>();
  const redeemed = new Set<string>();
  const calls: FakeSiteverify['calls'] = [];
  let counter = 0;
  const server: Server = createServer(async (request, response) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    // The form as the caller encoded it (multipart or URL-encoded), read by the platform's own parser.
    const form = await new Response(Buffer.concat(chunks), {
      headers: { 'content-type': request.headers['content-type'] ?? '' },
    }).formData();
    const field = (name: string) => {
      const value = form.get(name);
      return typeof value === 'string' ? value : null;
    };
    const token = field('response') ?? '';
    const errorCodes =
      field('secret') !== secret
        ? ['invalid-input-secret']
        : token === ''
          ? ['missing-input-response']
          : redeemed.has(token)
            ? ['timeout-or-duplicate']
            : issued.has(token)
              ? []
              : ['invalid-input-response'];
    const success = errorCodes.length === 0;
    if (success) redeemed.add(token);
    calls.push({ secret: field('secret') ?? '', response: token, remoteip: field('remoteip'), success });
    response.writeHead(200, { 'content-type': 'application/json' });
    const solved = success ? issued.get(token) : undefined;
    response.end(
      JSON.stringify({
        success,
        'error-codes': errorCodes,
        ...(solved ? { ...solved, challenge_ts: new Date().toISOString(), cdata: '' } : {}),
      }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (!address || typeof address === 'string') throw new Error('no address');
  return {
    url: `http://127.0.0.1:${address.port}/turnstile/v0/siteverify`,
    issueToken(solved) {
      const token = `turnstile-token-${++counter}-${crypto.randomUUID()}`;
      issued.set(token, solved);
      return token;
    },
    calls,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

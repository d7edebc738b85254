// A webhook delivery sent to the very address that was checked (docs/operations.md, "Webhook targets").
//
// Checking a host name and then calling `fetch(url)` leaves a DNS rebinding window: the check
// resolves the name with rcpt's resolver (DNS over HTTPS), `fetch` resolves it again with the
// platform's, and a name whose owner answers a public address to the first and 127.0.0.1 (or a
// cloud metadata address) to the second gets rcpt to post to a private address. Workers' `fetch`
// cannot be told which address to use: `cf.resolveOverride` only works for names in the Worker's
// own zone (https://developers.cloudflare.com/workers/runtime-apis/request/#the-cf-property-requestinitcfproperties),
// and a `fetch` to the address itself sends that address as the TLS server name, so no public
// certificate matches. So a delivery resolves the host once, refuses it if any address is private
// or reserved (RFC 6890), and opens a TCP connection to the first checked address that answers
// with Workers' `connect()` (https://developers.cloudflare.com/workers/runtime-apis/tcp-sockets/);
// for https it starts TLS on it with `startTls({ expectedServerHostname })`, so the certificate is
// checked against the URL's host name (and sent as SNI) while the bytes go to the checked address.
// The request is HTTP/1.1 written by hand (RFC 9112): one POST with Content-Length and
// `Connection: close`; the status line is all rcpt reads of the answer, and a redirect is not
// followed (a 3xx is a failed attempt, as before).
//
// Limits, said plainly: Cloudflare documents outbound sockets as unable to reach some addresses
// (its own IP ranges among them); an endpoint only reachable there fails its attempts and shows
// the connection error in its delivery log, rather than being called through a path whose
// address rcpt did not check.
import { connect } from 'cloudflare:sockets';

/** How a delivery finds and judges the addresses of its target. */
export interface TargetPolicy {
  /** Every address of `host` (an IP literal resolves to itself), or why it has none. */
  resolve(host: string): Promise<string[] | { failure: string }>;
  /** Why an address of `host` must not be called (a private or reserved range), or null. */
  refuse(address: string, host: string): string | null;
}

export type PinnedOutcome = { status: number; address: string } | { refusal: string } | { error: string };

const MAX_STATUS_LINE_BYTES = 8 * 1024;

/** The host of a URL as DNS and the sockets API name it: IPv6 literals without brackets. */
export function hostOf(url: URL): string {
  return url.hostname.replace(/^\[|\]$/g, '');
}

/**
 * POSTs `body` to `url`, connected to an address `policy` resolved and accepted in this call, and
 * to no other: the name is never resolved again between the check and the connection.
 */
export async function postToCheckedTarget(
  url: URL,
  request: { headers: Record<string, string>; body: string; timeoutMs: number },
  policy: TargetPolicy,
): Promise<PinnedOutcome> {
  const host = hostOf(url);
  const addresses = await policy.resolve(host);
  if (!Array.isArray(addresses)) return { refusal: addresses.failure };
  if (addresses.length === 0) return { refusal: `${host} has no address` };
  for (const address of addresses) {
    const why = policy.refuse(address, host);
    if (why !== null) return { refusal: why };
  }
  let lastError = 'no address answered';
  for (const address of addresses) {
    try {
      return { status: await postTo(url, address, request), address };
    } catch (cause) {
      lastError = `${address}: ${cause instanceof Error ? cause.message : String(cause)}`.slice(0, 200);
    }
  }
  return { error: lastError };
}

/** One POST over a connection to `address`, TLS named for the URL's host; the answer's status. */
export async function postTo(
  url: URL,
  address: string,
  request: { headers: Record<string, string>; body: string; timeoutMs: number },
): Promise<number> {
  const https = url.protocol === 'https:';
  const port = Number(url.port || (https ? 443 : 80));
  const plain = connect(
    { hostname: address, port },
    { secureTransport: https ? 'starttls' : 'off', allowHalfOpen: false },
  );
  const socket = https ? plain.startTls({ expectedServerHostname: url.hostname }) : plain;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`no answer within ${request.timeoutMs} ms`)),
      request.timeoutMs,
    );
  });
  try {
    return await Promise.race([exchange(socket, url, request), timeout]);
  } finally {
    clearTimeout(timer);
    await socket.close().catch(() => undefined);
  }
}

async function exchange(
  socket: Socket,
  url: URL,
  request: { headers: Record<string, string>; body: string },
): Promise<number> {
  await socket.opened;
  const body = new TextEncoder().encode(request.body);
  const lines = [`POST ${url.pathname}${url.search} HTTP/1.1`, `Host: ${url.host}`];
  for (const [name, value] of Object.entries(request.headers)) {
    // Header values are rcpt's own (ids, signatures, a fixed user agent); never a line break.
    if (/[\r\n]/.test(name) || /[\r\n]/.test(value)) throw new Error(`header ${name} holds a line break`);
    lines.push(`${name}: ${value}`);
  }
  lines.push(`Content-Length: ${body.byteLength}`, 'Connection: close', '', '');
  const writer = socket.writable.getWriter();
  await writer.write(new TextEncoder().encode(lines.join('\r\n')));
  await writer.write(body);
  writer.releaseLock();
  return readStatus(socket.readable);
}

/** The status code of an HTTP/1.x answer (RFC 9112 §4: `HTTP/1.1 200 OK`). */
async function readStatus(readable: ReadableStream<Uint8Array>): Promise<number> {
  const reader = readable.getReader();
  const decoder = new TextDecoder();
  let head = '';
  try {
    while (!head.includes('\r\n')) {
      const { done, value } = await reader.read();
      if (done) break;
      head += decoder.decode(value, { stream: true });
      if (head.length > MAX_STATUS_LINE_BYTES) break;
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
  const status = /^HTTP\/1\.[01] (\d{3})[ \r]/.exec(head);
  if (!status?.[1]) throw new Error('the answer is not HTTP/1.1');
  return Number(status[1]);
}

// The hub benchmark's Worker: the edge's ProberHub, unchanged, behind two routes.
// - /connect: a prober's WebSocket, as the edge's connect route passes it on once the token
//   is checked (here the bench's one seeded token);
// - /drive?count=N&concurrency=C&hosts=H&addresses=A&accounts=K: N single-lane probe RPCs into
//   one hub, C at a time, spread over H MX hosts and K accounts (each account's fair share is
//   weighed on every start), each asking A addresses; answers how long they took. One RPC, one probe message out, one
//   result message in: the whole of the hub's work for a single call.
import type { ProbeRequest } from '@rcpt/shared/contract/prober';
import { ProberHub as HubObject, PROBER_TOKEN_ID_HEADER } from '../../edge/src/objects/prober-hub.ts';

/** The edge's hub with no batch behind it: the bench drives single calls only. */
export class ProberHub extends HubObject<never> {
  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env, {
      detectTenant: () => Promise.reject(new Error('the hub bench sends no batch work')),
      settle: () => {},
    });
  }
}

interface BenchEnv {
  PROBER_HUB: Env['PROBER_HUB'];
  /** The id of the live prober token the bench seeded in this Worker's D1. */
  BENCH_TOKEN_ID: string;
}

export default {
  async fetch(request: Request, env: BenchEnv): Promise<Response> {
    const url = new URL(request.url);
    const hub = env.PROBER_HUB.get(env.PROBER_HUB.idFromName('bench'));
    if (url.pathname === '/connect') {
      const headers = new Headers(request.headers);
      headers.set(PROBER_TOKEN_ID_HEADER, env.BENCH_TOKEN_ID);
      return hub.fetch(new Request(request, { headers }));
    }
    if (url.pathname === '/status') return Response.json(await hub.status());
    if (url.pathname !== '/drive') return new Response('not found', { status: 404 });

    const count = Number(url.searchParams.get('count') ?? 1000);
    const concurrency = Number(url.searchParams.get('concurrency') ?? 1);
    const hosts = Number(url.searchParams.get('hosts') ?? 1);
    const addresses = Number(url.searchParams.get('addresses') ?? 1);
    const accounts = Number(url.searchParams.get('accounts') ?? 1);
    let next = 0;
    let answered = 0;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < count) {
          const index = next++;
          const outcome = await hub.probe(
            probeOf(index % hosts, index, addresses),
            10_000,
            `account-${index % accounts}`,
          );
          if (outcome.kind === 'report') answered++;
        }
      }),
    );
    return Response.json({ count, answered, seconds: (performance.now() - started) / 1000 });
  },
};

/** A probe of `addresses` addresses of one domain on MX host number `host`. */
function probeOf(host: number, index: number, addresses: number): ProbeRequest {
  const domain = `company-${host}.test`;
  return {
    emails: Array.from({ length: addresses }, (_, offset) => `user${index}-${offset}@${domain}`),
    domain,
    mx: [{ host: `mx.${domain}`, preference: 10, ips: ['192.0.2.1'] }],
    mailFrom: 'probe@verify.rcpt.dev',
    helo: 'verify.rcpt.dev',
    timeoutMs: 10_000,
    transcript: false,
  };
}

// Rerouting around a block list, through the real edge under wrangler and a real prober with
// two egresses (SOURCE_ADDRESSES), on the defended company world (Postfix defaults, 20
// sessions per client, 20–80 ms RTT, 200 domains on 4 MX hosts, 40 % unknown):
// - 10,000 addresses with both egresses clean (127.0.0.1, 127.0.0.3): upload → completed;
// - the same list with one egress (127.0.0.2) listed on Spamhaus's zone at half the MX hosts
//   (Postfix's reject_rbl_client reply at every RCPT): upload → completed and percent right;
// - how long after a refusal's reply the operator's view (GET /internal/fleet) shows the block.
import { DEV_ACCOUNT_ID } from '../scripts/stack/local-stack.ts';
import { createApiKeys, createOperatorToken } from '../scripts/stack/operator.ts';
import { DOMAINS, INTERNET_ROUND_TRIP, startWorld } from '../test/world/index.ts';
import { runCompanyList, stopRun } from './company-run.ts';
import type { Figure } from './run.ts';

const LISTED = '127.0.0.2';
const world = await startWorld({
  companies: { domains: 200, hosts: 4, blocklisted: { clients: [LISTED], hosts: [1, 3] } },
  roundTripMs: INTERNET_ROUND_TRIP,
});
const figures: Figure[] = [];

const run = (sourceAddresses: string) =>
  runCompanyList(world, { proberEnv: { SOURCE_ADDRESSES: sourceAddresses } });

try {
  const clean = await run('127.0.0.1,127.0.0.3');
  await stopRun(clean);
  const blocked = await run(`127.0.0.1,${LISTED}`);
  const refusals = world.companyMx.reduce((sum, mx) => sum + mx.stats().blocklisted, 0);

  // A new block in the operator's view: a single call to a host that refuses every client.
  const token = await createOperatorToken(blocked.stack.d1, { name: 'bench operator' });
  const [key] = await createApiKeys(blocked.stack.d1, { accountId: DEV_ACCOUNT_ID, count: 1, mode: 'live' });
  const answered = await fetch(`${blocked.stack.baseUrl}/api/v1/verify`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': key ?? '' },
    body: JSON.stringify({ email: `alice@${DOMAINS.rbl}`, fresh: true }),
  });
  const answeredAt = performance.now();
  if (answered.status !== 200) throw new Error(`verify answered ${answered.status}`);
  let shownMs = Number.NaN;
  while (performance.now() - answeredAt < 30_000) {
    const response = await fetch(`${blocked.stack.baseUrl}/internal/fleet`, {
      headers: { authorization: `Bearer ${token.secret}` },
    });
    if ((await response.text()).includes('mx.rbl.test')) {
      shownMs = performance.now() - answeredAt;
      break;
    }
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  await stopRun(blocked);

  figures.push(
    { name: '10k, two clean egresses: upload → completed', value: clean.seconds, unit: 's' },
    { name: '10k, two clean egresses: right', value: 100 * clean.right, unit: '%' },
    {
      name: '10k, one of two egresses listed at half the MX hosts: upload → completed',
      value: blocked.seconds,
      unit: 's',
    },
    {
      name: '10k, one egress listed: time against two clean egresses',
      value: blocked.seconds / clean.seconds,
      unit: '×',
      target: '≤ 1.5',
    },
    { name: '10k, one egress listed: right', value: 100 * blocked.right, unit: '%', target: '≥ 99.5' },
    { name: '10k, one egress listed: block-list refusals met', value: refusals, unit: '' },
    {
      name: 'a new block in the operator view, after the reply that caused it',
      value: shownMs,
      unit: 'ms',
      target: '≤ 5,000',
    },
  );
} finally {
  await world.close();
}
console.log(JSON.stringify(figures));

// `npm run world`: the fake mail world on fixed ports, for trying the prober or the edge by hand.
// SMTP_PORT (default 2525), DOH_PORT (8053) and DNS_PORT (8054) choose the ports; ROUND_TRIP_MS
// (default 0) puts that round-trip time between the clients and every MX host, as the internet
// does (a range as MIN-MAX, e.g. 20-80); Ctrl-C stops it.
import { EXPECTED_VERDICTS } from './expected-verdicts.ts';
import { type RoundTrip, startWorld } from './index.ts';

function portFromEnv(variable: string, fallback: number): number {
  const raw = process.env[variable];
  if (raw === undefined || raw === '') return fallback;
  const port = Number(raw);
  if (!Number.isInteger(port) || port < 1 || port > 65_535) {
    console.error(`world: ${variable} must be a port number, not ${JSON.stringify(raw)}`);
    process.exit(2);
  }
  return port;
}

function roundTripFromEnv(variable: string): RoundTrip {
  const raw = process.env[variable]?.trim() ?? '';
  const match = /^(\d{1,5})(?:-(\d{1,5}))?$/.exec(raw);
  if (raw === '') return 0;
  const min = Number(match?.[1]);
  const max = match?.[2] === undefined ? min : Number(match[2]);
  if (!match || max < min) {
    console.error(
      `world: ${variable} must be milliseconds (60) or a range (20-80), not ${JSON.stringify(raw)}`,
    );
    process.exit(2);
  }
  return min === max ? min : { min, max };
}

const roundTripMs = roundTripFromEnv('ROUND_TRIP_MS');
const world = await startWorld({
  smtpPort: portFromEnv('SMTP_PORT', 2525),
  dohPort: portFromEnv('DOH_PORT', 8053),
  dnsPort: portFromEnv('DNS_PORT', 8054),
  roundTripMs,
}).catch((error: unknown) => {
  console.error(`world: could not start: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});

const addressWidth = Math.max(...EXPECTED_VERDICTS.map((row) => row.address.length));
const verdictWidth = Math.max(...EXPECTED_VERDICTS.map((row) => `${row.status} / ${row.subStatus}`.length));
const shownRoundTrip =
  typeof roundTripMs === 'number' ? `${roundTripMs}` : `${roundTripMs.min}–${roundTripMs.max}`;
console.log(`DOH_URL=${world.dohUrl}
DNS_SERVERS=${world.dnsServer}
SMTP_PORT=${world.smtpPort}
ALLOW_PRIVATE_TARGETS=true
Round trip to every MX host: ${shownRoundTrip} ms

Try the prober by hand:
  DNS_SERVERS=${world.dnsServer} SMTP_PORT=${world.smtpPort} ALLOW_PRIVATE_TARGETS=true npm run prober -- verify alice@accept.test --transcript

Mailboxes on the servers that check them: ${world.mailboxes.join(', ')}, user…

${'address'.padEnd(addressWidth)}  ${'expected verdict'.padEnd(verdictWidth)}  because`);
for (const row of EXPECTED_VERDICTS) {
  const verdict = `${row.status} / ${row.subStatus}`;
  console.log(`${row.address.padEnd(addressWidth)}  ${verdict.padEnd(verdictWidth)}  ${row.because}`);
}
console.log('\nFake MX servers (all on the SMTP port):');
const byAddress = Object.values(world.mx).sort((a, b) => a.ip.localeCompare(b.ip, 'en', { numeric: true }));
for (const mx of byAddress) console.log(`  ${mx.name.padEnd(18)} ${mx.ip}`);
console.log('\nCtrl-C stops the world.');

let stopping = false;
async function stop(): Promise<void> {
  if (stopping) return;
  stopping = true;
  await world.close();
  process.exit(0);
}
process.on('SIGINT', stop);
process.on('SIGTERM', stop);

// `npm start`: the whole system locally — edge under `wrangler dev` with local D1, Durable
// Objects and Queues, a seeded development account, and one prober — then a ready curl.
// `npm run demo` (`--demo`) also starts the fake mail world and points DNS and SMTP at it.
import { isWellFormedSecret } from '@rcpt/shared/secret-tokens';
import { startLocalStack } from './stack/local-stack.ts';

const demo = process.argv.includes('--demo');
const env = process.env;

function fail(message: string): never {
  console.error(`rcpt: ${message}`);
  process.exit(2);
}

if (env.RCPT_DEV_API_KEY && !isWellFormedSecret(env.RCPT_DEV_API_KEY)) {
  fail('RCPT_DEV_API_KEY must look like rk_live_… or rk_test_… followed by 43 base64url characters');
}
const devCredits = Number(env.RCPT_DEV_CREDITS ?? 100);
if (!Number.isInteger(devCredits) || devCredits < 0) fail('RCPT_DEV_CREDITS must be a whole number ≥ 0');
const port = Number(env.PORT ?? 8787);
if (!Number.isInteger(port) || port < 1 || port > 65535) fail('PORT must be a port number');

// The mail world only exists for the demo and the tests; it is loaded only then.
const world = demo ? await (await import('../test/world/index.ts')).startWorld() : null;

/** Settings both halves use; unset ones keep wrangler.toml's (public DoH). */
const shared: Record<string, string> = {};
for (const name of ['DOH_URL', 'ALLOW_PRIVATE_TARGETS', 'MAIL_FROM', 'HELO_NAME', 'VERIFY_TIMEOUT_MS']) {
  const value = env[name];
  if (value) shared[name] = value;
}
/** The MX port is the prober's own setting (default 25): only the prober speaks SMTP. */
let smtpPort = env.SMTP_PORT;
if (world) {
  shared.DOH_URL = world.dohUrl;
  shared.ALLOW_PRIVATE_TARGETS = 'true';
  smtpPort = String(world.smtpPort);
}

console.log(
  demo
    ? 'rcpt: starting the demo (edge, prober and the fake mail world)…'
    : 'rcpt: starting the edge and a prober…',
);
const stack = await startLocalStack({
  host: env.HOST ?? '127.0.0.1',
  port,
  vars: shared,
  proberEnv: {
    ...(smtpPort ? { SMTP_PORT: smtpPort } : {}),
    ...(shared.ALLOW_PRIVATE_TARGETS ? { ALLOW_PRIVATE_TARGETS: shared.ALLOW_PRIVATE_TARGETS } : {}),
    ...(shared.HELO_NAME ? { HELO_NAME: shared.HELO_NAME } : {}),
  },
  devCredits,
  ...(env.RCPT_DEV_API_KEY ? { devApiKey: env.RCPT_DEV_API_KEY } : {}),
  onLog: (source, line) => console.log(`[${source}] ${line}`),
}).catch((error: unknown) => {
  console.error(`rcpt: could not start: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});

const sample = world ? `alice@${world.domains.accept}` : 'alice@example.com';
console.log(`
rcpt is running.

  Dashboard  ${stack.baseUrl}/   (sign up at ${stack.baseUrl}/signup: 100 free credits)
  API        ${stack.baseUrl}/api/v1/verify
  Reference  ${stack.baseUrl}/docs   (OpenAPI: ${stack.baseUrl}/openapi.json)
  API key    ${stack.apiKey}
  DNS        ${shared.DOH_URL ?? 'public DNS over HTTPS (wrangler.toml)'}

Try it:

  curl -s ${stack.baseUrl}/api/v1/verify \\
    -H 'X-API-Key: ${stack.apiKey}' \\
    -H 'Content-Type: application/json' \\
    -d '{"email":"${sample}"}'
`);
if (world) {
  console.log('Addresses of the fake mail world and the verdict each gets:\n');
  for (const [address, verdict] of demoAddresses(world.domains))
    console.log(`  ${address.padEnd(34)} ${verdict}`);
  console.log('');
}
console.log('Ctrl-C stops everything.');

let stopping = false;
async function shutdown(): Promise<void> {
  if (stopping) process.exit(130);
  stopping = true;
  console.log('\nrcpt: stopping…');
  await stack.close();
  await world?.close();
  process.exit(0);
}
process.on('SIGINT', shutdown);
process.on('SIGTERM', shutdown);
stack.edge.once('exit', (code) => {
  if (!stopping) {
    console.error(`rcpt: the edge exited (${code}); stopping.`);
    void shutdown();
  }
});

function demoAddresses(domains: Record<string, string>): [string, string][] {
  return [
    [`alice@${domains.accept}`, 'deliverable / accepted_email'],
    [`nobody@${domains.accept}`, 'undeliverable / mailbox_not_found'],
    [`info@${domains.accept}`, 'risky / role_based'],
    [`anyone@${domains.catchall}`, 'risky / catch_all'],
    [`alice@${domains.greylist}`, 'unknown / greylisted'],
    [`alice@${domains.rbl}`, 'unknown / antispam_blocked'],
    [`alice@${domains.full}`, 'risky / mailbox_full'],
    ['alice@nullmx.test', 'undeliverable / does_not_accept_mail'],
    ['alice@nonexistent.test', 'undeliverable / invalid_domain'],
    ['alice@gmial.com', 'undeliverable / possible_typo'],
    ['alice@mailinator.com', 'risky / disposable'],
  ];
}

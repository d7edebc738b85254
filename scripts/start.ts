// `npm start`: the whole system locally — edge under `wrangler dev` with local D1, Durable
// Objects and Queues, a seeded development account, and one prober — then a ready curl.
// `npm run demo` (`--demo`) also starts the fake mail world and points DNS and SMTP at it.
import { createServer } from 'node:net';
import { isWellFormedSecret } from '@rcpt/shared/secret-tokens';
import { CONSOLE_LINK_LINE } from '../edge/src/services/accounts/confirmation-sender.ts';
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
const host = env.HOST ?? '127.0.0.1';
// wrangler dev on a taken port dies with "Address already in use" while the prober goes on
// retrying whatever server holds the port (an earlier rcpt would even answer for this one).
if (await portTaken(host, port)) {
  fail(
    `port ${port} on ${host} is already in use (an rcpt still running, or another server). ` +
      `Stop it, or start on another port: PORT=${port + 1} npm ${demo ? 'run demo' : 'start'}`,
  );
}

// The mail world and the fake Stripe only exist for the demo and the tests; loaded only then.
const world = demo ? await (await import('../test/world/index.ts')).startWorld() : null;
const fakeStripe = demo ? await import('../test/world/fake-stripe.ts') : null;
const stripe = fakeStripe
  ? await fakeStripe.startFakeStripe({ webhookUrl: `http://${host}:${port}/stripe/webhook` })
  : null;
// The demo's sending services post outcomes; SES's come through a fake SNS the edge trusts.
const senders = demo ? await import('../test/world/outcome-senders.ts') : null;
const sns = senders ? await senders.startFakeSns() : null;

/** Settings both halves use; unset ones keep wrangler.toml's (public DoH). */
const shared: Record<string, string> = {};
for (const name of [
  'DOH_URL',
  'ALLOW_PRIVATE_TARGETS',
  'MAIL_FROM',
  'HELO_NAME',
  'VERIFY_TIMEOUT_MS',
  'PROBER_REGIONS',
  'PROBER_REGION',
]) {
  const value = env[name];
  if (value) shared[name] = value;
}
/** The MX port is the prober's own setting (default 25): only the prober speaks SMTP. */
let smtpPort = env.SMTP_PORT;
/** The prober's egresses and their pace (docs/operations.md, "Egress addresses"), passed on as set. */
const egressSettings: Record<string, string> = {};
for (const name of ['SOURCE_ADDRESSES', 'SOCKS5_PROXIES', 'EGRESS_HOURLY_BUDGET', 'EGRESS_WARM_UP']) {
  const value = env[name];
  if (value) egressSettings[name] = value;
}
if (world) {
  shared.DOH_URL = world.dohUrl;
  shared.ALLOW_PRIVATE_TARGETS = 'true';
  smtpPort = String(world.smtpPort);
}
/** The edge's own settings the demo adds: its fake Stripe's keys, its fake SNS's origin. */
const edgeVars: Record<string, string> = {
  ...shared,
  ...(stripe && fakeStripe ? fakeStripe.stripeEdgeVars(stripe) : {}),
  ...(sns ? { SNS_TEST_ORIGIN: sns.origin } : {}),
};

console.log(
  demo
    ? 'rcpt: starting the demo (edge, prober and the fake mail world)…'
    : 'rcpt: starting the edge and a prober…',
);
const stack = await startLocalStack({
  host,
  port,
  // Its own folder lets a second stack (or a test) run beside the usual one.
  ...(env.RCPT_STATE_DIR ? { persistTo: env.RCPT_STATE_DIR } : {}),
  vars: edgeVars,
  proberEnv: {
    ...(smtpPort ? { SMTP_PORT: smtpPort } : {}),
    ...(shared.ALLOW_PRIVATE_TARGETS ? { ALLOW_PRIVATE_TARGETS: shared.ALLOW_PRIVATE_TARGETS } : {}),
    ...(shared.HELO_NAME ? { HELO_NAME: shared.HELO_NAME } : {}),
    ...egressSettings,
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

  Dashboard  ${stack.baseUrl}/   (sign up at ${stack.baseUrl}/signup: its confirmation link is
             printed below as "[edge] ${CONSOLE_LINK_LINE} …"; following it grants 100 free credits)
  API        ${stack.baseUrl}/api/v1/verify
  Reference  ${stack.baseUrl}/docs   (OpenAPI: ${stack.baseUrl}/openapi.json)
  API key    ${stack.apiKey}
  Account    ${stack.accountId}   (more credits: npm run admin -- credits grant --account ${stack.accountId} --amount 1000)
  DNS        ${shared.DOH_URL ?? 'public DNS over HTTPS (wrangler.toml)'}
  Payments   ${stripe ? `the fake Stripe at ${stripe.url} ("Buy credits": card 4242 4242 4242 4242 pays)` : 'off (no Stripe keys): the Credits page says so'}

Try it:

  curl -s ${stack.baseUrl}/api/v1/verify \\
    -H 'X-API-Key: ${stack.apiKey}' \\
    -H 'Content-Type: application/json' \\
    -d '{"email":"${sample}"}'
`);
if (world) {
  console.log('Addresses of the fake mail world and the verdict each gets:\n');
  const { EXPECTED_VERDICTS } = await import('../test/world/expected-verdicts.ts');
  for (const { address, status, subStatus } of EXPECTED_VERDICTS)
    console.log(`  ${address.padEnd(34)} ${status} / ${subStatus}`);
  console.log('');
}
if (sns) {
  // What happened to sends to a verified list, posted by the fake sending services, and the
  // accuracy it makes (docs/verdicts.md, "Outcomes"); the Accuracy page shows the same.
  const { storyLines, tellOutcomesStory } = await import('../test/world/outcomes-story.ts');
  await tellOutcomesStory(stack.baseUrl, stack.apiKey, sns).then(
    (story) => console.log(`${storyLines(story).join('\n')}\n\n  Dashboard: ${stack.baseUrl}/accuracy\n`),
    (error: unknown) =>
      console.error(
        `rcpt: the outcomes story failed: ${error instanceof Error ? error.message : String(error)}`,
      ),
  );
}
console.log('Ctrl-C stops everything.');

let stopping = false;
async function shutdown(): Promise<void> {
  if (stopping) process.exit(130);
  stopping = true;
  console.log('\nrcpt: stopping…');
  await stack.close();
  await world?.close();
  await stripe?.close();
  await sns?.close();
  process.exit(process.exitCode ?? 0);
}
process.on('SIGINT', shutdown);
process.on('SIGTERM', shutdown);
// Without the edge nothing can answer: stop everything.
stack.edge.once('exit', (code, signal) => {
  if (!stopping) {
    console.error(`rcpt: the edge exited (${signal ?? code}); stopping.`);
    process.exitCode = 1;
    void shutdown();
  }
});
// Without a prober the edge still answers (syntax, DNS, lists; batch work waits for its
// schedule, or another region serves it): say so, and start the prober again after a pause.
const PROBER_RESTART_MS = 5_000;
function watchProber(): void {
  stack.prober?.once('exit', (code, signal) => {
    if (stopping) return;
    console.error(
      `rcpt: the prober exited (${signal ?? code}); the edge keeps serving. Starting a prober again in ${PROBER_RESTART_MS / 1000} s.`,
    );
    setTimeout(startProberAgain, PROBER_RESTART_MS);
  });
}
function startProberAgain(): void {
  if (stopping) return;
  stack.startProber().then(
    () => {
      console.log('rcpt: a prober is linked again.');
      watchProber();
    },
    (error: unknown) => {
      console.error(
        `rcpt: the prober did not start (${error instanceof Error ? error.message : String(error)}); trying again in ${PROBER_RESTART_MS / 1000} s.`,
      );
      setTimeout(startProberAgain, PROBER_RESTART_MS);
    },
  );
}
watchProber();

/** Whether something already listens on host:port (a listen attempt fails with EADDRINUSE). */
function portTaken(address: string, portNumber: number): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', (error: NodeJS.ErrnoException) =>
      error.code === 'EADDRINUSE' ? resolve(true) : reject(error),
    );
    probe.listen(portNumber, address, () => probe.close(() => resolve(false)));
  });
}

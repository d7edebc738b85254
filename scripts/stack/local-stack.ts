// The whole system on one machine: `wrangler dev` (local D1, Durable Objects, Queues) with
// migrations applied, a seeded development account, and one prober linked to it.
// Used by `npm start`, `npm run demo`, the end-to-end tests and the benchmarks.
import { ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { regionsOfVars } from '@rcpt/shared/prober-regions';
import { hashSecret } from '@rcpt/shared/secret-tokens';
import { applyMigrations, type D1Target, executeSql } from './d1.ts';
import {
  accountCreation,
  accountExists,
  apiKeyCreation,
  apiKeyRegistration,
  createAccount,
  createApiKey,
  createProberToken,
  isLiveCredential,
  proberTokenCreation,
  proberTokenRegion,
} from './operator.ts';
import { REPO_ROOT, spawnWrangler } from './wrangler-cli.ts';

/** The development account every local stack seeds. */
export const DEV_ACCOUNT_ID = '00000000-0000-4000-8000-000000000001';

export interface StackOptions {
  host?: string;
  port?: number; // 0 or absent: a free port
  persistTo?: string; // default .wrangler/state, as plain `wrangler dev`
  /**
   * A folder holding only a database migrated by `applyMigrations` (d1.ts), copied into a new, empty
   * `persistTo` instead of applying the migrations there: one migration run serves every
   * stack a test run starts.
   */
  migratedFrom?: string;
  /** Worker vars (DOH_URL, ALLOW_PRIVATE_TARGETS, MAIL_FROM, HELO_NAME, VERIFY_TIMEOUT_MS, …). */
  vars?: Record<string, string>;
  /** Extra environment for the prober (SMTP_PORT, ALLOW_PRIVATE_TARGETS, …). */
  proberEnv?: Record<string, string>;
  devCredits?: number;
  devApiKey?: string;
  startProber?: boolean;
  /** Output of the edge and the prober, and the stack's own steps ('stack'), line by line. */
  onLog?: (source: 'stack' | 'edge' | 'prober', line: string) => void;
}

export interface LocalStack {
  baseUrl: string;
  accountId: string;
  apiKey: string;
  proberToken: string;
  d1: D1Target;
  edge: ChildProcess;
  /** The Worker's inspector (Chrome DevTools Protocol), on 127.0.0.1. */
  inspectorPort: number;
  prober: ChildProcess | null;
  proberOpsUrl: string | null;
  startProber(): Promise<void>;
  stopProber(signal?: NodeJS.Signals): Promise<number | null>;
  /**
   * Links one more prober (own process), stopped by close(): in the primary region with the
   * stack's token, or in `region` with a token of its own, or with `token` (a customer's, say);
   * `env` over the stack's prober env.
   */
  addProber(options?: {
    region?: string;
    env?: Record<string, string>;
    token?: string;
  }): Promise<ChildProcess>;
  /** The prober regions the edge uses, the primary (where the stack's prober links) first. */
  regions: string[];
  close(): Promise<void>;
}

interface SavedCredentials {
  apiKey?: string;
  proberToken?: string;
  /** The development deployment's SECRETS_KEY (seals webhook secrets). */
  secretsKey?: string;
}

export async function startLocalStack(options: StackOptions = {}): Promise<LocalStack> {
  const host = options.host ?? '127.0.0.1';
  const persistTo = options.persistTo ?? join(REPO_ROOT, '.wrangler', 'state');
  mkdirSync(persistTo, { recursive: true });
  const d1: D1Target = { persistTo };

  const step = (line: string) => options.onLog?.('stack', line);
  const regions = regionsOf(options.vars);
  if (options.migratedFrom) {
    if (readdirSync(persistTo).length > 0)
      throw new Error(`${persistTo} is not empty: it has its own database`);
    cpSync(options.migratedFrom, persistTo, { recursive: true });
    step(`database copied from ${options.migratedFrom}`);
  } else {
    await applyMigrations(d1);
    step('database migrated');
  }
  const seeded = await seedDevelopmentAccount(d1, persistTo, options);
  step('development account seeded; starting wrangler dev');

  // Development defaults under the caller's vars: the persisted SECRETS_KEY (webhook secrets,
  // confirmation links) and the console sender, which prints each sign-up's confirmation link.
  // LOCAL_STACK_ID: the edge's /healthz names it, so an edge of another stack that happens to
  // answer on a port drawn for this one is never taken for this one's.
  const stackId = randomUUID();
  const vars = {
    SECRETS_KEY: seeded.secretsKey,
    EMAIL_SENDER: 'console',
    ...options.vars,
    LOCAL_STACK_ID: stackId,
  };
  const varArgs = Object.entries(vars).flatMap(([name, value]) => ['--var', `${name}:${value}`]);
  // A port drawn free (freePort) can be taken before wrangler binds it: any connection the
  // machine opens meanwhile may get it as its local port. On ports of its own choosing the stack
  // draws new ones and starts the edge again; a port the caller chose is theirs to free.
  let started: { edge: ChildProcess; baseUrl: string; inspectorPort: number } | null = null;
  for (let attempt = 1; started === null; attempt++) {
    const port = options.port || (await freePort(host));
    const start = await startEdge(
      host,
      port,
      await freePort(host),
      persistTo,
      varArgs,
      stackId,
      options.onLog,
    );
    if ('retry' in start) {
      if (attempt === PORT_ATTEMPTS || (options.port && start.retry === 'port'))
        throw new Error(`gave up starting the edge: ${RETRY_REASONS[start.retry](port)}`);
      step(`${RETRY_REASONS[start.retry](port)}; starting it again on new ports`);
    } else started = start;
  }
  const { edge, baseUrl, inspectorPort } = started;
  step(`the edge answers at ${baseUrl}`);

  let prober: ChildProcess | null = null;
  let proberOpsUrl: string | null = null;
  const extraProbers: ChildProcess[] = [];
  /** Starts a prober process and resolves once its link to the edge is up. */
  const launchProber = async (
    region = regions[0] ?? 'default',
    env: Record<string, string> = {},
    chosenToken?: string,
  ): Promise<{ process: ChildProcess; opsUrl: string }> => {
    // A token is for one region: the stack's is the primary's; another region gets its own.
    const token =
      chosenToken ??
      (region === (regions[0] ?? 'default')
        ? seeded.proberToken
        : (await createProberToken(d1, { region, name: `local prober (${region})` })).secret);
    const proberEnv = { ...options.proberEnv, ...env };
    // Its ops port is drawn free, and may be taken before it binds it: as the edge's, drawn again.
    for (let attempt = 1; ; attempt++) {
      const launched = await startProber(host, await freePort(host), { baseUrl, edge }, token, region, {
        env: proberEnv,
        onLog: options.onLog,
      });
      if (launched) {
        step(`a prober is linked in region ${region}`);
        return launched;
      }
      if (attempt === PORT_ATTEMPTS) throw new Error('gave up starting a prober: its ops port was in use');
      step("the prober's ops port was taken meanwhile; drawing a new one");
    }
  };
  const stack: LocalStack = {
    baseUrl,
    accountId: DEV_ACCOUNT_ID,
    apiKey: seeded.apiKey,
    proberToken: seeded.proberToken,
    d1,
    edge,
    inspectorPort,
    regions,
    get prober() {
      return prober;
    },
    get proberOpsUrl() {
      return proberOpsUrl;
    },
    async startProber() {
      const launched = await launchProber();
      prober = launched.process;
      proberOpsUrl = launched.opsUrl;
    },
    async addProber(added = {}) {
      const launched = await launchProber(added.region, added.env, added.token);
      extraProbers.push(launched.process);
      return launched.process;
    },
    async stopProber(signal = 'SIGTERM') {
      const running = prober;
      prober = null;
      return running ? stopProcess(running, signal) : null;
    },
    async close() {
      await Promise.all(extraProbers.splice(0).map((child) => stopProcess(child, 'SIGTERM')));
      await stack.stopProber();
      await stopProcess(edge, 'SIGTERM', true);
    },
  };
  if (options.startProber ?? true) await stack.startProber();
  return stack;
}

/** How often a stack starts wrangler dev again (new free ports) when a start could not finish. */
const PORT_ATTEMPTS = 5;

/**
 * A wrangler dev that has said nothing for this long and still does not answer has hung: seen
 * on a loaded two-core runner, once in some tens of starts, after it printed its bindings (its
 * workerd bound the port and never served; once silent 84 s, then printing them again and still
 * not serving). A start that printed its bindings serves within seconds, tens when loaded.
 */
const EDGE_STALL_MS = 60_000;

const RETRY_REASONS = {
  port: (port: number) => `port ${port} or its inspector's was in use`,
  stalled: (port: number) =>
    `wrangler dev on port ${port} said nothing for ${EDGE_STALL_MS / 1000} s and did not answer`,
};

/**
 * Starts `wrangler dev` and resolves once the edge answers; `retry` if wrangler found its port or
 * its inspector's port in use (it exits then) or hung (it is killed then).
 */
async function startEdge(
  host: string,
  port: number,
  inspectorPort: number,
  persistTo: string,
  varArgs: string[],
  stackId: string,
  onLog: StackOptions['onLog'],
): Promise<{ edge: ChildProcess; baseUrl: string; inspectorPort: number } | { retry: 'port' | 'stalled' }> {
  const edge = spawnWrangler([
    'dev',
    '--local',
    '--ip',
    host,
    '--port',
    String(port),
    '--inspector-port',
    String(inspectorPort),
    '--persist-to',
    persistTo,
    '--show-interactive-dev-session=false',
    // GET /__scheduled runs the cron (retention, recovery, webhook retries) on demand.
    '--test-scheduled',
    // `log`: the Worker's console at every level (the console sender's confirmation links and
    // the cost meter's counts are console.log lines); wrangler's own line per request is
    // dropped in pipeLines.
    '--log-level',
    'log',
    ...varArgs,
  ]);
  stopOnExit(edge, true);
  const closed = new Promise((resolve) => edge.once('close', resolve));
  // A Worker that does not build leaves wrangler dev waiting for a file to change, not exiting:
  // the first build error ends the start instead of a wait without end.
  const build = buildFailureReader();
  let addressInUse = false;
  let lastLineAt = Date.now();
  let stalled = false;
  pipeLines(edge, 'edge', onLog, (line) => {
    lastLineAt = Date.now();
    build.read(line);
    addressInUse ||= line.includes('Address already in use');
  });
  const baseUrl = `http://${host}:${port}`;
  try {
    await waitUntil(`the edge at ${baseUrl}`, edge, async () => {
      const failure = build.failure();
      if (failure) throw new StackStartError(`wrangler could not build the Worker: ${failure}`);
      if (Date.now() - lastLineAt > EDGE_STALL_MS) {
        stalled = true;
        throw new StackStartError('wrangler dev hung');
      }
      // wrangler's proxy holds a request until the Worker is built: ask again rather than wait.
      const health = await fetch(`${baseUrl}/healthz`, { signal: AbortSignal.timeout(2_000) });
      return health.ok && ((await health.json()) as { stack?: string }).stack === stackId;
    });
  } catch (error) {
    if (stalled) {
      signal(edge, 'SIGKILL', true);
      await closed;
      return { retry: 'stalled' };
    }
    await lastLinesOf(edge, closed);
    if (!addressInUse) throw error;
    // What wrangler started before it gave up (workerd) goes with it.
    signal(edge, 'SIGKILL', true);
    return { retry: 'port' };
  }
  return { edge, baseUrl, inspectorPort };
}

/**
 * How long a prober may take to link to an answering edge: a start takes a second or two, and
 * tens on a loaded two-core runner; past this it is taken for hung, and the start fails saying so
 * rather than waiting for the caller's own limit.
 */
const PROBER_LINK_MS = 120_000;

/**
 * Starts a prober process and resolves once its link to `edge` is up; null if its ops port was
 * in use (it exits then).
 */
export async function startProber(
  host: string,
  opsPort: number,
  edge: { baseUrl: string; edge: ChildProcess },
  token: string,
  region: string,
  options: { env: Record<string, string> | undefined; onLog: StackOptions['onLog'] },
): Promise<{ process: ChildProcess; opsUrl: string } | null> {
  const opsUrl = `http://${host}:${opsPort}`;
  const child = spawn(process.execPath, [join(REPO_ROOT, 'prober', 'src', 'cli.ts'), 'run'], {
    cwd: REPO_ROOT,
    env: {
      ...process.env,
      EDGE_URL: edge.baseUrl,
      PROBER_TOKEN: token,
      REGION: region,
      OPS_HOST: host,
      OPS_PORT: String(opsPort),
      LOG_LEVEL: 'warn',
      ...options.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  stopOnExit(child, false);
  const closed = new Promise((resolve) => child.once('close', resolve));
  // A refused link is retried for ever (an operator fixes the token and the prober links):
  // here that would be a wait without end, so the first refusal ends the start instead.
  let refusal: string | null = null;
  let addressInUse = false;
  pipeLines(child, 'prober', options.onLog, (line) => {
    refusal ??= linkRefusalOf(line);
    addressInUse ||= line.includes('EADDRINUSE');
  });
  try {
    // The prober's /healthz turns 200 once its link to the edge is up.
    const giveUpAt = Date.now() + PROBER_LINK_MS;
    await waitUntil('the prober to link', { 'the prober': child, 'the edge': edge.edge }, async () => {
      if (refusal) throw new StackStartError(`the edge refused the prober's link: ${refusal}`);
      if (Date.now() > giveUpAt)
        throw new StackStartError(`it had not linked ${PROBER_LINK_MS / 1000} s after it started`);
      return (await fetch(`${opsUrl}/healthz`, { signal: AbortSignal.timeout(2_000) })).ok;
    });
  } catch (error) {
    await lastLinesOf(child, closed);
    // A refused prober retries for ever: it is stopped here, since no caller holds it.
    await stopProcess(child, 'SIGKILL');
    if (addressInUse) return null;
    throw error;
  }
  return { process: child, opsUrl };
}

/** Waits (a moment at most) for an exited process's last lines: they may come after its exit. */
async function lastLinesOf(child: ChildProcess, closed: Promise<unknown>): Promise<void> {
  if (child.exitCode === null && child.signalCode === null) return;
  await Promise.race([closed, new Promise((resolve) => setTimeout(resolve, 1_000))]);
}

/** The dev account, an API key and a prober token; reused across runs while still valid. */
export async function seedDevelopmentAccount(
  d1: D1Target,
  persistTo: string,
  options: StackOptions,
): Promise<Credentials> {
  const savedPath = join(persistTo, 'rcpt-dev-credentials.json');
  const saved: SavedCredentials | null = existsSync(savedPath)
    ? JSON.parse(readFileSync(savedPath, 'utf8'))
    : null;
  const seeded = saved
    ? await reuseDevelopmentAccount(d1, saved, options)
    : ((await seedFreshDatabase(d1, options)) ?? (await reuseDevelopmentAccount(d1, {}, options)));
  // The persistence folder is git-ignored local state, like the database beside it.
  const kept: SavedCredentials = {
    apiKey: options.devApiKey ? saved?.apiKey : seeded.apiKey,
    proberToken: seeded.proberToken,
    secretsKey: seeded.secretsKey,
  };
  writeFileSync(savedPath, JSON.stringify(kept), { mode: 0o600 });
  return seeded;
}

type Credentials = { apiKey: string; proberToken: string; secretsKey: string };

/**
 * A folder without saved credentials is usually a new database: the account, its key and a
 * prober token go in as one script, one wrangler call, which is one transaction. When the
 * account is already there the script fails whole, nothing is written, and this answers null.
 */
async function seedFreshDatabase(d1: D1Target, options: StackOptions): Promise<Credentials | null> {
  const account = accountCreation({ id: DEV_ACCOUNT_ID, email: null, credits: options.devCredits ?? 100 });
  const key = options.devApiKey ? await registeredDevKey(options.devApiKey) : await apiKeyCreation(devKey);
  const token = await proberTokenCreation(localProberOf(options));
  try {
    executeSql(d1, [account.sql, key.sql, token.sql].join('\n'));
  } catch {
    return null;
  }
  return { apiKey: key.credential.secret, proberToken: token.credential.secret, secretsKey: newSecretsKey() };
}

/** Keeps what a folder's saved credentials still hold valid, and makes what is missing. */
async function reuseDevelopmentAccount(
  d1: D1Target,
  saved: SavedCredentials,
  options: StackOptions,
): Promise<Credentials> {
  if (!accountExists(d1, DEV_ACCOUNT_ID)) {
    await createAccount(d1, { id: DEV_ACCOUNT_ID, email: null, credits: options.devCredits ?? 100 });
  }
  let apiKey: string;
  if (options.devApiKey) {
    const key = await registeredDevKey(options.devApiKey);
    executeSql(d1, key.sql);
    apiKey = key.credential.secret;
  } else if (saved.apiKey && isLiveCredential(d1, 'api_keys', await hashSecret(saved.apiKey))) {
    apiKey = saved.apiKey;
  } else {
    apiKey = (await createApiKey(d1, devKey)).secret;
  }
  const localProber = localProberOf(options);
  const proberToken =
    saved.proberToken && proberTokenRegion(d1, await hashSecret(saved.proberToken)) === localProber.region
      ? saved.proberToken
      : (await createProberToken(d1, localProber)).secret;
  return { apiKey, proberToken, secretsKey: saved.secretsKey ?? newSecretsKey() };
}

const devKey = { accountId: DEV_ACCOUNT_ID, name: 'development key', mode: 'live' } as const;

/** The stack's prober token: for the primary of the edge's regions. */
function localProberOf(options: StackOptions): { region: string; name: string } {
  return { region: regionsOf(options.vars)[0] ?? 'default', name: 'local prober' };
}

/** The edge's prober regions from its vars, as the edge reads them (PROBER_REGIONS, else PROBER_REGION). */
function regionsOf(vars: Record<string, string> | undefined): string[] {
  return regionsOfVars(vars ?? {}).map((region) => region.name);
}

/** The key the operator chose (RCPT_DEV_API_KEY), registered under its hash. */
async function registeredDevKey(secret: string): Promise<{ credential: { secret: string }; sql: string }> {
  return {
    credential: { secret },
    sql: apiKeyRegistration({
      accountId: DEV_ACCOUNT_ID,
      name: 'development key (RCPT_DEV_API_KEY)',
      mode: secret.startsWith('rk_test_') ? 'test' : 'live',
      hash: await hashSecret(secret),
      prefix: secret.slice(0, 12),
    }),
  };
}

/** The development deployment's SECRETS_KEY (seals webhook secrets). */
function newSecretsKey(): string {
  return btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(32))));
}

export async function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, host, () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
}

/** A reason to stop waiting that no retry will change; `ready` throws it to end the wait. */
export class StackStartError extends Error {}

/**
 * Polls `ready` until it holds; fails at once if a `watched` process (or one of the named ones)
 * exits first, or
 * `ready` throws a StackStartError (any other error is "not listening yet"). There is no time
 * limit of its own: how long wrangler and workerd take to start depends on the machine and its
 * load (minutes on a busy two-core runner), and the caller's own limit (a test hook's timeout,
 * Ctrl-C, the benchmark runner's limit) decides when to give up.
 */
export async function waitUntil(
  what: string,
  watched: ChildProcess | Readonly<Record<string, ChildProcess>>,
  ready: () => Promise<boolean>,
): Promise<void> {
  let exited: string | null = null;
  const named = watched instanceof ChildProcess ? { 'the process': watched } : watched;
  for (const [name, child] of Object.entries(named)) {
    if (child.exitCode !== null || child.signalCode !== null)
      exited = `${name} exited with ${child.exitCode ?? child.signalCode}`;
    child.once('exit', (code, signal) => {
      exited ??= `${name} exited with ${code ?? signal}`;
    });
  }
  for (;;) {
    if (exited !== null) throw new Error(`gave up waiting for ${what}: ${exited}`);
    try {
      if (await ready()) return;
    } catch (error) {
      if (error instanceof StackStartError) throw new Error(`gave up waiting for ${what}: ${error.message}`);
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * Reads wrangler dev's output for a failed build of the Worker ("✘ [ERROR] Build failed with N
 * errors:" and then one "✘ [ERROR]" line each). `failure()` is null until the build fails, then
 * the first error it names; a module that does not resolve says what to run.
 */
export function buildFailureReader(): { read: (line: string) => void; failure: () => string | null } {
  let failed = false;
  let first: string | null = null;
  return {
    read(line) {
      // biome-ignore lint/suspicious/noControlCharactersInRegex: wrangler colours its lines (ANSI SGR)
      const text = line.replace(/\x1b\[[0-9;]*m/g, '').trim();
      const error = /\[ERROR\]\s*(.*)$/.exec(text)?.[1];
      if (error === undefined) return;
      if (/^Build failed/.test(error)) failed = true;
      else if (failed) first ??= error;
    },
    failure() {
      if (!failed) return null;
      if (first === null) return 'see its output';
      return /^Could not resolve/.test(first) ? `${first} (run npm install)` : first;
    },
  };
}

/**
 * Why the edge refused a prober's link, from one of its JSON log lines, or null: its token
 * (401/403), its protocol version, or its region (the hub closes with 4003) — refusals the
 * prober retries for ever. Closes and errors that another try can mend are not.
 */
export function linkRefusalOf(line: string): string | null {
  let entry: { level?: unknown; msg?: unknown; code?: unknown; reason?: unknown; status?: unknown };
  try {
    entry = JSON.parse(line);
  } catch {
    return null;
  }
  if (entry.code === 4003) return `closed with 4003 (${String(entry.reason)})`;
  if (entry.level === 'error' && (entry.status !== undefined || entry.code !== undefined))
    return String(entry.msg);
  return null;
}

/**
 * On SIGTERM (a test runner ending its worker, a benchmark past its time), kills every edge and
 * prober started here and exits 143: for callers that have no shutdown of their own.
 */
export function stopStartedProcessesOnSigterm(): void {
  process.once('SIGTERM', () => {
    killStartedProcesses();
    process.exit(143);
  });
}

/** Children started here and still running: the edge's process groups and the probers. */
const running = new Map<ChildProcess, { group: boolean }>();
process.once('exit', killStartedProcesses);

function stopOnExit(child: ChildProcess, group: boolean): void {
  running.set(child, { group });
  child.once('exit', () => running.delete(child));
}

/**
 * Kills every edge and prober started here that is still running. Runs when this process
 * exits, so a caller that gave up (a test hook that timed out before it had a stack to
 * close) leaves no wrangler, workerd or prober behind; a test runner that ends its workers
 * with SIGTERM calls it from its signal handler.
 */
export function killStartedProcesses(): void {
  for (const [child, { group }] of running) signal(child, 'SIGKILL', group);
  running.clear();
}

function pipeLines(
  child: ChildProcess,
  source: 'edge' | 'prober',
  onLog: StackOptions['onLog'],
  onLine?: (line: string) => void,
): void {
  for (const stream of [child.stdout, child.stderr]) {
    let buffered = '';
    stream?.setEncoding('utf8');
    stream?.on('data', (chunk: string) => {
      buffered += chunk;
      const lines = buffered.split('\n');
      buffered = lines.pop() ?? '';
      for (const line of lines) {
        if (!line.trim() || isWranglerInfo(line)) continue;
        onLine?.(line);
        onLog?.(source, line);
      }
    });
  }
}

/** wrangler dev's own info lines ("[wrangler:info] GET /healthz 200 OK (3ms)"), maybe coloured. */
function isWranglerInfo(line: string): boolean {
  return line.slice(0, 24).includes('[wrangler:info]');
}

/** Signals a process (its whole group when `group`) and resolves with its exit code. */
export async function stopProcess(
  child: ChildProcess,
  stopSignal: NodeJS.Signals,
  group = false,
): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  signal(child, stopSignal, group);
  const killer = setTimeout(() => signal(child, 'SIGKILL', group), 15_000);
  const code = await exited;
  clearTimeout(killer);
  return code;
}

/** Sends `name` to a process, or to its whole process group (`group`); nothing if it is gone. */
function signal(child: ChildProcess, name: NodeJS.Signals, group: boolean): void {
  try {
    if (group && child.pid) process.kill(-child.pid, name);
    else child.kill(name);
  } catch {
    // already gone
  }
}

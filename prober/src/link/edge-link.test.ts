import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import type { IncomingMessage } from 'node:http';
import { type AddressInfo, createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import {
  type EdgeMessage,
  type EgressStateMessage,
  type ProbeReport,
  type ProbeRequest,
  ProberMessage,
  ResultMessage,
} from '@rcpt/shared/contract/prober';
import { SMTPServer } from 'smtp-server';
import { afterEach, describe, expect, it } from 'vitest';
import { type WebSocket, WebSocketServer } from 'ws';
import { createLogger } from '../ops/logger.ts';
import { EdgeLink, type EdgeLinkEvents, type EdgeLinkOptions, proberConnectUrl } from './edge-link.ts';

const TOKEN = 'rkp_dGhpcy1pcy1hLXRlc3QtdG9rZW4tbm90LWEtcmVhbC1vbmU';

// ——— A stand-in for the edge's ProberHub: a real WebSocket server on loopback that checks the
// bearer token, validates everything the prober sends against the contract, and lets a test
// await messages in order.

class HubConnection {
  readonly socket: WebSocket;
  readonly request: IncomingMessage;
  readonly closed: Promise<{ code: number; reason: string }>;
  readonly #messages: ProberMessage[] = [];
  readonly #waiters: Array<() => void> = [];

  constructor(socket: WebSocket, request: IncomingMessage) {
    this.socket = socket;
    this.request = request;
    this.closed = new Promise((resolve) => {
      socket.on('close', (code, reason) => resolve({ code, reason: reason.toString() }));
    });
    socket.on('message', (data) => {
      // Every frame the prober sends must satisfy the shared contract.
      this.#messages.push(ProberMessage.parse(JSON.parse(data.toString())));
      for (const wake of this.#waiters.splice(0)) wake();
    });
  }

  /** The next not yet taken message of `type` (and, if given, `id`), waiting for it if need be. */
  async take<T extends ProberMessage['type']>(
    type: T,
    id?: string,
  ): Promise<Extract<ProberMessage, { type: T }>> {
    for (;;) {
      const index = this.#messages.findIndex(
        (message) => message.type === type && (id === undefined || message.id === id),
      );
      if (index >= 0) return this.#messages.splice(index, 1)[0] as Extract<ProberMessage, { type: T }>;
      await new Promise<void>((resolve) => this.#waiters.push(resolve));
    }
  }

  /** Messages received and not yet taken. */
  get pending(): ProberMessage[] {
    return [...this.#messages];
  }

  send(message: EdgeMessage | Record<string, unknown> | string): void {
    this.socket.send(typeof message === 'string' ? message : JSON.stringify(message));
  }
}

class FakeHub {
  readonly server: WebSocketServer;
  /** Upgrades refused for a bad token. */
  rejectedUpgrades = 0;
  readonly #connections: HubConnection[] = [];
  readonly #waiters: Array<() => void> = [];
  #taken = 0;

  private constructor(server: WebSocketServer) {
    this.server = server;
    server.on('connection', (socket, request) => {
      this.#connections.push(new HubConnection(socket, request));
      for (const wake of this.#waiters.splice(0)) wake();
    });
  }

  static async start(
    options: {
      acceptedToken?: string;
      autoPong?: boolean;
      /** Refuse every upgrade with this status and JSON error body, as the edge's routes answer. */
      refuseWith?: { status: number; body: Record<string, unknown> };
    } = {},
  ): Promise<FakeHub> {
    const acceptedToken = options.acceptedToken ?? TOKEN;
    const { refuseWith } = options;
    let hub: FakeHub | null = null;
    const server = new WebSocketServer({
      host: '127.0.0.1',
      port: 0,
      autoPong: options.autoPong ?? true,
      verifyClient: (info, callback) => {
        if (refuseWith) {
          if (hub) hub.rejectedUpgrades += 1;
          return callback(false, refuseWith.status, JSON.stringify(refuseWith.body), {
            'Content-Type': 'application/json',
          });
        }
        if (info.req.headers.authorization === `Bearer ${acceptedToken}`) return callback(true);
        if (hub) hub.rejectedUpgrades += 1;
        callback(false, 401, 'Unauthorized');
      },
    });
    hub = new FakeHub(server);
    await once(server, 'listening');
    return hub;
  }

  get url(): URL {
    return proberConnectUrl(
      new URL(`http://127.0.0.1:${(this.server.address() as AddressInfo).port}`),
      'eu-test',
    );
  }

  /** The next connection not yet handed to a test. */
  async nextConnection(): Promise<HubConnection> {
    for (;;) {
      const connection = this.#connections[this.#taken];
      if (connection) {
        this.#taken += 1;
        return connection;
      }
      await new Promise<void>((resolve) => this.#waiters.push(resolve));
    }
  }

  async close(): Promise<void> {
    for (const client of this.server.clients) client.terminate();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

// ——— Helpers for the prober side.

interface Deferred<T> {
  promise: Promise<T>;
  resolve: (value: T) => void;
}

function deferred<T>(): Deferred<T> {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((settle) => {
    resolve = settle;
  });
  return { promise, resolve };
}

function reportFor(request: ProbeRequest): ProbeReport {
  return {
    perAddress: request.emails.map((email) => ({
      email,
      reply: { code: 250, enhanced: '2.1.5', text: 'Recipient OK' },
      failure: null,
    })),
    catchAllReply: { code: 550, enhanced: '5.1.1', text: 'No such user' },
    session: {
      mxHost: 'mx.example.test',
      mxIp: '127.0.0.1',
      tls: false,
      tlsError: null,
      smtputf8: false,
      durationMs: 12,
    },
  };
}

function probeMessage(id: string, email = 'alice@example.test'): EdgeMessage {
  return {
    type: 'probe',
    id,
    emails: [email],
    domain: 'example.test',
    mx: [{ host: 'mx.example.test', preference: 10, ips: ['127.0.0.1'] }],
    mailFrom: 'verify@rcpt.test',
    helo: 'probe.rcpt.test',
    timeoutMs: 5_000,
    transcript: false,
  };
}

/** Resolves after `link` has emitted `event` `count` times (counting from now). */
function eventCount<K extends keyof EdgeLinkEvents>(
  link: EdgeLink,
  event: K,
  count: number,
): Promise<EdgeLinkEvents[K][]> {
  const seen: EdgeLinkEvents[K][] = [];
  return new Promise((resolve) => {
    const listener = (...args: EdgeLinkEvents[K]) => {
      seen.push(args);
      if (seen.length === count) {
        link.off(event, listener as never);
        resolve(seen);
      }
    };
    link.on(event, listener as never);
  });
}

const logLines: string[] = [];
const links: EdgeLink[] = [];
const hubs: FakeHub[] = [];
const children: ChildProcess[] = [];
const mailServers: SMTPServer[] = [];

function startLink(hub: FakeHub, overrides: Partial<EdgeLinkOptions> = {}): EdgeLink {
  const link = new EdgeLink({
    url: overrides.url ?? hub.url,
    token: TOKEN,
    region: 'eu-test',
    capacity: 4,
    handleProbe: async (request) => reportFor(request),
    logger: createLogger({ level: 'debug', destination: { write: (line: string) => logLines.push(line) } }),
    drainTimeoutMs: 5_000,
    backoff: { baseMs: 1, capMs: 20, stableAfterMs: 60_000 },
    random: () => 0.5,
    ...overrides,
  });
  links.push(link);
  link.start();
  return link;
}

afterEach(async () => {
  for (const child of children.splice(0)) {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await once(child, 'exit');
    }
  }
  for (const server of mailServers.splice(0))
    await new Promise<void>((resolve) => server.close(() => resolve()));
  for (const link of links.splice(0)) link.close();
  for (const hub of hubs.splice(0)) await hub.close();
  // Whatever happened in the test, the token never reached a log line.
  expect(logLines.join('')).not.toContain(TOKEN);
  expect(logLines.join('')).not.toContain(TOKEN.slice(4));
  logLines.length = 0;
});

async function startHub(options: Parameters<typeof FakeHub.start>[0] = {}): Promise<FakeHub> {
  const hub = await FakeHub.start(options);
  hubs.push(hub);
  return hub;
}

describe('EdgeLink', () => {
  it('dials the region hub with the bearer token and says hello with its capacity', async () => {
    const hub = await startHub();
    const link = startLink(hub, { capacity: 7 });
    const connection = await hub.nextConnection();
    const hello = await connection.take('hello');

    expect(connection.request.url).toBe('/internal/probers/connect?region=eu-test');
    expect(connection.request.headers.authorization).toBe(`Bearer ${TOKEN}`);
    expect(hello).toMatchObject({ type: 'hello', version: 1, region: 'eu-test', capacity: 7 });
    expect(link.linked).toBe(true);
  });

  it('reports a rejected token and keeps retrying at the capped delay', async () => {
    const hub = await startHub({ acceptedToken: 'rkp_some-other-token' });
    const link = new EdgeLink({
      url: hub.url,
      token: TOKEN,
      region: 'eu-test',
      capacity: 1,
      handleProbe: async (request) => reportFor(request),
      logger: createLogger({ level: 'info', destination: { write: (line: string) => logLines.push(line) } }),
      drainTimeoutMs: 1_000,
      backoff: { baseMs: 1, capMs: 8, stableAfterMs: 60_000 },
      random: () => 0.5,
    });
    links.push(link);
    const rejected = eventCount(link, 'tokenRejected', 3);
    const retries = eventCount(link, 'reconnecting', 3);
    link.start();

    expect(await rejected).toEqual([[{ status: 401 }], [{ status: 401 }], [{ status: 401 }]]);
    // Never the tiny base delay: a refused token waits between half the cap and the cap.
    expect((await retries).map(([retry]) => retry.delayMs)).toEqual([6, 6, 6]);
    expect(hub.rejectedUpgrades).toBeGreaterThanOrEqual(3);
    expect(link.reconnects).toBeGreaterThanOrEqual(3);
    expect(link.linked).toBe(false);
    expect(logLines.join('')).toContain('token rejected');
  });

  it("logs the edge's refusal of a region it does not use, and retries only at the capped delay", async () => {
    const message =
      'Region "eu-test" is not in this edge\'s PROBER_REGIONS ("default"), so it would never be sent work.';
    const hub = await startHub({
      refuseWith: {
        status: 403,
        body: { success: false, code: 'PROBER_REGION_UNUSED', message, requestId: 'req-1' },
      },
    });
    const link = startLink(hub, { backoff: { baseMs: 1, capMs: 8, stableAfterMs: 60_000 } });
    const refused = eventCount(link, 'regionRefused', 2);
    const retries = eventCount(link, 'reconnecting', 2);
    const rejectedTokens = eventCount(link, 'tokenRejected', 1);

    expect(await refused).toEqual([[{ region: 'eu-test', message }], [{ region: 'eu-test', message }]]);
    // Never the tiny base delay: the edge's configuration must change first.
    expect((await retries).map(([retry]) => retry.delayMs)).toEqual([6, 6]);
    const logged = logLines
      .map((line) => JSON.parse(line))
      .find((line) => line.code === 'PROBER_REGION_UNUSED');
    expect(logged).toMatchObject({ level: 'error', status: 403, edgeSays: message });
    expect(logged.msg).toContain('the edge does not use region "eu-test"');
    // Not mistaken for a bad token.
    expect(await Promise.race([rejectedTokens, Promise.resolve('none')])).toBe('none');
    expect(link.linked).toBe(false);
  });

  it('backs off exponentially with full jitter while the edge is unreachable', async () => {
    const hub = await startHub();
    const port = (hub.server.address() as AddressInfo).port;
    await hub.close();
    hubs.length = 0;
    const link = startLink(hub, {
      url: proberConnectUrl(new URL(`ws://127.0.0.1:${port}`), 'eu-test'),
      backoff: { baseMs: 1, capMs: 6, stableAfterMs: 60_000 },
      random: () => 0.999,
    });
    const retries = await eventCount(link, 'reconnecting', 5);
    // Ceilings 1, 2, 4, then the cap of 6; the drawn fraction is fixed at 0.999.
    expect(retries.map(([retry]) => retry.delayMs)).toEqual([1, 2, 4, 6, 6]);
  });

  it('runs a probe and sends back a result that matches the contract', async () => {
    const hub = await startHub();
    const requests: ProbeRequest[] = [];
    startLink(hub, {
      handleProbe: async (request) => {
        requests.push(request);
        return reportFor(request);
      },
    });
    const connection = await hub.nextConnection();
    await connection.take('hello');
    connection.send(probeMessage('probe-1', 'bob@example.test'));
    const result = await connection.take('result', 'probe-1');

    expect(ResultMessage.parse(result)).toEqual({
      type: 'result',
      id: 'probe-1',
      ...reportFor(requests[0]!),
    });
    expect(requests).toEqual([
      {
        emails: ['bob@example.test'],
        domain: 'example.test',
        mx: [{ host: 'mx.example.test', preference: 10, ips: ['127.0.0.1'] }],
        mailFrom: 'verify@rcpt.test',
        helo: 'probe.rcpt.test',
        timeoutMs: 5_000,
        transcript: false,
      },
    ]);
  });

  it('answers a duplicate probe id twice while probing once', async () => {
    const hub = await startHub();
    const release = deferred<void>();
    let calls = 0;
    startLink(hub, {
      handleProbe: async (request) => {
        calls += 1;
        await release.promise;
        return reportFor(request);
      },
    });
    const connection = await hub.nextConnection();
    await connection.take('hello');
    connection.send(probeMessage('dup'));
    connection.send(probeMessage('dup'));
    // A ping after both probes: its pong proves the link has read the duplicate.
    connection.send({ type: 'ping', id: 'after-dup', ts: 1 });
    await connection.take('pong', 'after-dup');
    release.resolve();

    const first = await connection.take('result', 'dup');
    const second = await connection.take('result', 'dup');
    expect(second).toEqual(first);

    // Once finished, the same id is answered from the recent results.
    connection.send(probeMessage('dup'));
    expect(await connection.take('result', 'dup')).toEqual(first);
    expect(calls).toBe(1);
  });

  it('answers ping with pong carrying the same id and timestamp', async () => {
    const hub = await startHub();
    startLink(hub);
    const connection = await hub.nextConnection();
    await connection.take('hello');
    connection.send({ type: 'ping', id: 'ping-7', ts: 1_700_000_000_000 });
    expect(await connection.take('pong')).toEqual({ type: 'pong', id: 'ping-7', ts: 1_700_000_000_000 });
  });

  it("takes back the hub's memory of its egresses and reports their state again", async () => {
    const hub = await startHub();
    const restored: unknown[] = [];
    let state = { blocks: [], uses: [], sessions: 0 } as Omit<EgressStateMessage, 'type' | 'id'>;
    const block = {
      egress: '127.0.0.2',
      scope: { kind: 'mx_host', name: 'mx1.example.test' },
      since: 1_700_000_000_000,
      until: 1_700_000_600_000,
      reply: { code: 554, enhanced: '5.7.1', text: 'blocked using zen.spamhaus.org' },
      level: 1,
    } as const;
    startLink(hub, {
      egressState: () => state,
      restoreEgresses: (memory) => {
        restored.push(memory);
        state = { ...state, blocks: memory.blocks };
      },
    });
    const connection = await hub.nextConnection();
    await connection.take('hello');
    expect(await connection.take('egress_state')).toMatchObject({ blocks: [] });
    const memory = {
      blocks: [block],
      warmUps: [{ egress: '127.0.0.2', since: 1_690_000_000_000 }],
      uses: [],
    };
    connection.send({ type: 'egress_memory', id: 'memory-1', ...memory });
    expect(await connection.take('egress_state')).toMatchObject({ blocks: [block] });
    expect(restored).toEqual([memory]);
  });

  it('ignores invalid messages, answering a malformed probe with an error', async () => {
    const hub = await startHub();
    let calls = 0;
    startLink(hub, {
      handleProbe: async (request) => {
        calls += 1;
        return reportFor(request);
      },
    });
    const connection = await hub.nextConnection();
    await connection.take('hello');
    connection.send('not json at all');
    connection.send({ type: 'shutdown', id: 'x' });
    connection.send({ ...probeMessage('bad-probe'), emails: [] });
    const error = await connection.take('error', 'bad-probe');
    expect(error.message).toMatch(/^invalid probe message/);

    connection.send(probeMessage('good-probe'));
    await connection.take('result', 'good-probe');
    expect(calls).toBe(1);
    expect(connection.pending).toEqual([]);
    expect(logLines.filter((line) => line.includes('ignored')).length).toBe(3);
  });

  it('refuses probes over its capacity and reports a failing engine as an error', async () => {
    const hub = await startHub();
    const release = deferred<void>();
    startLink(hub, {
      capacity: 1,
      handleProbe: async (request) => {
        if (request.emails[0] === 'boom@example.test') throw new Error('engine exploded');
        await release.promise;
        return reportFor(request);
      },
    });
    const connection = await hub.nextConnection();
    await connection.take('hello');
    connection.send(probeMessage('slow'));
    connection.send(probeMessage('extra'));
    expect(await connection.take('error', 'extra')).toEqual({
      type: 'error',
      id: 'extra',
      message: 'over capacity',
    });

    release.resolve();
    await connection.take('result', 'slow');
    connection.send(probeMessage('boom', 'boom@example.test'));
    expect(await connection.take('error', 'boom')).toEqual({
      type: 'error',
      id: 'boom',
      message: 'probe failed: engine exploded',
    });
  });

  it('answers with an error when the engine returns a report that breaks the contract', async () => {
    const hub = await startHub();
    startLink(hub, {
      handleProbe: async (request) => {
        const report = reportFor(request);
        return { ...report, session: { ...report.session, durationMs: -1 } };
      },
    });
    const connection = await hub.nextConnection();
    await connection.take('hello');
    connection.send(probeMessage('odd'));
    expect(await connection.take('error', 'odd')).toMatchObject({
      message: 'the prober produced an invalid report',
    });
  });

  it('reconnects and says hello again after the edge drops the connection', async () => {
    const hub = await startHub();
    const link = startLink(hub);
    const first = await hub.nextConnection();
    await first.take('hello');
    const disconnected = eventCount(link, 'disconnected', 1);
    first.socket.terminate();

    expect((await disconnected)[0]?.[0].code).toBe(1006);
    const second = await hub.nextConnection();
    expect(await second.take('hello')).toMatchObject({ region: 'eu-test', capacity: 4 });
    expect(link.reconnects).toBe(1);
    expect(link.linked).toBe(true);
  });

  it('drops a link that stays silent and dials again', async () => {
    // autoPong off: the hub reads the prober's pings but never answers them.
    const hub = await startHub({ autoPong: false });
    const link = startLink(hub, { heartbeat: { intervalMs: 5, deadAfterMs: 40 } });
    const first = await hub.nextConnection();
    await first.take('hello');
    await first.closed;

    const second = await hub.nextConnection();
    await second.take('hello');
    expect(link.reconnects).toBeGreaterThanOrEqual(1);
    expect(logLines.join('')).toContain('link silent');
  });

  it('drains: says so, refuses new work, delivers in-flight results, then closes with 1000', async () => {
    const hub = await startHub();
    const releases = new Map([
      ['first@example.test', deferred<void>()],
      ['second@example.test', deferred<void>()],
    ]);
    const started: string[] = [];
    const bothStarted = deferred<void>();
    const link = startLink(hub, {
      handleProbe: async (request) => {
        const email = request.emails[0]!;
        started.push(email);
        if (started.length === 2) bothStarted.resolve();
        await releases.get(email)?.promise;
        return reportFor(request);
      },
    });
    const connection = await hub.nextConnection();
    await connection.take('hello');
    connection.send(probeMessage('in-flight-1', 'first@example.test'));
    connection.send(probeMessage('in-flight-2', 'second@example.test'));
    await bothStarted.promise;

    const drained = link.drain();
    await connection.take('drain');
    expect(link.draining).toBe(true);
    connection.send(probeMessage('late'));
    expect(await connection.take('error', 'late')).toEqual({
      type: 'error',
      id: 'late',
      message: 'draining',
    });

    releases.get('second@example.test')?.resolve();
    await connection.take('result', 'in-flight-2');
    releases.get('first@example.test')?.resolve();
    await connection.take('result', 'in-flight-1');

    expect(await connection.closed).toEqual({ code: 1000, reason: 'prober drained' });
    expect(await drained).toEqual({ abandoned: 0 });
    expect(link.state).toBe('closed');
    expect(started).toEqual(['first@example.test', 'second@example.test']);
  });

  it('gives up on probes that outlast the drain timeout and still closes cleanly', async () => {
    const hub = await startHub();
    const link = startLink(hub, {
      drainTimeoutMs: 20,
      handleProbe: () => new Promise<ProbeReport>(() => {}),
    });
    const connection = await hub.nextConnection();
    await connection.take('hello');
    connection.send(probeMessage('stuck'));
    connection.send({ type: 'ping', id: 'sync', ts: 0 });
    await connection.take('pong', 'sync');

    expect(await link.drain()).toEqual({ abandoned: 1 });
    expect((await connection.closed).code).toBe(1000);
    expect(logLines.join('')).toContain('drain timed out');
  });
});

// ——— The real daemon: `node prober/src/cli.ts run` against the fake hub and a fake MX.

const CLI = fileURLToPath(new URL('../cli.ts', import.meta.url));

async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('rcpt-prober run (a real process)', () => {
  it('drains on SIGTERM: says drain, delivers the in-flight result, closes with 1000 and exits 0', async () => {
    const hub = await startHub();
    // A mail server that holds every RCPT answer until the test lets go.
    const rcptArrived = deferred<void>();
    const releaseRcpt = deferred<void>();
    const mailServer = new SMTPServer({
      authOptional: true,
      disabledCommands: ['AUTH', 'STARTTLS'],
      logger: false,
      onRcptTo(_address, _session, callback) {
        rcptArrived.resolve();
        void releaseRcpt.promise.then(() => callback());
      },
    });
    mailServers.push(mailServer);
    mailServer.listen(0, '127.0.0.1');
    await once(mailServer.server, 'listening');
    const smtpPort = (mailServer.server.address() as AddressInfo).port;
    const opsPort = await freePort();

    const child = spawn(process.execPath, [CLI, 'run'], {
      env: {
        PATH: process.env.PATH,
        EDGE_URL: `http://127.0.0.1:${(hub.server.address() as AddressInfo).port}`,
        PROBER_TOKEN: TOKEN,
        REGION: 'eu-test',
        CAPACITY: '3',
        SMTP_PORT: String(smtpPort),
        ALLOW_PRIVATE_TARGETS: 'true',
        HELO_NAME: 'probe.rcpt.test',
        OPS_HOST: '127.0.0.1',
        OPS_PORT: String(opsPort),
        DRAIN_TIMEOUT_MS: '15000',
        LOG_LEVEL: 'debug',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    const output: string[] = [];
    child.stdout?.on('data', (chunk: Buffer) => output.push(chunk.toString()));
    child.stderr?.on('data', (chunk: Buffer) => output.push(chunk.toString()));

    // A prober that dies at start fails the test at once, with its output, not at the timeout.
    const diedEarly = once(child, 'exit').then(([code]) => {
      throw new Error(`the prober exited with ${code} before linking:\n${output.join('')}`);
    });
    const connection = await Promise.race([hub.nextConnection(), diedEarly]);
    diedEarly.catch(() => {});
    expect(await connection.take('hello')).toMatchObject({ region: 'eu-test', capacity: 3, version: 1 });
    expect(connection.request.headers.authorization).toBe(`Bearer ${TOKEN}`);
    const linked = await fetch(`http://127.0.0.1:${opsPort}/healthz`);
    expect(linked.status).toBe(200);

    connection.send(probeMessage('held', 'alice@example.test'));
    await rcptArrived.promise;
    const exited = once(child, 'exit');
    child.kill('SIGTERM');

    await connection.take('drain');
    expect((await fetch(`http://127.0.0.1:${opsPort}/healthz`)).status).toBe(503);
    connection.send(probeMessage('too-late'));
    expect(await connection.take('error', 'too-late')).toMatchObject({ message: 'draining' });
    releaseRcpt.resolve();

    const result = await connection.take('result', 'held');
    expect(result.perAddress).toEqual([
      { email: 'alice@example.test', reply: expect.objectContaining({ code: 250 }), failure: null },
    ]);
    expect((await connection.closed).code).toBe(1000);
    expect(await exited).toEqual([0, null]);
    const logs = output.join('');
    expect(logs).toContain('draining');
    expect(logs).not.toContain(TOKEN);
  });
});

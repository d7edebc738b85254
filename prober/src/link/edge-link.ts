// The prober's link to its region's ProberHub on the edge (docs/architecture.md, "The prober
// link"). The prober dials out, so it needs no inbound port: it keeps one WebSocket open,
// says hello, answers probes and pings, reconnects with jittered backoff when the link drops,
// and on drain finishes what it has without taking more.
import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import type { IncomingMessage } from 'node:http';
import {
  EdgeMessage,
  type EgressInfo,
  type EgressMemoryMessage,
  type EgressStateMessage,
  PROBER_PROTOCOL_VERSION,
  type ProbeMessage,
  ProbeReport,
  type ProbeRequest,
  type ProberMessage,
} from '@rcpt/shared/contract/prober';
import { type RawData, WebSocket } from 'ws';
import type { Logger } from '../ops/logger.ts';

/** Where a prober of `region` connects: the edge's base URL plus the hub's path. */
export function proberConnectUrl(edgeUrl: URL, region: string): URL {
  const url = new URL(edgeUrl.href);
  url.protocol = url.protocol === 'https:' || url.protocol === 'wss:' ? 'wss:' : 'ws:';
  url.pathname = `${url.pathname.replace(/\/+$/, '')}/internal/probers/connect`;
  url.searchParams.set('region', region);
  return url;
}

export interface BackoffPolicy {
  /** First reconnect delay's ceiling; it doubles per failed attempt up to `capMs`. */
  baseMs: number;
  capMs: number;
  /** A connection that stayed up this long resets the backoff to `baseMs`. */
  stableAfterMs: number;
}

export interface HeartbeatPolicy {
  /** How often a WebSocket ping frame is sent. */
  intervalMs: number;
  /** A link from which nothing (message, ping or pong) arrived for this long is dead. */
  deadAfterMs: number;
}

export const DEFAULT_BACKOFF: BackoffPolicy = { baseMs: 500, capMs: 30_000, stableAfterMs: 30_000 };
export const DEFAULT_HEARTBEAT: HeartbeatPolicy = { intervalMs: 15_000, deadAfterMs: 45_000 };

/** Results kept for answering a re-sent probe id without probing again. */
const RECENT_RESULTS = 1_000;
/** How long a closing handshake may take before the socket is simply cut. */
const CLOSE_GRACE_MS = 2_000;
/** An inbound message above this is not a probe we could have been sent (100 addresses, 20 MX). */
const MAX_INBOUND_BYTES = 1024 * 1024;
/** Most of a refused upgrade's body read for its error code and message. */
const MAX_REFUSAL_BYTES = 8 * 1024;
/** How long the body of a refused upgrade is waited for. */
const REFUSAL_READ_MS = 5_000;

/** What the edge said when it refused the link: its error body's `code` and `message`, if JSON. */
interface LinkRefusal {
  status: number;
  code: string | null;
  message: string | null;
}

/** Reads a refused upgrade's error body (`{ code, message }`), bounded in size and time. */
function readRefusal(response: IncomingMessage): Promise<LinkRefusal> {
  const status = response.statusCode ?? 0;
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const finish = () => {
      clearTimeout(timer);
      response.removeAllListeners('data');
      response.resume();
      let body: { code?: unknown; message?: unknown } = {};
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as typeof body;
      } catch {
        // Not the edge's JSON (a proxy's page, say): the status alone says what happened.
      }
      resolve({
        status,
        code: typeof body?.code === 'string' ? body.code : null,
        message: typeof body?.message === 'string' ? body.message.slice(0, 500) : null,
      });
    };
    const timer = setTimeout(finish, REFUSAL_READ_MS);
    response.on('data', (chunk: Buffer) => {
      size += chunk.byteLength;
      if (size <= MAX_REFUSAL_BYTES) chunks.push(chunk);
      else finish();
    });
    response.once('end', finish);
    response.once('error', finish);
  });
}

export interface EdgeLinkOptions {
  /** The hub's URL, from `proberConnectUrl`. */
  url: URL;
  token: string;
  region: string;
  /** Most probes worked on at once; one more is refused with an "over capacity" error. */
  capacity: number;
  /** Sessions opened at once to one MX host, told to the hub so it sends no more probes of one host. */
  perMxConcurrency?: number;
  handleProbe: (request: ProbeRequest) => Promise<ProbeReport>;
  /** Where the prober's sessions go out from, told to the hub in the hello. */
  egresses?: readonly EgressInfo[];
  /** The egresses' blocks and hourly use now: sent after the hello and on `sendEgressState()`. */
  egressState?: () => Omit<EgressStateMessage, 'type' | 'id'>;
  /** Takes back what the hub remembers of the egresses (sent after the hello); the state is sent again after. */
  restoreEgresses?: (memory: Omit<EgressMemoryMessage, 'type' | 'id'>) => void;
  logger: Logger;
  /** Bound on `drain()`'s wait for in-flight probes. */
  drainTimeoutMs: number;
  backoff?: BackoffPolicy;
  heartbeat?: HeartbeatPolicy;
  handshakeTimeoutMs?: number;
  /** Source of jitter in [0, 1); injectable so tests can pin the delays. */
  random?: () => number;
}

export type LinkState = 'idle' | 'connecting' | 'open' | 'waiting' | 'closed';

export interface EdgeLinkEvents {
  /** The socket opened and hello was sent. */
  connected: [];
  disconnected: [{ code: number; reason: string }];
  /** A new connection attempt is scheduled after `delayMs`. */
  reconnecting: [{ attempt: number; delayMs: number }];
  /** The edge answered the upgrade with 401 or 403 for the token. */
  tokenRejected: [{ status: number }];
  /** The edge refused the link because it never sends work to this prober's region. */
  regionRefused: [{ region: string; message: string }];
  drained: [{ abandoned: number }];
}

/** What a probe id was answered with; kept so a re-sent id gets the same answer. */
type ProbeAnswer = { kind: 'result'; report: ProbeReport } | { kind: 'error'; message: string };

export interface DrainOutcome {
  /** Probes still running when the drain timeout ran out; their answers were not sent. */
  abandoned: number;
}

export class EdgeLink extends EventEmitter<EdgeLinkEvents> {
  readonly #options: EdgeLinkOptions;
  readonly #backoff: BackoffPolicy;
  readonly #heartbeat: HeartbeatPolicy;
  readonly #random: () => number;
  readonly #log: Logger;

  #state: LinkState = 'idle';
  #socket: WebSocket | null = null;
  /** Consecutive connection failures, the exponent of the next backoff. */
  #failures = 0;
  #reconnects = 0;
  #reconnectTimer: NodeJS.Timeout | null = null;
  #heartbeatTimer: NodeJS.Timeout | null = null;
  #lastHeardAt = 0;

  readonly #inFlight = new Map<string, Promise<ProbeAnswer>>();
  /** Insertion-ordered, so the first key is the least recently used. */
  readonly #recent = new Map<string, ProbeAnswer>();
  #drain: Promise<DrainOutcome> | null = null;

  constructor(options: EdgeLinkOptions) {
    super();
    this.#options = options;
    this.#backoff = options.backoff ?? DEFAULT_BACKOFF;
    this.#heartbeat = options.heartbeat ?? DEFAULT_HEARTBEAT;
    this.#random = options.random ?? Math.random;
    // The URL carries no secret (the token is a header), so it is safe in every line.
    this.#log = options.logger.child({
      component: 'edge-link',
      edge: options.url.origin,
      region: options.region,
    });
  }

  get state(): LinkState {
    return this.#state;
  }

  /** Up and introduced: the hub can send work. */
  get linked(): boolean {
    return this.#state === 'open';
  }

  get inFlight(): number {
    return this.#inFlight.size;
  }

  get draining(): boolean {
    return this.#drain !== null;
  }

  /** Reconnections scheduled so far. */
  get reconnects(): number {
    return this.#reconnects;
  }

  start(): void {
    if (this.#state !== 'idle') return;
    this.#connect();
  }

  /**
   * Tells the hub how the egresses stand (a block began or ended). Dropped while the link is
   * down: the hello that follows a reconnection sends it again.
   */
  sendEgressState(): void {
    const state = this.#options.egressState?.();
    if (state) this.#send({ type: 'egress_state', id: randomUUID(), ...state });
  }

  /**
   * Tells the hub the prober is stopping, refuses new probes, waits (up to the drain timeout)
   * for the in-flight ones to be answered, then closes the link with 1000.
   */
  drain(timeoutMs: number = this.#options.drainTimeoutMs): Promise<DrainOutcome> {
    this.#drain ??= this.#drainNow(timeoutMs);
    return this.#drain;
  }

  /** Cuts the link at once, without a drain; in-flight answers are dropped. */
  close(): void {
    this.#drain ??= Promise.resolve({ abandoned: this.#inFlight.size });
    this.#stopTimers();
    this.#state = 'closed';
    this.#socket?.terminate();
  }

  async #drainNow(timeoutMs: number): Promise<DrainOutcome> {
    if (this.#reconnectTimer) clearTimeout(this.#reconnectTimer);
    this.#reconnectTimer = null;
    this.#log.info({ inFlight: this.#inFlight.size, timeoutMs }, 'draining: no new probes');
    this.#send({ type: 'drain', id: randomUUID() });

    // Each in-flight promise already has its "send the answer" reaction registered, so by the
    // time allSettled resolves every answer that could be sent has been.
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, timeoutMs);
    });
    await Promise.race([Promise.allSettled([...this.#inFlight.values()]), deadline]);
    clearTimeout(timer);

    const abandoned = this.#inFlight.size;
    if (abandoned > 0) this.#log.warn({ abandoned }, 'drain timed out: probes still running are abandoned');
    await this.#closeSocket(1000, 'prober drained');
    this.#stopTimers();
    this.#state = 'closed';
    this.#log.info({ abandoned }, 'drained');
    this.emit('drained', { abandoned });
    return { abandoned };
  }

  #connect(): void {
    this.#state = 'connecting';
    const socket = new WebSocket(this.#options.url, {
      headers: { authorization: `Bearer ${this.#options.token}` },
      handshakeTimeout: this.#options.handshakeTimeoutMs ?? 15_000,
      maxPayload: MAX_INBOUND_BYTES,
      perMessageDeflate: false,
    });
    this.#socket = socket;
    let refusal: LinkRefusal | null = null;
    let openedAt: number | null = null;

    socket.on('unexpected-response', (_request, response) => {
      // The edge says why in its JSON error body: read it before the socket goes.
      refusal = { status: response.statusCode ?? 0, code: null, message: null };
      void readRefusal(response).then((read) => {
        refusal = read;
        socket.terminate();
      });
    });
    socket.on('open', () => {
      openedAt = Date.now();
      this.#state = 'open';
      this.#heard();
      this.#startHeartbeat(socket);
      this.#send({
        type: 'hello',
        id: randomUUID(),
        version: PROBER_PROTOCOL_VERSION,
        region: this.#options.region,
        capacity: this.#options.capacity,
        ...(this.#options.perMxConcurrency ? { perMxConcurrency: this.#options.perMxConcurrency } : {}),
        ...(this.#options.egresses ? { egresses: [...this.#options.egresses] } : {}),
      });
      this.sendEgressState();
      // A drain asked for while connecting still owes the hub its notice.
      if (this.#drain) this.#send({ type: 'drain', id: randomUUID() });
      this.#log.info({ capacity: this.#options.capacity }, 'linked to the edge');
      this.emit('connected');
    });
    socket.on('message', (data) => {
      this.#heard();
      this.#onMessage(data);
    });
    socket.on('ping', () => this.#heard());
    socket.on('pong', () => this.#heard());
    socket.on('error', (error) => {
      // 'close' follows and decides what happens next; this only says why.
      if (refusal === null) this.#log.warn({ error: error.message }, 'link error');
    });
    socket.on('close', (code, reasonBytes) => {
      if (this.#socket === socket) this.#socket = null;
      this.#stopHeartbeat();
      const reason = reasonBytes.toString();
      if (openedAt !== null) {
        this.#log.warn({ code, reason, inFlight: this.#inFlight.size }, 'link closed');
        this.emit('disconnected', { code, reason });
        if (Date.now() - openedAt >= this.#backoff.stableAfterMs) this.#failures = 0;
      }
      if (this.#drain || this.#state === 'closed') {
        this.#state = 'closed';
        return;
      }
      this.#afterFailure(code, reason, refusal);
    });
  }

  #afterFailure(code: number, reason: string, refusal: LinkRefusal | null): void {
    let persistent = false;
    const said = refusal?.message ? { edgeSays: refusal.message } : {};
    if (refusal?.code === 'PROBER_REGION_UNUSED') {
      // The edge's configuration, not the link, must change: wait the longest delay meanwhile.
      persistent = true;
      this.#log.error(
        { status: refusal.status, code: refusal.code, ...said },
        `the edge does not use region "${this.#options.region}" (its PROBER_REGIONS): this prober will get no work until the region is added there or REGION and PROBER_TOKEN name a listed one`,
      );
      this.emit('regionRefused', { region: this.#options.region, message: refusal.message ?? '' });
    } else if (refusal?.status === 401 || refusal?.status === 403) {
      // Retrying at once cannot fix a bad token: wait the longest delay, the operator must act.
      persistent = true;
      this.#log.error(
        { status: refusal.status, ...(refusal.code ? { code: refusal.code } : {}), ...said },
        'token rejected by the edge: check PROBER_TOKEN (create one with `npm run admin -- prober-token create`)',
      );
      this.emit('tokenRejected', { status: refusal.status });
    } else if (refusal !== null) {
      this.#log.warn({ status: refusal.status, ...said }, 'edge refused the link upgrade');
    } else if (code === 4000) {
      // The hub closes with 4000 when it does not speak our protocol version (a deploy skew).
      persistent = true;
      this.#log.error({ code, reason }, 'edge does not accept this prober version');
    }
    this.#scheduleReconnect(persistent);
  }

  #scheduleReconnect(persistent: boolean): void {
    const { baseMs, capMs } = this.#backoff;
    // Full jitter (delay drawn from [0, ceiling)) spreads a fleet that lost the edge at the
    // same moment; a persistent refusal waits between half the cap and the cap, never less.
    const delayMs = persistent
      ? Math.round(capMs / 2 + (this.#random() * capMs) / 2)
      : Math.round(this.#random() * Math.min(capMs, baseMs * 2 ** this.#failures));
    this.#failures = Math.min(this.#failures + 1, 30);
    this.#reconnects += 1;
    this.#state = 'waiting';
    this.#log.info({ attempt: this.#failures, delayMs }, 'reconnecting');
    this.emit('reconnecting', { attempt: this.#failures, delayMs });
    this.#reconnectTimer = setTimeout(() => {
      this.#reconnectTimer = null;
      if (!this.#drain && this.#state === 'waiting') this.#connect();
    }, delayMs);
  }

  #onMessage(data: RawData): void {
    let json: unknown;
    try {
      json = JSON.parse(data.toString());
    } catch {
      this.#log.warn('ignored a message that is not JSON');
      return;
    }
    const parsed = EdgeMessage.safeParse(json);
    if (!parsed.success) {
      // Paths and codes only: values may hold addresses, which do not belong in logs.
      const issues = parsed.error.issues.slice(0, 5).map((issue) => `${issue.path.join('.')}: ${issue.code}`);
      const { type, id } = (typeof json === 'object' && json !== null ? json : {}) as {
        type?: unknown;
        id?: unknown;
      };
      this.#log.warn({ type: String(type), issues }, 'ignored an invalid message from the edge');
      // Answering a malformed probe spares the hub waiting out its deadline for nothing.
      if (type === 'probe' && typeof id === 'string' && id.length > 0 && id.length <= 100) {
        this.#send({ type: 'error', id, message: `invalid probe message (${issues.join('; ')})` });
      }
      return;
    }
    const message = parsed.data;
    if (message.type === 'ping') {
      // The ping's own timestamp comes back, so the hub measures the round trip on one clock.
      this.#send({ type: 'pong', id: message.id, ts: message.ts });
      return;
    }
    if (message.type === 'egress_memory') {
      const { type: _type, id: _id, ...memory } = message;
      this.#options.restoreEgresses?.(memory);
      this.#log.info(
        { blocks: memory.blocks.length, warmUps: memory.warmUps.length, uses: memory.uses.length },
        'took back what the hub remembers of the egresses',
      );
      this.sendEgressState();
      return;
    }
    this.#onProbe(message);
  }

  #onProbe(message: ProbeMessage): void {
    const { type: _type, id, ...request } = message;
    const answered = this.#recent.get(id);
    if (answered) {
      // The hub re-sent an id it already has an answer for (a retry after a lost frame):
      // answer again without probing the mailbox a second time.
      this.#recent.delete(id);
      this.#recent.set(id, answered);
      this.#log.debug({ id }, 'duplicate probe: re-sending the answer');
      this.#answer(id, answered);
      return;
    }
    const running = this.#inFlight.get(id);
    if (running) {
      this.#log.debug({ id }, 'duplicate probe: joining the one in flight');
      void running.then((answer) => this.#answer(id, answer));
      return;
    }
    if (this.#drain) {
      this.#answer(id, { kind: 'error', message: 'draining' });
      return;
    }
    if (this.#inFlight.size >= this.#options.capacity) {
      this.#log.warn({ id, capacity: this.#options.capacity }, 'probe refused: over capacity');
      this.#answer(id, { kind: 'error', message: 'over capacity' });
      return;
    }
    const pending = this.#runProbe(id, request).then((answer) => {
      this.#inFlight.delete(id);
      // Errors are not kept: a retry of a failed probe may well succeed.
      if (answer.kind === 'result') this.#remember(id, answer);
      return answer;
    });
    this.#inFlight.set(id, pending);
    void pending.then((answer) => this.#answer(id, answer));
  }

  async #runProbe(id: string, request: ProbeRequest): Promise<ProbeAnswer> {
    try {
      const report = await this.#options.handleProbe(request);
      // The hub drops a result that fails its schema and waits out its deadline; an error
      // now is the better answer.
      const checked = ProbeReport.safeParse(report);
      if (!checked.success) {
        const issues = checked.error.issues
          .slice(0, 5)
          .map((issue) => `${issue.path.join('.')}: ${issue.code}`);
        this.#log.error({ id, issues }, 'the engine produced an invalid report');
        return { kind: 'error', message: 'the prober produced an invalid report' };
      }
      return { kind: 'result', report: checked.data };
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      this.#log.error({ id, error: message }, 'probe failed');
      return { kind: 'error', message: `probe failed: ${message}` };
    }
  }

  #remember(id: string, answer: ProbeAnswer): void {
    this.#recent.set(id, answer);
    if (this.#recent.size > RECENT_RESULTS) {
      const oldest = this.#recent.keys().next().value;
      if (oldest !== undefined) this.#recent.delete(oldest);
    }
  }

  #answer(id: string, answer: ProbeAnswer): void {
    const message: ProberMessage =
      answer.kind === 'result'
        ? { type: 'result', id, ...answer.report }
        : { type: 'error', id, message: answer.message };
    if (!this.#send(message)) {
      // The hub that asked has already given up on this link and retried elsewhere.
      this.#log.warn({ id, answer: answer.kind }, 'answer not delivered: the link is down');
    }
  }

  #send(message: ProberMessage): boolean {
    const socket = this.#socket;
    if (!socket || socket.readyState !== WebSocket.OPEN) return false;
    socket.send(JSON.stringify(message));
    return true;
  }

  #heard(): void {
    this.#lastHeardAt = Date.now();
  }

  #startHeartbeat(socket: WebSocket): void {
    this.#stopHeartbeat();
    this.#heartbeatTimer = setInterval(() => {
      // A half-open TCP connection (NAT timeout, a dead edge node) shows no error: only
      // silence. Pings make the peer talk; a link that stays silent is cut and redialled.
      if (Date.now() - this.#lastHeardAt > this.#heartbeat.deadAfterMs) {
        this.#log.warn({ silentMs: Date.now() - this.#lastHeardAt }, 'link silent: dropping it');
        socket.terminate();
        return;
      }
      socket.ping();
    }, this.#heartbeat.intervalMs);
  }

  #stopHeartbeat(): void {
    if (this.#heartbeatTimer) clearInterval(this.#heartbeatTimer);
    this.#heartbeatTimer = null;
  }

  #stopTimers(): void {
    this.#stopHeartbeat();
    if (this.#reconnectTimer) clearTimeout(this.#reconnectTimer);
    this.#reconnectTimer = null;
  }

  async #closeSocket(code: number, reason: string): Promise<void> {
    const socket = this.#socket;
    if (!socket || socket.readyState === WebSocket.CLOSED) return;
    if (socket.readyState === WebSocket.CONNECTING) {
      socket.terminate();
      return;
    }
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    socket.close(code, reason);
    let timer: NodeJS.Timeout | undefined;
    const grace = new Promise<void>((resolve) => {
      timer = setTimeout(() => {
        socket.terminate();
        resolve();
      }, CLOSE_GRACE_MS);
    });
    await Promise.race([closed, grace]);
    clearTimeout(timer);
  }
}

// ProberHub: one Durable Object per region. Probers dial in over WebSocket (hibernation API,
// so idle links cost nothing). The hub is a scheduler: single calls (`probe`, awaited) and
// batch work (`dispatch`, handed over and settled here as each probe finishes) wait in lanes
// and go out as probers have room —
// - single calls first, then batch work round-robin by account, so one large list never
//   starves another customer's call or small job;
// - every probe of one MX host goes to one prober (rendezvous hashing over the ready probers,
//   so a disconnect moves only that prober's hosts), and the fleet never has more probes of one
//   host out than one prober opens sessions to it: per-host politeness holds across probers;
// - a prober that drops or refuses a probe gets it re-sent elsewhere; waiting for a prober
//   never ends as a charged timeout (docs/architecture.md, "A batch").

import { DurableObject } from 'cloudflare:workers';
import {
  type EdgeMessage,
  PROBER_PROTOCOL_VERSION,
  type ProbeRequest,
  ProberMessage,
} from '@rcpt/shared/contract/prober';
import { gatewayOf } from '@rcpt/shared/dns/mail-tenant';
import type { ProbeOutcome } from '@rcpt/shared/verify/inputs';
import { acceptedByCatchAll } from '@rcpt/shared/verify/verdict';
import { configOf } from '../config.ts';
import { errorFields, log } from '../logger.ts';
import { meter, meterFrom } from '../meter.ts';
import { verifyQueueOf } from '../services/batch-queue.ts';
import { type BatchTask, type SettledTask, settleBatchWork } from '../services/batch-results.ts';
import { domainFactsOf } from '../services/verify-deps.ts';
import { createDb } from '../storage/db.ts';
import { liveProberTokenIds } from '../storage/prober-tokens.ts';
import { FleetEgresses, type ProberEgresses, refusedAtEveryEgress } from './egress-blocks.ts';

/** Header the Worker sets after it has authenticated the prober's token. */
/**
 * Most probes the hub keeps in flight on one prober, whatever its hello claims: a prober with
 * a leaked token cannot take a region's whole queue and hold it until the deadlines.
 */
export const MAX_PROBER_CAPACITY = 500;

export const PROBER_TOKEN_ID_HEADER = 'X-Rcpt-Prober-Token-Id';

/** Time kept back from the caller's deadline for the answer to travel back. */
const DEADLINE_MARGIN_MS = 250;
/** How often connected probers' tokens are checked again, so a revoked one is dropped. */
export const TOKEN_RECHECK_MS = 60_000;
/** Close code for a prober whose token was revoked while it was connected. */
export const TOKEN_REVOKED_CLOSE_CODE = 4001;

interface ProberAttachment {
  proberId: string;
  tokenId: string;
  region: string;
  capacity: number;
  /** Sessions the prober opens at once to one MX host (from its hello). */
  perMxConcurrency: number;
  ready: boolean; // said hello with a protocol version we speak
  draining: boolean;
  connectedAt: number;
}

/** Probes of one MX host out at once when a prober's hello does not say (the prober's default). */
const DEFAULT_PER_MX_CONCURRENCY = 5;
/** A probe re-sent this often (its probers dropped or refused it) is rcpt's failure. */
const MAX_RESENDS = 3;
/** How long finished batch probes are gathered before their results are written together. */
const SETTLE_GATHER_MS = 20;
/** How far into one account's lane the scheduler looks for a probe whose host has room. */
const LANE_SCAN_LIMIT = 256;

/** A probe waiting for, or out at, a prober. */
interface HubProbe {
  lane: 'single' | 'batch';
  accountId: string;
  /** The MX host every probe of which goes to one prober. */
  mxKey: string;
  request: ProbeRequest;
  /** When the answer is due (ms since the epoch): the caller's deadline or the job's. */
  deadlineAt: number;
  resends: number;
  /** Probers that refused it or dropped it: the next one in hash order takes it. */
  passedOver: Set<string>;
  finish: (outcome: ProbeOutcome) => void;
}

interface Running {
  probe: HubProbe;
  proberId: string;
  timer: ReturnType<typeof setTimeout>;
}

interface ReadyProber {
  ws: WebSocket;
  attachment: ProberAttachment;
}

export interface ProberStatus {
  proberId: string;
  region: string;
  capacity: number;
  perMxConcurrency: number;
  inFlight: number;
  ready: boolean;
  draining: boolean;
  connectedAt: number;
  /** Its egresses, their blocks and hourly use, as it last reported them. */
  egress: ProberEgresses;
}

export class ProberHub extends DurableObject<Env> {
  // In memory only: a probe waiting or out keeps the object awake (its timers), and batch work
  // is accepted only while a prober is connected; what a restart loses, the job's lease and
  // deadline recover (docs/operations.md).
  #single: HubProbe[] = [];
  #batch = new Map<string, HubProbe[]>();
  /** Accounts with batch work, in round-robin order; the next turn is at index 0. */
  #accounts: string[] = [];
  #running = new Map<string, Running>();
  #inFlight = new Map<string, number>();
  #mxInFlight = new Map<string, number>();
  /** Probers whose link closed: their socket may still be listed while its close is handled. */
  #gone = new Set<string>();
  #settling: SettledTask[] = [];
  /**
   * Each link's attachment as last written: the scheduler reads every link's on each probe it
   * starts or ends, and deserialising it each time was a tenth of the hub's work. After a
   * hibernation the map is empty and each attachment is read back once.
   */
  #attachments = new WeakMap<WebSocket, ProberAttachment>();
  #settleTimer: ReturnType<typeof setTimeout> | null = null;
  #egresses = new FleetEgresses();

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    meterFrom(env as { RCPT_METER?: string });
  }

  override async fetch(request: Request): Promise<Response> {
    meter({ doRequests: 1 });
    const tokenId = request.headers.get(PROBER_TOKEN_ID_HEADER);
    if (request.headers.get('Upgrade')?.toLowerCase() !== 'websocket' || !tokenId) {
      return new Response('expected an authenticated WebSocket upgrade', { status: 400 });
    }
    const region = new URL(request.url).searchParams.get('region') ?? 'default';
    const { 0: client, 1: server } = new WebSocketPair();
    const proberId = crypto.randomUUID();
    this.ctx.acceptWebSocket(server, [proberId]);
    this.#attach(server, {
      proberId,
      tokenId,
      region,
      capacity: 1,
      perMxConcurrency: DEFAULT_PER_MX_CONCURRENCY,
      ready: false,
      draining: false,
      connectedAt: Date.now(),
    } satisfies ProberAttachment);
    if ((await this.ctx.storage.getAlarm()) === null)
      await this.ctx.storage.setAlarm(Date.now() + TOKEN_RECHECK_MS);
    return new Response(null, { status: 101, webSocket: client });
  }

  /** Drops probers whose token was revoked since they connected; runs while any is connected. */
  override async alarm(): Promise<void> {
    meter({ doRequests: 1 });
    await this.dropRevokedProbers();
    if (this.ctx.getWebSockets().length > 0) await this.ctx.storage.setAlarm(Date.now() + TOKEN_RECHECK_MS);
  }

  /** Closes the link of every prober whose token is revoked (or gone); returns how many. */
  async dropRevokedProbers(): Promise<number> {
    const sockets = this.ctx.getWebSockets();
    const tokenIds = [...new Set(sockets.map((ws) => this.#attachmentOf(ws).tokenId))];
    if (tokenIds.length === 0) return 0;
    const live = await liveProberTokenIds(createDb(this.env.DB), tokenIds);
    let dropped = 0;
    for (const ws of sockets) {
      if (live.has(this.#attachmentOf(ws).tokenId)) continue;
      this.#forget(ws);
      ws.close(TOKEN_REVOKED_CLOSE_CODE, 'token revoked');
      dropped++;
    }
    return dropped;
  }

  override async webSocketMessage(ws: WebSocket, data: string | ArrayBuffer): Promise<void> {
    meter({ doWebSocketMessages: 1 });
    const attachment = this.#attachmentOf(ws);
    let parsed: ProberMessage;
    try {
      const result = ProberMessage.safeParse(
        JSON.parse(typeof data === 'string' ? data : new TextDecoder().decode(data)),
      );
      if (!result.success) throw new Error(result.error.issues[0]?.message ?? 'invalid message');
      parsed = result.data;
    } catch (error) {
      log.warn('invalid prober message', { proberId: attachment.proberId, error: String(error) });
      return;
    }
    switch (parsed.type) {
      case 'hello': {
        if (parsed.version !== PROBER_PROTOCOL_VERSION) {
          ws.close(4000, `protocol version ${parsed.version} not supported`);
          return;
        }
        // The region is the token's (set at connect); a prober that says otherwise is misconfigured.
        if (parsed.region !== attachment.region) {
          ws.close(4003, `this token is for region ${attachment.region}`);
          return;
        }
        this.#attach(ws, {
          ...attachment,
          ready: true,
          capacity: Math.min(parsed.capacity, MAX_PROBER_CAPACITY),
          perMxConcurrency: parsed.perMxConcurrency ?? DEFAULT_PER_MX_CONCURRENCY,
        });
        this.#egresses.linked(attachment.proberId, parsed.egresses);
        this.#pump();
        return;
      }
      case 'egress_state':
        this.#egresses.reported(attachment.proberId, parsed, Date.now());
        return;
      case 'result': {
        const { type: _type, id, ...report } = parsed;
        if (!this.#answersOwnProbe(attachment, id, 'result')) return;
        // Every egress of that prober is refused at this MX: another prober may send from
        // addresses that are not (docs/operations.md, "Egress addresses").
        if (refusedAtEveryEgress(report) && this.#passToAnotherProber(id)) return;
        this.#end(id, { kind: 'report', report });
        return;
      }
      case 'error':
        // Over capacity or draining: another prober (or this one later) gets it.
        if (this.#answersOwnProbe(attachment, parsed.id, 'error')) this.#resend(parsed.id);
        return;
      case 'drain':
        this.#attach(ws, { ...attachment, draining: true });
        this.#pump();
        return;
      case 'pong':
        return;
    }
  }

  override async webSocketClose(ws: WebSocket, code: number): Promise<void> {
    this.#forget(ws);
    // Completes the closing handshake; 1005/1006 cannot be sent back.
    if (code !== 1005 && code !== 1006) ws.close(code, 'closing');
  }

  override async webSocketError(ws: WebSocket): Promise<void> {
    this.#forget(ws);
  }

  /**
   * One probe for a caller who waits (single verification): served before batch work. With no
   * prober linked yet it waits too, within its budget: a prober that links (or frees up) in
   * time answers it, and only one that never does makes it rcpt's own failure.
   */
  probe(request: ProbeRequest, deadlineMs: number): Promise<ProbeOutcome> {
    meter({ doRequests: 1 });
    return new Promise<ProbeOutcome>((resolve) => {
      const deadlineAt = Date.now() + deadlineMs;
      let done = false;
      const probe: HubProbe = {
        lane: 'single',
        accountId: '',
        mxKey: mxKeyOf(request),
        request,
        deadlineAt,
        resends: 0,
        passedOver: new Set(),
        finish: (outcome) => {
          if (done) return;
          done = true;
          clearTimeout(expiry);
          resolve(outcome);
        },
      };
      // Still waiting for a prober at the deadline: rcpt's own failure, said as such.
      const expiry = setTimeout(() => {
        if (this.#unqueue(probe))
          probe.finish({
            kind: 'unavailable',
            message: this.#hasReadyProber()
              ? 'no prober was free before the deadline'
              : 'no prober connected before the deadline',
          });
      }, deadlineMs);
      this.#single.push(probe);
      this.#pump();
    });
  }

  /**
   * Batch work handed over: the hub probes it as probers have room and records each answer
   * as it comes. Refused (false) when no prober is connected, so the caller can retry later.
   */
  dispatch(tasks: BatchTask[]): boolean {
    meter({ doRequests: 1 });
    if (!this.#hasReadyProber()) return false;
    const config = configOf(this.env);
    for (const task of tasks) {
      if (task.dns.kind !== 'mx') continue;
      const request: ProbeRequest = {
        emails: task.addresses.map((address) => address.email),
        domain: task.domain,
        mx: task.dns.mx,
        mailFrom: config.MAIL_FROM,
        helo: config.HELO_NAME,
        timeoutMs: config.BATCH_PROBE_TIMEOUT_MS,
        transcript: false,
      };
      const probe: HubProbe = {
        lane: 'batch',
        accountId: task.accountId,
        mxKey: mxKeyOf(request),
        request,
        deadlineAt: task.deadlineAt,
        resends: 0,
        passedOver: new Set(),
        finish: (outcome) => this.#afterBatchProbe(task, request, outcome),
      };
      this.#queueBatch(probe, 'back');
    }
    this.#pump();
    return true;
  }

  /** Connected probers, for operators and tests. */
  status(): ProberStatus[] {
    return this.ctx.getWebSockets().map((ws) => {
      const attachment = this.#attachmentOf(ws);
      return {
        proberId: attachment.proberId,
        region: attachment.region,
        capacity: attachment.capacity,
        perMxConcurrency: attachment.perMxConcurrency,
        inFlight: this.#inFlight.get(attachment.proberId) ?? 0,
        ready: attachment.ready,
        draining: attachment.draining,
        connectedAt: attachment.connectedAt,
        egress: this.#egresses.of(attachment.proberId, Date.now()),
      };
    });
  }

  /** Probes waiting for a prober, by lane: for operators, tests and the benchmark. */
  backlog(): { single: number; batch: number; running: number } {
    let batch = 0;
    for (const lane of this.#batch.values()) batch += lane.length;
    return { single: this.#single.length, batch, running: this.#running.size };
  }

  #attachmentOf(ws: WebSocket): ProberAttachment {
    let attachment = this.#attachments.get(ws);
    if (!attachment) {
      attachment = ws.deserializeAttachment() as ProberAttachment;
      this.#attachments.set(ws, attachment);
    }
    return attachment;
  }

  /** Stores a link's attachment with the socket (it outlives a hibernation) and in memory. */
  #attach(ws: WebSocket, attachment: ProberAttachment): void {
    ws.serializeAttachment(attachment);
    this.#attachments.set(ws, attachment);
  }

  // ── scheduling ───────────────────────────────────────────────────────────────────────

  /** Sends waiting probes while some prober has room for them. */
  #pump(): void {
    const probers = this.#readyProbers();
    if (probers.length === 0) {
      this.#failWaitingBatch('no prober connected');
      return;
    }
    const now = Date.now();
    // Hosts found at their limit in this pass stay there until it ends (it only starts probes):
    // a long lane of one busy host's probes is skipped without hashing each one again.
    const fullHosts = new Set<string>();
    const pick = (probe: HubProbe): ReadyProber | null => {
      if (fullHosts.has(probe.mxKey)) return null;
      // Every prober passed it over once: start the round again (resends are bounded).
      const target =
        affineProber(probers, probe.mxKey, probe.passedOver) ?? affineProber(probers, probe.mxKey, new Set());
      if (!target) return null;
      const { proberId, capacity, perMxConcurrency } = target.attachment;
      if ((this.#inFlight.get(proberId) ?? 0) >= capacity) return null;
      if ((this.#mxInFlight.get(probe.mxKey) ?? 0) >= perMxConcurrency) {
        fullHosts.add(probe.mxKey);
        return null;
      }
      return target;
    };
    for (let index = 0; index < this.#single.length; ) {
      const probe = this.#single[index] as HubProbe;
      const target = pick(probe);
      if (!target) {
        index++;
        continue;
      }
      this.#single.splice(index, 1);
      this.#start(probe, target, now);
    }
    // Batch work, one probe per account per turn.
    let idleTurns = 0;
    while (this.#accounts.length > 0 && idleTurns < this.#accounts.length) {
      const accountId = this.#accounts[0] as string;
      const lane = this.#batch.get(accountId) ?? [];
      let started = false;
      for (let index = 0; index < lane.length && index < LANE_SCAN_LIMIT; index++) {
        const probe = lane[index] as HubProbe;
        if (probe.deadlineAt <= now) {
          // The job's deadline came while it waited: its deadline sweep answers for it.
          lane.splice(index--, 1);
          probe.finish({ kind: 'unavailable', message: 'no prober was free before the job deadline' });
          continue;
        }
        const target = pick(probe);
        if (!target) continue;
        lane.splice(index, 1);
        this.#start(probe, target, now);
        started = true;
        break;
      }
      this.#accounts.shift();
      if (lane.length > 0) this.#accounts.push(accountId);
      else this.#batch.delete(accountId);
      idleTurns = started ? 0 : idleTurns + 1;
    }
  }

  #start(probe: HubProbe, target: ReadyProber, now: number): void {
    const id = crypto.randomUUID();
    const { proberId } = target.attachment;
    const budgetMs = Math.max(0, probe.deadlineAt - now - DEADLINE_MARGIN_MS);
    const message: EdgeMessage = {
      type: 'probe',
      id,
      ...probe.request,
      // The prober must answer before our deadline: give it a little less than we have.
      timeoutMs: Math.max(100, Math.min(probe.request.timeoutMs, budgetMs - DEADLINE_MARGIN_MS)),
    };
    const timer = setTimeout(() => this.#end(id, silentProber()), Math.max(budgetMs, 100));
    this.#running.set(id, { probe, proberId, timer });
    this.#inFlight.set(proberId, (this.#inFlight.get(proberId) ?? 0) + 1);
    this.#mxInFlight.set(probe.mxKey, (this.#mxInFlight.get(probe.mxKey) ?? 0) + 1);
    try {
      target.ws.send(JSON.stringify(message));
    } catch {
      this.#resend(id);
    }
  }

  /**
   * Whether probe `id` is out at the prober of this link. An answer for a probe sent to another
   * prober is refused and logged: a result writes the domain's catch-all fact every account
   * shares, so a prober speaks only for what it was asked. An answer for no running probe (one
   * already settled, late or twice) is dropped as before.
   */
  #answersOwnProbe(attachment: ProberAttachment, id: string, kind: 'result' | 'error'): boolean {
    const running = this.#running.get(id);
    if (!running || running.proberId === attachment.proberId) return running !== undefined;
    log.warn('prober answered a probe it was not given', {
      proberId: attachment.proberId,
      tokenId: attachment.tokenId,
      probeId: id,
      answer: kind,
    });
    return false;
  }

  /** A probe that came back with its outcome; its prober's and host's slots are free again. */
  #end(id: string, outcome: ProbeOutcome): void {
    const running = this.#release(id);
    if (!running) return; // late or duplicate answer: already settled
    running.probe.finish(outcome);
    this.#pump();
  }

  /**
   * Sends probe `id` to a prober that has not had it yet, when one is linked and its deadline
   * leaves time; false (nothing done) otherwise, and its answer stands.
   */
  #passToAnotherProber(id: string): boolean {
    const running = this.#running.get(id);
    if (!running) return false;
    const { probe } = running;
    const passedOver = new Set([...probe.passedOver, running.proberId]);
    const another = this.#readyProbers().some((prober) => !passedOver.has(prober.attachment.proberId));
    if (!another || probe.deadlineAt - Date.now() <= 2 * DEADLINE_MARGIN_MS) return false;
    this.#release(id);
    probe.passedOver = passedOver;
    if (probe.lane === 'single') this.#single.unshift(probe);
    else this.#queueBatch(probe, 'front');
    this.#pump();
    return true;
  }

  /** A probe its prober dropped or refused goes back to the front of its lane. */
  #resend(id: string): void {
    const running = this.#release(id);
    if (!running) return;
    const { probe } = running;
    probe.resends++;
    probe.passedOver.add(running.proberId);
    if (probe.resends > MAX_RESENDS) {
      probe.finish({ kind: 'unavailable', message: 'probers dropped the request' });
    } else if (probe.lane === 'single') {
      this.#single.unshift(probe);
    } else {
      this.#queueBatch(probe, 'front');
    }
    this.#pump();
  }

  /** Puts batch work in its account's lane; an account with no lane yet joins the rotation. */
  #queueBatch(probe: HubProbe, end: 'front' | 'back'): void {
    const lane = this.#batch.get(probe.accountId);
    if (lane) {
      if (end === 'front') lane.unshift(probe);
      else lane.push(probe);
      return;
    }
    this.#batch.set(probe.accountId, [probe]);
    if (end === 'front') this.#accounts.unshift(probe.accountId);
    else this.#accounts.push(probe.accountId);
  }

  #release(id: string): Running | null {
    const running = this.#running.get(id);
    if (!running) return null;
    this.#running.delete(id);
    clearTimeout(running.timer);
    decrement(this.#inFlight, running.proberId);
    decrement(this.#mxInFlight, running.probe.mxKey);
    return running;
  }

  #unqueue(probe: HubProbe): boolean {
    const lane = probe.lane === 'single' ? this.#single : (this.#batch.get(probe.accountId) ?? []);
    const index = lane.indexOf(probe);
    if (index < 0) return false;
    lane.splice(index, 1);
    return true;
  }

  /**
   * With no prober left, batch work goes back to its schedule (its retries and deadline own
   * it); single calls keep waiting until their own deadline, for a prober that links.
   */
  #failWaitingBatch(message: string): void {
    const waiting: HubProbe[] = [];
    for (const lane of this.#batch.values()) waiting.push(...lane);
    this.#batch.clear();
    this.#accounts = [];
    for (const probe of waiting) probe.finish({ kind: 'unavailable', message });
  }

  #readyProbers(): ReadyProber[] {
    const ready: ReadyProber[] = [];
    for (const ws of this.ctx.getWebSockets()) {
      const attachment = this.#attachmentOf(ws);
      if (attachment.ready && !attachment.draining && !this.#gone.has(attachment.proberId))
        ready.push({ ws, attachment });
    }
    return ready;
  }

  #hasReadyProber(): boolean {
    return this.#readyProbers().length > 0;
  }

  // ── batch results ────────────────────────────────────────────────────────────────────

  /**
   * A batch probe's answer: settled, unless the MX is a security gateway that accepted an
   * address and a made-up one — then the tenant behind it, found from DNS through the domain
   * facts, is probed for the same addresses first, and both answers are settled together
   * (docs/verdicts.md, "Catch-alls behind security gateways").
   */
  #afterBatchProbe(task: BatchTask, request: ProbeRequest, outcome: ProbeOutcome): void {
    const mxHosts = request.mx.map((mx) => mx.host);
    const report = outcome.kind === 'report' ? outcome.report : null;
    if (
      !report ||
      !gatewayOf(task.domain, mxHosts) ||
      !task.addresses.some((address) => acceptedByCatchAll(report, [address.email]))
    ) {
      this.#settleLater({ task, probe: outcome });
      return;
    }
    const asked = (async () => {
      const facts = domainFactsOf(createDb(this.env.DB), configOf(this.env));
      const detection = await facts.tenant(task.domain, mxHosts);
      if (detection.kind !== 'tenant') return this.#settleLater({ task, probe: outcome });
      const tenantRequest: ProbeRequest = { ...request, mx: detection.mx };
      this.#queueBatch(
        {
          lane: 'batch',
          accountId: task.accountId,
          mxKey: mxKeyOf(tenantRequest),
          request: tenantRequest,
          deadlineAt: task.deadlineAt,
          resends: 0,
          passedOver: new Set(),
          finish: (tenantOutcome) =>
            this.#settleLater({
              task,
              probe: outcome,
              tenant: { ...detection.tenant, probe: tenantOutcome },
            }),
        },
        'front',
      );
      this.#pump();
    })().catch((error: unknown) => {
      // The gateway's own answer still stands.
      log.error('tenant detection failed', errorFields(error));
      this.#settleLater({ task, probe: outcome });
    });
    this.ctx.waitUntil(asked);
  }

  /** Gathers finished batch probes for a moment, so that their writes share D1 calls. */
  #settleLater(settled: SettledTask): void {
    this.#settling.push(settled);
    this.#settleTimer ??= setTimeout(() => {
      this.#settleTimer = null;
      const batch = this.#settling.splice(0);
      const config = configOf(this.env);
      const work = settleBatchWork(
        {
          db: createDb(this.env.DB),
          queue: verifyQueueOf(this.env),
          config,
          inBackground: (task) => this.ctx.waitUntil(task),
        },
        batch,
        Date.now(),
      ).catch((error: unknown) =>
        // The addresses stay queued in D1: the job's deadline or lease recovers them.
        log.error('batch results not recorded', errorFields(error)),
      );
      this.ctx.waitUntil(work);
    }, SETTLE_GATHER_MS);
  }

  #forget(ws: WebSocket): void {
    const { proberId } = this.#attachmentOf(ws);
    this.#gone.add(proberId);
    this.#egresses.forget(proberId);
    // Its probes go to another prober (or, with none left, back to their schedule).
    for (const [id, running] of [...this.#running]) {
      if (running.proberId === proberId) this.#resend(id);
    }
    this.#inFlight.delete(proberId);
  }
}

/** The MX host that decides which prober serves a probe: its most preferred one. */
function mxKeyOf(request: ProbeRequest): string {
  const [first] = [...request.mx].sort((a, b) => a.preference - b.preference);
  return (first?.host ?? request.domain).toLowerCase();
}

/**
 * Rendezvous (highest random weight) hashing: each host goes to the prober with the highest
 * hash of (host, prober); when a prober leaves, only its hosts move.
 */
function affineProber(
  probers: readonly ReadyProber[],
  mxKey: string,
  passedOver: ReadonlySet<string>,
): ReadyProber | null {
  let best: ReadyProber | null = null;
  let bestScore = -1;
  for (const prober of probers) {
    if (passedOver.has(prober.attachment.proberId)) continue;
    const score = fnv1a(`${mxKey}\n${prober.attachment.proberId}`);
    if (score > bestScore) {
      best = prober;
      bestScore = score;
    }
  }
  return best;
}

/** FNV-1a, 32 bits: fast and well spread for short strings. */
function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let index = 0; index < text.length; index++) {
    hash ^= text.charCodeAt(index);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

function decrement(counts: Map<string, number>, key: string): void {
  const left = (counts.get(key) ?? 1) - 1;
  if (left > 0) counts.set(key, left);
  else counts.delete(key);
}

/**
 * The prober gave no answer by the deadline, though it had its own timeout set before it, so a
 * mail server's slowness would have come back as its report: this is rcpt's own failure
 * (`smtp_unavailable`), asked again in a batch, never kept as a single call's verdict.
 */
function silentProber(): ProbeOutcome {
  return { kind: 'unavailable', message: 'the prober did not answer in time' };
}

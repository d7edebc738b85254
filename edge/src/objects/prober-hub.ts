// ProberHub: one Durable Object per region. Probers dial in over WebSocket (hibernation API,
// so idle links cost nothing). The hub is a link registry and a scheduler, nothing more: single
// calls (`probe`, awaited) and batch work (`dispatch`, handed over) wait in lanes and go out as
// probers have room; what a batch probe answers goes to the sink the hub is given (settlement,
// domain facts), which it knows only through `HubSink` —
// - fair shares (fair-shares.ts): the next slot goes to the account that has held the least
//   slot-time, single calls first within a bound per account, and no account takes a prober's
//   last slots, so one list of tarpits or one flood of calls takes its account's share only;
// - a region that cannot serve a call or work (no prober linked, or every egress of its
//   probers blocked at the probe's MX) says so at once, and the caller asks the next region
//   (services/prober-gateway.ts, docs/operations.md, "Regions"); a probe whose every egress
//   here was refused goes on to the next region as well, the refusal kept as the answer
//   should no later region have an egress that is not;
// - every probe of one MX host goes to one prober (rendezvous hashing over the ready probers,
//   so a disconnect moves only that prober's hosts), and the fleet never has more probes of one
//   host out than one prober opens sessions to it: per-host politeness holds across probers;
// - a prober that drops or refuses a probe gets it re-sent elsewhere; waiting for a prober
//   never ends as a charged timeout (docs/architecture.md, "A batch").

import { DurableObject } from 'cloudflare:workers';
import {
  type EdgeMessage,
  PROBER_PROTOCOL_VERSION,
  type ProbeReport,
  type ProbeRequest,
  ProberMessage,
  type SmtpReply,
} from '@rcpt/shared/contract/prober';
import type { TenantDetection } from '@rcpt/shared/dns/mail-tenant';
import { blockedReport, blockScopeOf } from '@rcpt/shared/verify/egress-refusal';
import type { ProbeOutcome } from '@rcpt/shared/verify/inputs';
import {
  type GatewayProbe,
  type ProbeGateway,
  probeBehindGateway,
} from '@rcpt/shared/verify/probe-behind-gateway';
import { errorFields, log } from '../logger.ts';
import { meter, meterFrom } from '../meter.ts';
import { createDb } from '../storage/db.ts';
import { liveProberTokenIds } from '../storage/prober-tokens.ts';
import { FleetEgresses, type ProberEgresses, refusedAtEveryEgress } from './egress-blocks.ts';
import { FairShares } from './fair-shares.ts';

/**
 * Most probes the hub keeps in flight on one prober, whatever its hello claims: a prober with
 * a leaked token cannot take a region's whole queue and hold it until the deadlines.
 */
export const MAX_PROBER_CAPACITY = 500;

/** Header the Worker sets after it has authenticated the prober's token. */
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
/**
 * Probes of one MX host out beyond its sessions at once, as a share of them: they wait at the
 * prober, whose throttle still holds the sessions to the host's limit, and each starts its
 * session the moment one ends, instead of after the finished probe's answer has reached the hub
 * and a new probe has gone out. A probe far from its mail server spends round trips on its last
 * replies and its close after its slot is free (probe.ts): those are what this covers.
 */
const MX_PROBES_AHEAD_SHARE = 1;

/** The probes of one MX host out at once to a prober that opens `perMxConcurrency` sessions to it. */
export function probesOutPerMx(perMxConcurrency: number): number {
  return Math.ceil(perMxConcurrency * (1 + MX_PROBES_AHEAD_SHARE));
}
/** A probe re-sent this often (its probers dropped or refused it) is rcpt's failure. */
const MAX_RESENDS = 3;
/** How far into one account's lane the scheduler looks for a probe whose host has room. */
const LANE_SCAN_LIMIT = 256;
/**
 * Share of the fleet's slots one account's single calls may hold ahead of everyone's batch
 * work: past it, its further calls wait their account's turn like its batch work (before it).
 */
const SINGLE_PRIORITY_SHARE = 0.25;

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
  /**
   * Another region can serve it: passed back at once when this one has no prober, or when every
   * egress here was refused at its MX.
   */
  passable: boolean;
  finish: (answer: HubAnswer) => void;
}

/** This region cannot serve a probe: the next region in order is asked. */
export interface HubPass {
  kind: 'passed';
  why: string;
  /**
   * Every egress of this region was refused at the probe's MX (or is blocked there): the answer
   * (`antispam_blocked`) should no later region have an egress that is not.
   */
  refusal?: ProbeReport;
}

/** A probe's outcome, or its pass to the next region. */
export type HubAnswer = ProbeOutcome | HubPass;

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

/** One piece of batch work handed to the hub: a probe of one domain's addresses for an account. */
export interface HubWork<Ticket> {
  accountId: string;
  /** When the answer is due (ms since the epoch): the job's deadline. */
  deadlineAt: number;
  request: ProbeRequest;
  /** The sink's own record of the work, handed back with its answer; the hub never reads it. */
  ticket: Ticket;
}

/** Where what the hub's batch probes learn goes (the batch settlement, the shared domain facts). */
export interface HubSink<Ticket> {
  /** The tenant behind the gateway MX of `domain` (docs/verdicts.md, "Catch-alls behind security gateways"). */
  detectTenant(domain: string, mxHosts: readonly string[]): Promise<TenantDetection>;
  /** A piece of work's answer: its MX's probe, and its tenant's when one was asked. */
  settle(ticket: Ticket, answer: GatewayProbe): void;
}

export class ProberHub<Ticket = unknown> extends DurableObject<Env> {
  // In memory only: a probe waiting or out keeps the object awake (its timers), and batch work
  // is accepted only while a prober is connected; what a restart loses, the job's lease and
  // deadline recover (docs/operations.md).
  /** Waiting single calls, by account. */
  #single = new Map<string, HubProbe[]>();
  /** Waiting batch work, by account. */
  #batch = new Map<string, HubProbe[]>();
  /** What each working account holds of the fleet: whose turn is next (fair-shares.ts). */
  #shares = new FairShares();
  #running = new Map<string, Running>();
  #inFlight = new Map<string, number>();
  #mxInFlight = new Map<string, number>();
  /** The same by MX host and prober (`${mxKey} ${proberId}`): who holds a host's probes. */
  #mxInFlightAt = new Map<string, number>();
  /** Probers whose link closed: their socket may still be listed while its close is handled. */
  #gone = new Set<string>();
  /**
   * Each link's attachment as last written: the scheduler reads every link's on each probe it
   * starts or ends, and deserialising it each time was a tenth of the hub's work. After a
   * hibernation the map is empty and each attachment is read back once.
   */
  #attachments = new WeakMap<WebSocket, ProberAttachment>();
  #egresses = new FleetEgresses();
  readonly #sink: HubSink<Ticket>;
  #dispatching = false;

  constructor(ctx: DurableObjectState, env: Env, sink: HubSink<Ticket>) {
    super(ctx, env);
    this.#sink = sink;
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
        // addresses that are not, or else another region (docs/operations.md, "Egress addresses").
        if (
          refusedAtEveryEgress(report) &&
          (this.#passToAnotherProber(id) || this.#passToNextRegion(id, report))
        )
          return;
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
   * One probe for `accountId`'s caller, who waits (single verification): served before batch
   * work, within the account's bound. `passable` (another region can take it): with no prober
   * here, or every egress here blocked at its MX, it is passed back at once, and also when its
   * prober goes and none is left, or when every egress here is refused. Otherwise it waits
   * within its budget: a prober that links (or frees up) in time answers it, and only one that
   * never does makes it rcpt's own failure.
   */
  probe(request: ProbeRequest, deadlineMs: number, accountId = '', passable = false): Promise<HubAnswer> {
    meter({ doRequests: 1 });
    const pass = passable ? this.#passOf(request, true) : null;
    if (pass) return Promise.resolve(pass);
    return new Promise<HubAnswer>((resolve) => {
      const deadlineAt = Date.now() + deadlineMs;
      let done = false;
      const probe = hubProbe('single', accountId, request, deadlineAt, passable, (outcome) => {
        if (done) return;
        done = true;
        clearTimeout(expiry);
        resolve(outcome);
      });
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
      this.#queue(probe, 'back');
      this.#pump();
    });
  }

  /**
   * Batch work handed over: the hub probes it as probers have room — the tenant behind a
   * catch-all gateway too, through the same sequence as a single call — and gives each answer to
   * its sink as it comes. Answers the indexes of the work it refused (all of it with no prober
   * linked; with `passable`, another region after this one, also what every egress here is
   * blocked for), for the next region or a later try.
   */
  dispatch(work: HubWork<Ticket>[], passable = false): number[] {
    meter({ doRequests: 1 });
    const refused: number[] = [];
    // Each probe joins its lane as its sequence starts; the lanes are pumped once, at the end.
    this.#dispatching = true;
    for (const [index, item] of work.entries()) {
      if (this.#passOf(item.request, passable)) {
        refused.push(index);
        continue;
      }
      const { accountId, deadlineAt, ticket } = item;
      const tenants = {
        detect: (domain: string, mxHosts: readonly string[]) => this.#sink.detectTenant(domain, mxHosts),
        // The tenant's probe goes before the account's waiting work: its address is half answered.
        prober: this.#batchLane(accountId, deadlineAt, 'front', passable),
      };
      const answered = probeBehindGateway(
        { prober: this.#batchLane(accountId, deadlineAt, 'back', passable), tenants },
        item.request,
        deadlineAt,
      ).then(
        (answer) => this.#sink.settle(ticket, answer),
        (error: unknown) => {
          log.error('batch probe failed', errorFields(error));
          this.#sink.settle(ticket, {
            probe: { kind: 'unavailable', message: 'the probe failed in the hub' },
            tenantDetection: null,
            tenant: null,
          });
        },
      );
      this.ctx.waitUntil(answered);
    }
    this.#dispatching = false;
    this.#pump();
    return refused;
  }

  /**
   * A gateway into an account's batch lane: each probe waits there for a prober until `deadlineAt`.
   * One this region passes on is rcpt's own failure here, asked again — at once when the region
   * lost its probers, on its schedule when every egress here was refused — and then the next
   * region takes it (this one refuses it at dispatch).
   */
  #batchLane(accountId: string, deadlineAt: number, end: 'front' | 'back', passable: boolean): ProbeGateway {
    return {
      probe: (request) =>
        new Promise<ProbeOutcome>((finish) => {
          this.#queue(
            hubProbe('batch', accountId, request, deadlineAt, passable, (answer) =>
              finish(
                answer.kind === 'passed'
                  ? {
                      kind: 'unavailable',
                      message: answer.why,
                      ...(answer.refusal ? {} : { passedOn: true }),
                    }
                  : answer,
              ),
            ),
            end,
          );
          if (!this.#dispatching) this.#pump();
        }),
    };
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
    let single = 0;
    for (const lane of this.#single.values()) single += lane.length;
    let batch = 0;
    for (const lane of this.#batch.values()) batch += lane.length;
    return { single, batch, running: this.#running.size };
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

  /**
   * Sends waiting probes while some prober has room for them, the least charged account first
   * (fair-shares.ts): single calls within their account's priority bound, then everything else,
   * each account's single calls before its batch work.
   */
  #pump(): void {
    const probers = this.#readyProbers();
    if (probers.length === 0) {
      this.#leaveWithoutProbers();
      return;
    }
    const now = Date.now();
    const fleetCapacity = probers.reduce((sum, prober) => sum + prober.attachment.capacity, 0);
    const singlePriority = Math.max(1, Math.ceil(fleetCapacity * SINGLE_PRIORITY_SHARE));
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
      if (!this.#shares.mayTake(probe.accountId, proberId, capacity)) return null;
      // Probes waiting ahead only where the host's sessions run: while another prober still
      // holds some of its probes (the fleet changed), the host's probes out stay within one
      // prober's sessions, so the two probers' sessions together do too.
      const out = this.#mxInFlight.get(probe.mxKey) ?? 0;
      const here = this.#mxInFlightAt.get(`${probe.mxKey} ${proberId}`) ?? 0;
      if (out >= (out > here ? perMxConcurrency : probesOutPerMx(perMxConcurrency))) {
        fullHosts.add(probe.mxKey);
        return null;
      }
      return target;
    };
    this.#serve(now, pick, (accountId) =>
      this.#shares.singlesOut(accountId) < singlePriority ? [this.#single.get(accountId)] : [],
    );
    this.#serve(now, pick, (accountId) => [this.#single.get(accountId), this.#batch.get(accountId)]);
  }

  /**
   * Starts probes from the lanes `lanesOf` gives each account, one at a time from the least
   * charged account, until no account has one that can start.
   */
  #serve(
    now: number,
    pick: (probe: HubProbe) => ReadyProber | null,
    lanesOf: (accountId: string) => (HubProbe[] | undefined)[],
  ): void {
    const stuck = new Set<string>();
    for (;;) {
      let next: string | null = null;
      let nextCharge = Number.POSITIVE_INFINITY;
      for (const accountId of new Set([...this.#single.keys(), ...this.#batch.keys()])) {
        if (stuck.has(accountId) || !lanesOf(accountId).some((lane) => lane && lane.length > 0)) continue;
        const charge = this.#shares.charge(accountId, now);
        if (charge < nextCharge) {
          next = accountId;
          nextCharge = charge;
        }
      }
      if (next === null) return;
      if (!this.#startOne(now, pick, lanesOf(next))) stuck.add(next);
    }
  }

  /** Starts the first probe of `lanes` (in order) that has a prober with room; false if none does. */
  #startOne(
    now: number,
    pick: (probe: HubProbe) => ReadyProber | null,
    lanes: (HubProbe[] | undefined)[],
  ): boolean {
    for (const lane of lanes) {
      if (!lane) continue;
      for (let index = 0; index < lane.length && index < LANE_SCAN_LIMIT; index++) {
        const probe = lane[index] as HubProbe;
        if (probe.lane === 'batch' && probe.deadlineAt <= now) {
          // The job's deadline came while it waited: its deadline sweep answers for it.
          this.#unqueue(probe);
          index--;
          probe.finish({ kind: 'unavailable', message: 'no prober was free before the job deadline' });
          continue;
        }
        const target = pick(probe);
        if (!target) continue;
        this.#unqueue(probe, 'started');
        this.#start(probe, target, now);
        return true;
      }
    }
    return false;
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
    this.#shares.started(probe.accountId, id, proberId, probe.lane === 'single', now);
    this.#inFlight.set(proberId, (this.#inFlight.get(proberId) ?? 0) + 1);
    this.#mxInFlight.set(probe.mxKey, (this.#mxInFlight.get(probe.mxKey) ?? 0) + 1);
    const at = `${probe.mxKey} ${proberId}`;
    this.#mxInFlightAt.set(at, (this.#mxInFlightAt.get(at) ?? 0) + 1);
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
    this.#queue(probe, 'front');
    this.#pump();
    return true;
  }

  /**
   * Answers probe `id`, whose every egress in this region was refused, with a pass to the next
   * region when there is one (the refusal goes along); false (nothing done) otherwise, and the
   * refusal stands.
   */
  #passToNextRegion(id: string, refusal: ProbeReport): boolean {
    const running = this.#running.get(id);
    if (!running?.probe.passable || running.probe.deadlineAt - Date.now() <= 2 * DEADLINE_MARGIN_MS)
      return false;
    this.#release(id);
    running.probe.finish({
      kind: 'passed',
      why: 'every egress in this region was refused at its MX',
      refusal,
    });
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
    } else {
      this.#queue(probe, 'front');
    }
    this.#pump();
  }

  /** Puts a probe in its account's lane of its kind. */
  #queue(probe: HubProbe, end: 'front' | 'back'): void {
    const lanes = probe.lane === 'single' ? this.#single : this.#batch;
    const lane = lanes.get(probe.accountId);
    if (!lane) lanes.set(probe.accountId, [probe]);
    else if (end === 'front') lane.unshift(probe);
    else lane.push(probe);
    this.#shares.queued(probe.accountId);
  }

  #release(id: string): Running | null {
    const running = this.#running.get(id);
    if (!running) return null;
    this.#running.delete(id);
    clearTimeout(running.timer);
    decrement(this.#inFlight, running.proberId);
    decrement(this.#mxInFlight, running.probe.mxKey);
    decrement(this.#mxInFlightAt, `${running.probe.mxKey} ${running.proberId}`);
    this.#shares.ended(running.probe.accountId, id, Date.now());
    return running;
  }

  /** Takes a waiting probe out of its lane (to start it, or to answer it without a prober). */
  #unqueue(probe: HubProbe, why: 'started' | 'left' = 'left'): boolean {
    const lanes = probe.lane === 'single' ? this.#single : this.#batch;
    const lane = lanes.get(probe.accountId);
    const index = lane ? lane.indexOf(probe) : -1;
    if (!lane || index < 0) return false;
    lane.splice(index, 1);
    if (lane.length === 0) lanes.delete(probe.accountId);
    if (why === 'left') this.#shares.unqueued(probe.accountId);
    return true;
  }

  /**
   * With no prober left, what another region can serve goes there (region failover,
   * docs/operations.md); other batch work goes back to its schedule (its retries and deadline
   * own it); other single calls keep waiting until their own deadline, for a prober that links.
   */
  #leaveWithoutProbers(): void {
    const leaving: [HubProbe, HubAnswer][] = [];
    for (const lane of this.#single.values())
      for (const probe of lane) if (probe.passable) leaving.push([probe, noProberHere()]);
    for (const lane of this.#batch.values())
      for (const probe of lane)
        leaving.push([
          probe,
          probe.passable ? noProberHere() : { kind: 'unavailable', message: 'no prober connected' },
        ]);
    for (const [probe, answer] of leaving) {
      this.#unqueue(probe);
      probe.finish(answer);
    }
  }

  /**
   * Why this region passes a probe of `request` on instead of taking it, or null when it takes
   * it: it has no linked prober; or, when another region can take it (`passable`), every egress
   * of every prober here is blocked at its MX, as the probers reported their blocks — with the
   * blocks' refusal as the answer should no later region have an egress that is not. A prober
   * that named no egresses, or whose blocks the hub scopes otherwise, is asked, and its refused
   * report passes the probe on just the same.
   */
  #passOf(request: ProbeRequest, passable: boolean): HubPass | null {
    const probers = this.#readyProbers();
    if (probers.length === 0) return noProberHere();
    if (!passable) return null;
    const scope = blockScopeOf(request);
    const now = Date.now();
    let refusal: SmtpReply | null = null;
    for (const { attachment } of probers) {
      const reply = this.#egresses.refusalAt(attachment.proberId, scope, now);
      if (!reply) return null;
      refusal ??= reply;
    }
    return {
      kind: 'passed',
      why: `every egress in this region is blocked at ${scope.name}`,
      refusal: blockedReport(request.emails, refusal, scope.name),
    };
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

/** A probe of `request` about to wait in its account's lane of `lane`. */
function hubProbe(
  lane: HubProbe['lane'],
  accountId: string,
  request: ProbeRequest,
  deadlineAt: number,
  passable: boolean,
  finish: HubProbe['finish'],
): HubProbe {
  return {
    lane,
    accountId,
    mxKey: mxKeyOf(request),
    request,
    deadlineAt,
    resends: 0,
    passedOver: new Set(),
    passable,
    finish,
  };
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

function noProberHere(): HubPass {
  return { kind: 'passed', why: 'no prober linked in this region' };
}

/**
 * The prober gave no answer by the deadline, though it had its own timeout set before it, so a
 * mail server's slowness would have come back as its report: this is rcpt's own failure
 * (`smtp_unavailable`), asked again in a batch, never kept as a single call's verdict.
 */
function silentProber(): ProbeOutcome {
  return { kind: 'unavailable', message: 'the prober did not answer in time' };
}

// ProberHub: one Durable Object per region. Probers dial in over WebSocket; the hub is a link
// registry (prober-links.ts: who is linked, ready, and where their egresses are blocked) and a
// scheduler (probe-scheduler.ts: fair lanes, one prober per MX host, resends), nothing more.
// This module is the object itself: the links' messages in, single calls (`probe`, awaited) and
// batch work (`dispatch`, handed over) out to the scheduler, and what a batch probe answers to the
// sink the hub is given (settlement, domain facts), which it knows only through `HubSink`. A
// region that cannot serve a call or work (no prober linked, or every egress of its probers
// blocked at the probe's MX) says so at once, and the caller asks the next region
// (services/fleet/prober-gateway.ts, docs/operations.md, "Regions").

import { DurableObject } from 'cloudflare:workers';
import {
  type EgressBlockInfo,
  PROBER_PROTOCOL_VERSION,
  type ProbeRequest,
  ProberMessage,
} from '@rcpt/shared/contract/prober';
import type { TenantDetection } from '@rcpt/shared/dns/mail-tenant';
import { type GatewayProbe, probeBehindGateway } from '@rcpt/shared/verify/probe-behind-gateway';
import { configOf } from '../config.ts';
import { errorFields, log } from '../logger.ts';
import { type MeterVars, meter, meterFrom } from '../meter.ts';
import {
  alertDepsOf,
  blockAlerts,
  type FleetAlert,
  healthAlerts,
  raiseAlerts,
} from '../services/fleet/alerts.ts';
import { createDb } from '../storage/db.ts';
import { liveProberTokenIds } from '../storage/prober-tokens.ts';
import type { ProberEgresses } from './egress-blocks.ts';
import type { HubAnswer } from './hub-probe.ts';
import { ProbeScheduler } from './probe-scheduler.ts';
import {
  DEFAULT_PER_MX_CONCURRENCY,
  MAX_PROBER_CAPACITY,
  type ProberAttachment,
  ProberLinks,
} from './prober-links.ts';

/** Header the Worker sets after it has authenticated the prober's token. */
export const PROBER_TOKEN_ID_HEADER = 'X-Rcpt-Prober-Token-Id';
/** The account a customer-run prober's token serves (absent: the shared fleet); set beside the token id. */
export const PROBER_ACCOUNT_ID_HEADER = 'X-Rcpt-Prober-Account-Id';

/** How often connected probers' tokens are checked again, so a revoked one is dropped. */
export const TOKEN_RECHECK_MS = 60_000;
/** Close code for a prober whose token was revoked while it was connected. */
export const TOKEN_REVOKED_CLOSE_CODE = 4001;

/** A connected prober as operators see it: its link, its load and its egresses. */
export interface ProberStatus extends ProberAttachment {
  inFlight: number;
  /** Its egresses, their blocks and hourly use, as it last reported them. */
  egress: ProberEgresses;
}

/** One piece of batch work handed to the hub: a probe of one domain's addresses for an account. */
export interface HubWork<Ticket> {
  accountId: string;
  /** Only the account's own probers may take it (it turned the shared fleet's fallback off). */
  ownOnly?: boolean;
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
  readonly #links: ProberLinks;
  readonly #scheduler: ProbeScheduler;
  readonly #sink: HubSink<Ticket>;

  constructor(ctx: DurableObjectState, env: Env, sink: HubSink<Ticket>) {
    super(ctx, env);
    this.#links = new ProberLinks(ctx);
    this.#scheduler = new ProbeScheduler(this.#links);
    this.#sink = sink;
    meterFrom(env as MeterVars);
  }

  override async fetch(request: Request): Promise<Response> {
    meter({ doRequests: 1 });
    const tokenId = request.headers.get(PROBER_TOKEN_ID_HEADER);
    if (request.headers.get('Upgrade')?.toLowerCase() !== 'websocket' || !tokenId) {
      return new Response('expected an authenticated WebSocket upgrade', { status: 400 });
    }
    const region = new URL(request.url).searchParams.get('region') ?? 'default';
    const { 0: client, 1: server } = new WebSocketPair();
    const accountId = request.headers.get(PROBER_ACCOUNT_ID_HEADER);
    this.#links.accept(server, { tokenId, region, accountId }, Date.now());
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
    const sockets = this.#links.sockets();
    const tokenIds = [...new Set(sockets.map((ws) => this.#links.attachmentOf(ws).tokenId))];
    if (tokenIds.length === 0) return 0;
    const live = await liveProberTokenIds(createDb(this.env.DB), tokenIds);
    let dropped = 0;
    for (const ws of sockets) {
      if (live.has(this.#links.attachmentOf(ws).tokenId)) continue;
      this.#forget(ws);
      ws.close(TOKEN_REVOKED_CLOSE_CODE, 'token revoked');
      dropped++;
    }
    return dropped;
  }

  override async webSocketMessage(ws: WebSocket, data: string | ArrayBuffer): Promise<void> {
    meter({ doWebSocketMessages: 1 });
    const attachment = this.#links.attachmentOf(ws);
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
        this.#links.attach(ws, {
          ...attachment,
          ready: true,
          capacity: Math.min(parsed.capacity, MAX_PROBER_CAPACITY),
          perMxConcurrency: parsed.perMxConcurrency ?? DEFAULT_PER_MX_CONCURRENCY,
        });
        // What the region remembers of these egresses goes out before any probe can.
        const egressIds = (parsed.egresses ?? []).map((egress) => egress.id);
        const memory = this.#links.memory.recall(attachment.tokenId, egressIds, Date.now());
        this.#links.egresses.linked(attachment.proberId, parsed.egresses, memory.blocks);
        if (egressIds.length > 0)
          ws.send(JSON.stringify({ type: 'egress_memory', id: crypto.randomUUID(), ...memory }));
        this.#scheduler.pump();
        return;
      }
      case 'egress_state': {
        const now = Date.now();
        const inForce = (blocks: readonly EgressBlockInfo[]) => blocks.filter((block) => block.until > now);
        const known = this.#links.egressesOf(attachment.proberId, now);
        const egressIds = known.egresses.map((egress) => egress.id);
        const { region, proberId, tokenId } = attachment;
        this.#raise([
          ...blockAlerts(region, proberId, known.blocks, inForce(parsed.blocks)),
          ...(parsed.health
            ? healthAlerts(region, proberId, this.#links.memory.healthOf(tokenId, egressIds), parsed.health)
            : []),
        ]);
        this.#links.egresses.reported(proberId, parsed, now);
        this.#links.memory.remember(tokenId, egressIds, parsed, now);
        return;
      }
      case 'result': {
        const { type: _type, id, ...report } = parsed;
        this.#scheduler.reported(attachment, id, report);
        return;
      }
      case 'error':
        this.#scheduler.refused(attachment, parsed.id);
        return;
      case 'drain':
        this.#links.attach(ws, { ...attachment, draining: true });
        this.#scheduler.pump();
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
  probe(
    request: ProbeRequest,
    deadlineMs: number,
    accountId = '',
    passable = false,
    ownOnly = false,
  ): Promise<HubAnswer> {
    meter({ doRequests: 1 });
    const pass = passable ? this.#links.passOf(request, true, { accountId, ownOnly }) : null;
    if (pass) return Promise.resolve(pass);
    return this.#scheduler.single(request, deadlineMs, accountId, passable, ownOnly);
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
    // Each probe joins its lane as its sequence starts; the lanes are pumped once, at the end.
    return this.#scheduler.holding(() => {
      const refused: number[] = [];
      for (const [index, item] of work.entries()) {
        if (
          this.#links.passOf(item.request, passable, {
            accountId: item.accountId,
            ownOnly: item.ownOnly ?? false,
          })
        ) {
          refused.push(index);
          continue;
        }
        this.ctx.waitUntil(this.#probeWork(item, passable));
      }
      return refused;
    });
  }

  /** Connected probers, for operators and tests. */
  status(): ProberStatus[] {
    return this.#links.sockets().map((ws) => {
      const attachment = this.#links.attachmentOf(ws);
      return {
        ...attachment,
        accountId: attachment.accountId ?? null,
        inFlight: this.#scheduler.inFlightOf(attachment.proberId),
        egress: this.#links.egressesOf(attachment.proberId, Date.now()),
      };
    });
  }

  /** Probes waiting for a prober, by lane: for operators, tests and the benchmark. */
  backlog(): { single: number; batch: number; running: number } {
    return this.#scheduler.backlog();
  }

  /** One piece of batch work through the gateway sequence; its answer goes to the sink. */
  #probeWork(
    { accountId, ownOnly = false, deadlineAt, request, ticket }: HubWork<Ticket>,
    passable: boolean,
  ): Promise<void> {
    const tenants = {
      detect: (domain: string, mxHosts: readonly string[]) => this.#sink.detectTenant(domain, mxHosts),
      // The tenant's probe goes before the account's waiting work: its address is half answered.
      prober: this.#scheduler.batchLane(accountId, deadlineAt, 'front', passable, ownOnly),
    };
    return probeBehindGateway(
      { prober: this.#scheduler.batchLane(accountId, deadlineAt, 'back', passable, ownOnly), tenants },
      request,
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
  }

  #forget(ws: WebSocket): void {
    const attachment = this.#links.attachmentOf(ws);
    const wasLinked = attachment.ready && !this.#links.isGone(attachment.proberId);
    this.#scheduler.proberGone(this.#links.forget(ws));
    if (!wasLinked) return;
    const { proberId, tokenId, region, draining, connectedAt } = attachment;
    const alerts: FleetAlert[] = [
      {
        type: 'prober.gone',
        region,
        data: { proberId, tokenId, draining, connectedAt: new Date(connectedAt).toISOString() },
      },
    ];
    if (!this.#links.hasReady()) alerts.push({ type: 'region.gone', region, data: {} });
    this.#raise(alerts);
  }

  /** Raises the alerts after this event is handled; a failure is logged, never thrown at the link. */
  #raise(alerts: FleetAlert[]): void {
    if (alerts.length === 0) return;
    const deps = alertDepsOf(createDb(this.env.DB), configOf(this.env), this.env);
    this.ctx.waitUntil(
      raiseAlerts(deps, alerts, Date.now()).catch((error) =>
        log.error('fleet alerts not kept', errorFields(error)),
      ),
    );
  }
}

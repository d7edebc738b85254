// ProberHub: one Durable Object per region. Probers dial in over WebSocket (hibernation API,
// so idle links cost nothing); `probe()` forwards a request to the least-loaded prober and
// awaits its answer within a deadline, retrying once on another prober if the first drops.

import { DurableObject } from 'cloudflare:workers';
import {
  type EdgeMessage,
  PROBER_PROTOCOL_VERSION,
  type ProbeReport,
  type ProbeRequest,
  ProberMessage,
} from '@rcpt/shared/contract/prober';
import type { ProbeOutcome } from '@rcpt/shared/verify/inputs';
import { createDb } from '../storage/db.ts';
import { liveProberTokenIds } from '../storage/prober-tokens.ts';

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
  ready: boolean; // said hello with a protocol version we speak
  draining: boolean;
  connectedAt: number;
}

interface PendingProbe {
  proberId: string;
  resolve: (report: ProbeReport) => void;
  reject: (error: Error) => void;
}

class ProberGone extends Error {}
class ProberRefused extends Error {}

export interface ProberStatus {
  proberId: string;
  region: string;
  capacity: number;
  inFlight: number;
  ready: boolean;
  draining: boolean;
  connectedAt: number;
}

export class ProberHub extends DurableObject<Env> {
  // In memory only: a probe in flight keeps the object awake, so nothing here outlives
  // hibernation that should not.
  #pending = new Map<string, PendingProbe>();
  #inFlight = new Map<string, number>();
  // Probes waiting for a free slot when every ready prober is at capacity.
  #slotWaiters: (() => void)[] = [];

  override async fetch(request: Request): Promise<Response> {
    const tokenId = request.headers.get(PROBER_TOKEN_ID_HEADER);
    if (request.headers.get('Upgrade')?.toLowerCase() !== 'websocket' || !tokenId) {
      return new Response('expected an authenticated WebSocket upgrade', { status: 400 });
    }
    const region = new URL(request.url).searchParams.get('region') ?? 'default';
    const { 0: client, 1: server } = new WebSocketPair();
    const proberId = crypto.randomUUID();
    this.ctx.acceptWebSocket(server, [proberId]);
    server.serializeAttachment({
      proberId,
      tokenId,
      region,
      capacity: 1,
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
    await this.dropRevokedProbers();
    if (this.ctx.getWebSockets().length > 0) await this.ctx.storage.setAlarm(Date.now() + TOKEN_RECHECK_MS);
  }

  /** Closes the link of every prober whose token is revoked (or gone); returns how many. */
  async dropRevokedProbers(): Promise<number> {
    const sockets = this.ctx.getWebSockets();
    const tokenIds = [
      ...new Set(sockets.map((ws) => (ws.deserializeAttachment() as ProberAttachment).tokenId)),
    ];
    if (tokenIds.length === 0) return 0;
    const live = await liveProberTokenIds(createDb(this.env.DB), tokenIds);
    let dropped = 0;
    for (const ws of sockets) {
      if (live.has((ws.deserializeAttachment() as ProberAttachment).tokenId)) continue;
      this.#forget(ws);
      ws.close(TOKEN_REVOKED_CLOSE_CODE, 'token revoked');
      dropped++;
    }
    return dropped;
  }

  override async webSocketMessage(ws: WebSocket, data: string | ArrayBuffer): Promise<void> {
    const attachment = ws.deserializeAttachment() as ProberAttachment;
    let parsed: ProberMessage;
    try {
      const result = ProberMessage.safeParse(
        JSON.parse(typeof data === 'string' ? data : new TextDecoder().decode(data)),
      );
      if (!result.success) throw new Error(result.error.issues[0]?.message ?? 'invalid message');
      parsed = result.data;
    } catch (error) {
      console.warn(
        JSON.stringify({
          level: 'warn',
          msg: 'invalid prober message',
          proberId: attachment.proberId,
          error: String(error),
        }),
      );
      return;
    }
    switch (parsed.type) {
      case 'hello': {
        if (parsed.version !== PROBER_PROTOCOL_VERSION) {
          ws.close(4000, `protocol version ${parsed.version} not supported`);
          return;
        }
        ws.serializeAttachment({
          ...attachment,
          ready: true,
          capacity: parsed.capacity,
          region: parsed.region,
        });
        return;
      }
      case 'result': {
        const { type: _type, id, ...report } = parsed;
        this.#settle(id, (pending) => pending.resolve(report));
        return;
      }
      case 'error':
        this.#settle(parsed.id, (pending) => pending.reject(new ProberRefused(parsed.message)));
        return;
      case 'drain':
        ws.serializeAttachment({ ...attachment, draining: true });
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

  /** One probe: the least-loaded ready prober answers, or another one if it drops. */
  async probe(request: ProbeRequest, deadlineMs: number): Promise<ProbeOutcome> {
    const [outcome] = await this.probeMany([request], deadlineMs);
    return outcome ?? { kind: 'unavailable', message: 'no prober answered' };
  }

  /** Several probes at once (a queue batch): all sent over the sockets, awaited together. */
  async probeMany(requests: ProbeRequest[], deadlineMs: number): Promise<ProbeOutcome[]> {
    const deadline = Date.now() + deadlineMs;
    return Promise.all(requests.map((request) => this.#probeWithRetry(request, deadline)));
  }

  /** Connected probers, for operators and tests. */
  status(): ProberStatus[] {
    return this.ctx.getWebSockets().map((ws) => {
      const attachment = ws.deserializeAttachment() as ProberAttachment;
      return {
        proberId: attachment.proberId,
        region: attachment.region,
        capacity: attachment.capacity,
        inFlight: this.#inFlight.get(attachment.proberId) ?? 0,
        ready: attachment.ready,
        draining: attachment.draining,
        connectedAt: attachment.connectedAt,
      };
    });
  }

  async #probeWithRetry(request: ProbeRequest, deadline: number): Promise<ProbeOutcome> {
    const tried = new Set<string>();
    for (let attempt = 0; attempt < 2; attempt++) {
      // No time left before any prober took the probe: rcpt could not run the check, which
      // is its own failure (`smtp_unavailable`), not the mail server's (`smtp_timeout`).
      const notRun: ProbeOutcome = { kind: 'unavailable', message: 'no prober was free before the deadline' };
      const remaining = deadline - Date.now() - DEADLINE_MARGIN_MS;
      if (remaining <= 0) return notRun;
      let target = this.#pickProber(tried);
      // Every ready prober busy: wait for a slot rather than refuse (a batch sends more
      // probes at once than the fleet runs at once).
      while (!target && this.#hasReadyProber(tried)) {
        const waitMs = deadline - Date.now() - DEADLINE_MARGIN_MS;
        if (waitMs <= 0) return notRun;
        await this.#waitForSlot(waitMs);
        target = this.#pickProber(tried);
      }
      if (!target) {
        return {
          kind: 'unavailable',
          message: tried.size === 0 ? 'no prober connected' : 'no other prober connected',
        };
      }
      tried.add(target.proberId);
      try {
        const report = await this.#send(target, request, remaining);
        return { kind: 'report', report };
      } catch (error) {
        if (error instanceof ProbeTimeout) return { kind: 'timeout' };
        // Gone or refused (over capacity, draining): the next prober gets the one retry.
      }
    }
    return { kind: 'unavailable', message: 'probers dropped the request' };
  }

  #pickProber(exclude: Set<string>): { ws: WebSocket; proberId: string } | null {
    let best: { ws: WebSocket; proberId: string; load: number } | null = null;
    for (const ws of this.ctx.getWebSockets()) {
      const attachment = ws.deserializeAttachment() as ProberAttachment;
      if (!attachment.ready || attachment.draining || exclude.has(attachment.proberId)) continue;
      const inFlight = this.#inFlight.get(attachment.proberId) ?? 0;
      if (inFlight >= attachment.capacity) continue;
      const load = inFlight / attachment.capacity;
      if (!best || load < best.load) best = { ws, proberId: attachment.proberId, load };
    }
    return best;
  }

  #hasReadyProber(exclude: Set<string>): boolean {
    return this.ctx.getWebSockets().some((ws) => {
      const attachment = ws.deserializeAttachment() as ProberAttachment;
      return attachment.ready && !attachment.draining && !exclude.has(attachment.proberId);
    });
  }

  #waitForSlot(timeoutMs: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, timeoutMs);
      const waiter = () => done();
      this.#slotWaiters.push(waiter);
      const waiters = this.#slotWaiters;
      function done() {
        clearTimeout(timer);
        const index = waiters.indexOf(waiter);
        if (index >= 0) waiters.splice(index, 1);
        resolve();
      }
    });
  }

  #send(
    target: { ws: WebSocket; proberId: string },
    request: ProbeRequest,
    budgetMs: number,
  ): Promise<ProbeReport> {
    const id = crypto.randomUUID();
    const message: EdgeMessage = {
      type: 'probe',
      id,
      ...request,
      // The prober must answer before our deadline: give it a little less than we have.
      timeoutMs: Math.max(100, Math.min(request.timeoutMs, budgetMs - DEADLINE_MARGIN_MS)),
    };
    this.#inFlight.set(target.proberId, (this.#inFlight.get(target.proberId) ?? 0) + 1);
    return new Promise<ProbeReport>((resolve, reject) => {
      const timer = setTimeout(
        () => this.#settle(id, (pending) => pending.reject(new ProbeTimeout())),
        budgetMs,
      );
      this.#pending.set(id, {
        proberId: target.proberId,
        resolve: (report) => {
          clearTimeout(timer);
          resolve(report);
        },
        reject: (error) => {
          clearTimeout(timer);
          reject(error);
        },
      });
      try {
        target.ws.send(JSON.stringify(message));
      } catch {
        this.#settle(id, (pending) => pending.reject(new ProberGone()));
      }
    });
  }

  #settle(id: string, settle: (pending: PendingProbe) => void): void {
    const pending = this.#pending.get(id);
    if (!pending) return; // late or duplicate answer: already settled
    this.#pending.delete(id);
    const inFlight = (this.#inFlight.get(pending.proberId) ?? 1) - 1;
    if (inFlight > 0) this.#inFlight.set(pending.proberId, inFlight);
    else this.#inFlight.delete(pending.proberId);
    this.#slotWaiters.shift()?.();
    settle(pending);
  }

  #forget(ws: WebSocket): void {
    const { proberId } = ws.deserializeAttachment() as ProberAttachment;
    for (const [id, pending] of this.#pending) {
      if (pending.proberId === proberId) this.#settle(id, (entry) => entry.reject(new ProberGone()));
    }
    this.#inFlight.delete(proberId);
    // Waiters re-check: with this prober gone they may have nowhere to wait for.
    for (const waiter of this.#slotWaiters.splice(0)) waiter();
  }
}

class ProbeTimeout extends Error {}

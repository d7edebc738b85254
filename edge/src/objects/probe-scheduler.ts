// The hub's scheduler: single calls (awaited) and batch work wait in per-account lanes and go
// out as the linked probers (prober-links.ts) have room —
// - fair shares (fair-shares.ts): the next slot goes to the account that has held the least
//   slot-time, single calls first within a bound per account, and no account takes a prober's
//   last slots, so one list of tarpits or one flood of calls takes its account's share only;
// - every probe of one MX host goes to one prober (rendezvous hashing over the ready probers,
//   so a disconnect moves only that prober's hosts), and the fleet never has more probes of one
//   host out than one prober opens sessions to it: per-host politeness holds across probers;
// - a customer-run prober takes its own account's probes only, and that account's probes go to
//   its own probers first, to the shared fleet only when the account allows it (prober-owners.ts);
// - a prober that drops or refuses a probe gets it re-sent elsewhere; a probe whose every egress
//   here was refused goes to another prober, or on to the next region with its refusal kept;
//   waiting for a prober never ends as a charged timeout (docs/architecture.md, "A batch").
import type { EdgeMessage, ProbeReport, ProbeRequest } from '@rcpt/shared/contract/prober';
import type { ProbeOutcome } from '@rcpt/shared/verify/inputs';
import type { ProbeGateway } from '@rcpt/shared/verify/probe-behind-gateway';
import { log } from '../logger.ts';
import { refusedAtEveryEgress } from './egress-blocks.ts';
import { FairShares } from './fair-shares.ts';
import { type HubAnswer, type HubProbe, hubProbe, silentProber } from './hub-probe.ts';
import { affineProber, probesOutPerMx } from './mx-affinity.ts';
import { noProberHere, type ProberAttachment, type ProberLinks, type ReadyProber } from './prober-links.ts';
import { ProbersByOwner } from './prober-owners.ts';

/** Time kept back from the caller's deadline for the answer to travel back. */
const DEADLINE_MARGIN_MS = 250;
/** A probe re-sent this often (its probers dropped or refused it) is rcpt's failure. */
const MAX_RESENDS = 3;
/** How far into one account's lane the scheduler looks for a probe whose host has room. */
const LANE_SCAN_LIMIT = 256;
/**
 * Share of the fleet's slots one account's single calls may hold ahead of everyone's batch
 * work: past it, its further calls wait their account's turn like its batch work (before it).
 */
const SINGLE_PRIORITY_SHARE = 0.25;

interface Running {
  probe: HubProbe;
  proberId: string;
  timer: ReturnType<typeof setTimeout>;
}

export class ProbeScheduler {
  // In memory only: a probe waiting or out keeps the object awake (its timers), and batch work
  // is accepted only while a prober is connected; what a restart loses, the job's lease and
  // deadline recover (docs/operations.md).
  readonly #links: ProberLinks;
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
  /** While work is handed over, probes join their lanes unpumped; the lanes are pumped once, after. */
  #holding = false;

  constructor(links: ProberLinks) {
    this.#links = links;
  }

  /**
   * One probe for `accountId`'s caller, who waits (single verification); see ProberHub.probe.
   * Still waiting for a prober at the deadline: rcpt's own failure, said as such. `ownOnly`: only
   * the account's own probers may take it (prober-owners.ts).
   */
  single(
    request: ProbeRequest,
    deadlineMs: number,
    accountId: string,
    passable: boolean,
    ownOnly = false,
  ): Promise<HubAnswer> {
    return new Promise<HubAnswer>((resolve) => {
      const deadlineAt = Date.now() + deadlineMs;
      let done = false;
      const owner = { accountId, ownOnly };
      const probe = hubProbe('single', owner, request, deadlineAt, passable, (outcome) => {
        if (done) return;
        done = true;
        clearTimeout(expiry);
        resolve(outcome);
      });
      const expiry = setTimeout(() => {
        if (this.#unqueue(probe))
          probe.finish({
            kind: 'unavailable',
            message: this.#links.hasReady()
              ? 'no prober was free before the deadline'
              : 'no prober connected before the deadline',
          });
      }, deadlineMs);
      this.#queue(probe, 'back');
      this.pump();
    });
  }

  /** Runs `handOver` with pumping held, then pumps the lanes once. */
  holding<T>(handOver: () => T): T {
    this.#holding = true;
    try {
      return handOver();
    } finally {
      this.#holding = false;
      this.pump();
    }
  }

  /**
   * A gateway into an account's batch lane: each probe waits there for a prober until `deadlineAt`.
   * One this region passes on is rcpt's own failure here, asked again — at once when the region
   * lost its probers, on its schedule when every egress here was refused — and then the next
   * region takes it (this one refuses it at dispatch).
   */
  batchLane(
    accountId: string,
    deadlineAt: number,
    end: 'front' | 'back',
    passable: boolean,
    ownOnly = false,
  ): ProbeGateway {
    return {
      probe: (request) =>
        new Promise<ProbeOutcome>((finish) => {
          this.#queue(
            hubProbe('batch', { accountId, ownOnly }, request, deadlineAt, passable, (answer) =>
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
          if (!this.#holding) this.pump();
        }),
    };
  }

  /** A prober's report on probe `id`; see `#answersOwnProbe` for what is refused. */
  reported(attachment: ProberAttachment, id: string, report: ProbeReport): void {
    if (!this.#answersOwnProbe(attachment, id, 'result')) return;
    // Every egress of that prober is refused at this MX: another prober may send from
    // addresses that are not, or else another region (docs/operations.md, "Egress addresses").
    if (refusedAtEveryEgress(report) && (this.#passToAnotherProber(id) || this.#passToNextRegion(id, report)))
      return;
    this.#end(id, { kind: 'report', report });
  }

  /** A prober refused probe `id` (over capacity or draining): another prober (or this one later) gets it. */
  refused(attachment: ProberAttachment, id: string): void {
    if (this.#answersOwnProbe(attachment, id, 'error')) this.#resend(id);
  }

  /** `proberId`'s link is gone: its probes go to another prober (or, with none left, back to their schedule). */
  proberGone(proberId: string): void {
    for (const [id, running] of [...this.#running]) {
      if (running.proberId === proberId) this.#resend(id);
    }
    this.#inFlight.delete(proberId);
  }

  inFlightOf(proberId: string): number {
    return this.#inFlight.get(proberId) ?? 0;
  }

  /** Probes waiting for a prober, by lane, and those out. */
  backlog(): { single: number; batch: number; running: number } {
    let single = 0;
    for (const lane of this.#single.values()) single += lane.length;
    let batch = 0;
    for (const lane of this.#batch.values()) batch += lane.length;
    return { single, batch, running: this.#running.size };
  }

  /**
   * Sends waiting probes while some prober has room for them, the least charged account first
   * (fair-shares.ts): single calls within their account's priority bound, then everything else,
   * each account's single calls before its batch work.
   */
  pump(): void {
    const probers = this.#links.ready();
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
    const byOwner = new ProbersByOwner(probers);
    const pick = (probe: HubProbe): ReadyProber | null => {
      if (fullHosts.has(probe.mxKey)) return null;
      // The account's own probers first, while one has not passed it over and is not blocked
      // at its MX; then the shared fleet, if the account allows it (prober-owners.ts).
      const candidates = byOwner.candidates(
        probe,
        ({ attachment }) =>
          !probe.passedOver.has(attachment.proberId) &&
          !this.#links.blockedAt(attachment.proberId, probe.request, now),
      );
      // Every prober passed it over once: start the round again (resends are bounded).
      const target =
        affineProber(candidates, probe.mxKey, probe.passedOver) ??
        affineProber(candidates, probe.mxKey, new Set());
      if (!target) return null;
      const { proberId, capacity, perMxConcurrency } = target.attachment;
      if ((this.#inFlight.get(proberId) ?? 0) >= capacity) return null;
      // The reserve keeps a shared prober's last slots for other accounts; an own prober has none.
      const own = target.attachment.accountId === probe.accountId;
      if (!own && !this.#shares.mayTake(probe.accountId, proberId, capacity)) return null;
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
    this.pump();
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
    const another = new ProbersByOwner(this.#links.ready())
      .allowed(probe)
      .some((prober) => !passedOver.has(prober.attachment.proberId));
    if (!another || probe.deadlineAt - Date.now() <= 2 * DEADLINE_MARGIN_MS) return false;
    this.#release(id);
    probe.passedOver = passedOver;
    this.#queue(probe, 'front');
    this.pump();
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
    this.pump();
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
    this.pump();
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
}

function decrement(counts: Map<string, number>, key: string): void {
  const left = (counts.get(key) ?? 1) - 1;
  if (left > 0) counts.set(key, left);
  else counts.delete(key);
}

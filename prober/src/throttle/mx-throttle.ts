// Politeness towards MX hosts: how many SMTP sessions the prober holds open to one MX address
// and to one provider at once, and how long it stays away from a host that said "too much".
// Exceeding a host's connection limit earns a 421 (RFC 5321 §3.8) at best and a listing on
// a blocklist at worst; both cost every later verification through that host.
//
// Sessions are reused: probe() asks several RCPTs per session, so one slot here serves many
// addresses. Slots are not kept open between requests: an idle SMTP connection is closed by
// the server within minutes anyway (RFC 5321 §4.5.3.2.7), and holding it would count against
// the host's limit for nothing.
//
// Each host also gets a profile of what it has shown it tolerates: how many sessions at once
// (lowered to what it served when it refused one with 421, raised by one after every
// SESSION_GROWTH_EVERY sessions that went well, never above perIpLimit), how many rejected recipients one session may collect before the server slows
// down or hangs up (Postfix counts errors per connection: smtpd_soft_error_limit = 10 slows
// every reply, smtpd_hard_error_limit = 20 disconnects; postconf(5)), and how many recipients
// one transaction takes.

/** Why the prober is staying away from a host. */
export interface HostBackoff {
  ip: string;
  /** Epoch milliseconds (of the throttle's clock) when the host may be tried again. */
  until: number;
  reason: string;
}

export interface MxThrottleOptions {
  /** Sessions open at once to one MX IP address; default 5. */
  perIpLimit?: number;
  /** Sessions open at once to all MX hosts of a provider, by provider name; unlisted providers have no such limit. */
  providerLimits?: ReadonlyMap<string, number> | Readonly<Record<string, number>>;
  /** First backoff after a 421 or 4.7.x; doubled on each one that follows without a success. Default 30 s. */
  backoffBaseMs?: number;
  /** The longest backoff; default 15 min. */
  backoffCapMs?: number;
  /** Rejected RCPTs one session may collect before it ends and a fresh one goes on; default 8. */
  rejectionsPerSession?: number;
  /** Clock in epoch milliseconds; tests pass their own. */
  now?: () => number;
}

/** What the prober has learned one MX host takes. */
export interface HostProfile {
  /** Sessions at once. */
  sessionLimit: number;
  /** Rejected RCPTs per session. */
  rejectionBudget: number;
  /** Recipients per transaction, when the host has said "452 too many recipients"; else null. */
  recipientsPerTransaction: number | null;
  /** RCPTs a session to this host can carry within its rejection budget, as far as seen. */
  rcptsPerSession: number;
  /** Share of RCPTs the host rejects, as far as seen (1 for a host not seen yet). */
  rejectShare: number;
  /**
   * The host has answered promptly so far: a session ended calm, and no reply was held back, no
   * hang-up and no refusal since. Such a host reads our QUIT as soon as it arrives.
   */
  prompt: boolean;
  /**
   * The shortest round trip an EHLO to the host took, once `ROUND_TRIP_SAMPLES` sessions have
   * measured one; else null. The shortest, because a busy moment (ours or the host's) only ever
   * adds to the path's own delay.
   */
  roundTripMs: number | null;
}

/** Gives the slot back. Calling it again does nothing. */
export type ReleaseSlot = () => void;

/** acquire() refused because the host is in backoff: the edge should retry later. */
export class HostBackoffError extends Error {
  readonly backoff: HostBackoff;

  constructor(backoff: HostBackoff) {
    super(`backing off ${backoff.ip} until ${new Date(backoff.until).toISOString()}: ${backoff.reason}`);
    this.name = 'HostBackoffError';
    this.backoff = backoff;
  }
}

/** acquire() gave up waiting because its signal was aborted (the probe's deadline). */
export class SlotWaitAbortedError extends Error {
  constructor(ip: string) {
    super(`gave up waiting for a session slot to ${ip}`);
    this.name = 'SlotWaitAbortedError';
  }
}

interface Waiter {
  ip: string;
  provider: string | null;
  grant: (release: ReleaseSlot) => void;
  refuse: (error: Error) => void;
}

interface BackoffState {
  until: number;
  reason: string;
  /** The exponent of the next backoff: backoffs in a row since the last success. */
  nextLevel: number;
}

interface ProfileState extends Omit<HostProfile, 'rcptsPerSession' | 'roundTripMs'> {
  /** The shortest EHLO round trip seen, and how many sessions measured one. */
  shortestRoundTripMs: number;
  roundTrips: number;
  /** Sessions without pushback since the session limit last changed. */
  goodSessions: number;
  /** Sessions without slowness or hang-up since the rejection budget last changed. */
  calmSessions: number;
  touchedAt: number;
}

const DEFAULT_PER_IP_LIMIT = 5;
// Sessions that measure a host's round trip before the shortest is believed.
export const ROUND_TRIP_SAMPLES = 10;
// Below Postfix's smtpd_soft_error_limit (10), so no reply is ever slowed, with room for the
// catch-all test's rejection and for servers set a little stricter.
const DEFAULT_REJECTIONS_PER_SESSION = 8;
// One more session at once after this many went well: slow growth, as TCP's additive increase.
export const SESSION_GROWTH_EVERY = 10;
// A budget lowered by one slow episode comes back one step after this many calm sessions.
const BUDGET_GROWTH_EVERY = 50;
// A host not heard of for this long starts from the defaults again.
const PROFILE_TTL_MS = 60 * 60_000;
// However few rejections a host gives, a session is not planned to carry more than this.
const MAX_RCPTS_PER_SESSION = 100;
const MAX_PROFILES = 10_000;
const DEFAULT_BACKOFF_BASE_MS = 30_000;
const DEFAULT_BACKOFF_CAP_MS = 15 * 60_000;

export class MxThrottle {
  readonly perIpLimit: number;
  readonly #providerLimits: ReadonlyMap<string, number>;
  readonly #backoffBaseMs: number;
  readonly #backoffCapMs: number;
  readonly #now: () => number;
  readonly #openByIp = new Map<string, number>();
  readonly #openByProvider = new Map<string, number>();
  readonly #peakByIp = new Map<string, number>();
  readonly #backoffByIp = new Map<string, BackoffState>();
  readonly #profiles = new Map<string, ProfileState>();
  readonly #connectedByIp = new Map<string, number>();
  readonly #rejectionsPerSession: number;
  /** Every waiting acquire(), oldest first: granted in that order as slots free up. */
  #waiting: Waiter[] = [];
  #open = 0;

  constructor(options: MxThrottleOptions = {}) {
    this.perIpLimit = positiveInteger(options.perIpLimit ?? DEFAULT_PER_IP_LIMIT, 'perIpLimit');
    const limits = options.providerLimits ?? new Map<string, number>();
    this.#providerLimits = new Map(limits instanceof Map ? limits : Object.entries(limits));
    for (const [provider, limit] of this.#providerLimits)
      positiveInteger(limit, `providerLimits.${provider}`);
    this.#backoffBaseMs = options.backoffBaseMs ?? DEFAULT_BACKOFF_BASE_MS;
    this.#backoffCapMs = options.backoffCapMs ?? DEFAULT_BACKOFF_CAP_MS;
    this.#now = options.now ?? Date.now;
    this.#rejectionsPerSession = positiveInteger(
      options.rejectionsPerSession ?? DEFAULT_REJECTIONS_PER_SESSION,
      'rejectionsPerSession',
    );
  }

  /** What `ip` has shown it takes (the defaults for a host not seen yet). */
  profile(ip: string): HostProfile {
    const profile = this.#profile(ip);
    const { sessionLimit, rejectionBudget, recipientsPerTransaction, rejectShare, prompt } = profile;
    const rcptsPerSession = Math.min(MAX_RCPTS_PER_SESSION, rejectionBudget / Math.max(rejectShare, 0.01));
    const roundTripMs = profile.roundTrips >= ROUND_TRIP_SAMPLES ? profile.shortestRoundTripMs : null;
    return {
      sessionLimit,
      rejectionBudget,
      recipientsPerTransaction,
      rcptsPerSession,
      rejectShare,
      prompt,
      roundTripMs,
    };
  }

  /** A session to `ip` measured `ms` from its EHLO to the reply. */
  noteRoundTrip(ip: string, ms: number): void {
    const profile = this.#profile(ip);
    profile.shortestRoundTripMs = Math.min(profile.shortestRoundTripMs, ms);
    profile.roundTrips++;
  }

  /**
   * `ip` refused a session with 421 at the greeting while `othersOpen` of ours were connected: it
   * takes that many at once (Postfix: smtpd_client_connection_count_limit). Growth starts over.
   */
  noteConnectionRefused(ip: string, othersOpen: number): void {
    const profile = this.#profile(ip);
    profile.sessionLimit = Math.max(1, Math.min(profile.sessionLimit, othersOpen));
    profile.goodSessions = 0;
    profile.prompt = false;
  }

  /**
   * A session to `ip` got a late reply after `errors` rejections (Postfix's error sleep past
   * smtpd_soft_error_limit, or a tarpit answering that very rejection late): later sessions
   * stop short of that.
   */
  noteSlowAfterErrors(ip: string, errors: number): void {
    this.#lowerBudget(ip, errors - 1);
  }

  /** `ip` hung up after `errors` rejections (Postfix's smtpd_hard_error_limit). */
  noteHangupAfterErrors(ip: string, errors: number): void {
    this.#lowerBudget(ip, errors - 1);
  }

  /** `ip` said "452 too many recipients" after taking `accepted` in one transaction. */
  noteRecipientLimit(ip: string, accepted: number): void {
    if (accepted < 1) return;
    const profile = this.#profile(ip);
    profile.recipientsPerTransaction = Math.min(profile.recipientsPerTransaction ?? accepted, accepted);
  }

  /**
   * A session to `ip` ended after `rcpts` RCPTs, `rejected` of them; `calm` when the host
   * neither slowed down, hung up nor refused. Calm sessions slowly raise the session limit and
   * the budget again.
   */
  noteSessionEnd(ip: string, rcpts: number, rejected: number, calm: boolean): void {
    const profile = this.#profile(ip);
    if (rcpts > 0) profile.rejectShare = profile.rejectShare * 0.7 + (rejected / rcpts) * 0.3;
    profile.prompt = calm;
    if (!calm) {
      profile.goodSessions = 0;
      profile.calmSessions = 0;
      return;
    }
    if (++profile.goodSessions >= SESSION_GROWTH_EVERY && profile.sessionLimit < this.perIpLimit) {
      profile.sessionLimit++;
      profile.goodSessions = 0;
      this.#grantWaiting();
    }
    if (
      ++profile.calmSessions >= BUDGET_GROWTH_EVERY &&
      profile.rejectionBudget < this.#rejectionsPerSession
    ) {
      profile.rejectionBudget++;
      profile.calmSessions = 0;
    }
  }

  /**
   * A session to `ip` has its TCP connection; call the returned function when it is closed.
   * A host that refuses a connection for too many counts these (Postfix's anvil counts at
   * accept), not the slots of sessions still connecting.
   */
  noteConnected(ip: string): () => void {
    this.#connectedByIp.set(ip, (this.#connectedByIp.get(ip) ?? 0) + 1);
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      decrement(this.#connectedByIp, ip);
    };
  }

  /** Sessions to `ip` with a TCP connection now. */
  connectedSessions(ip: string): number {
    return this.#connectedByIp.get(ip) ?? 0;
  }

  #lowerBudget(ip: string, budget: number): void {
    const profile = this.#profile(ip);
    profile.rejectionBudget = Math.max(1, Math.min(profile.rejectionBudget, budget));
    profile.calmSessions = 0;
    profile.prompt = false;
  }

  #profile(ip: string): ProfileState {
    const now = this.#now();
    let profile = this.#profiles.get(ip);
    if (profile && now - profile.touchedAt > PROFILE_TTL_MS) profile = undefined;
    if (!profile) {
      profile = {
        sessionLimit: this.perIpLimit,
        rejectionBudget: this.#rejectionsPerSession,
        recipientsPerTransaction: null,
        rejectShare: 1,
        prompt: false,
        shortestRoundTripMs: Number.POSITIVE_INFINITY,
        roundTrips: 0,
        goodSessions: 0,
        calmSessions: 0,
        touchedAt: now,
      };
    }
    // Map order is insertion order: re-inserting keeps the least recently used first.
    this.#profiles.delete(ip);
    profile.touchedAt = now;
    this.#profiles.set(ip, profile);
    if (this.#profiles.size > MAX_PROFILES) {
      const oldest = this.#profiles.keys().next().value;
      if (oldest !== undefined) this.#profiles.delete(oldest);
    }
    return profile;
  }

  /**
   * A session slot to `ip` (and to `provider`, when it has a limit). Resolves with its release
   * when one is free, first come first served. Rejects at once with HostBackoffError while the
   * host is backed off (also for those already waiting when the backoff starts), and with
   * SlotWaitAbortedError when `signal` aborts first.
   */
  acquire(ip: string, provider: string | null = null, signal?: AbortSignal): Promise<ReleaseSlot> {
    const backoff = this.backoffOf(ip);
    if (backoff) return Promise.reject(new HostBackoffError(backoff));
    if (signal?.aborted) return Promise.reject(new SlotWaitAbortedError(ip));
    // Every waiter that fits is granted as soon as a slot frees (#grantWaiting), so those still
    // waiting do not fit: one that fits now overtakes nobody who could go.
    if (this.#hasRoom(ip, provider)) return Promise.resolve(this.#take(ip, provider));
    return new Promise<ReleaseSlot>((resolve, reject) => {
      const onAbort = () => {
        this.#waiting = this.#waiting.filter((other) => other !== waiter);
        reject(new SlotWaitAbortedError(ip));
      };
      const waiter: Waiter = {
        ip,
        provider,
        grant: (release) => {
          signal?.removeEventListener('abort', onAbort);
          resolve(release);
        },
        refuse: (error) => {
          signal?.removeEventListener('abort', onAbort);
          reject(error);
        },
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#waiting.push(waiter);
    });
  }

  /**
   * Stays away from `ip` after it said 421 or 4.7.x: 30 s, doubling with each backoff in a row
   * up to 15 min, until a session to it goes well (`recordSuccess`).
   */
  backoff(ip: string, reason: string): HostBackoff {
    const now = this.#now();
    const previous = this.#backoffByIp.get(ip);
    // A backoff long expired without news of the host starts over rather than doubling.
    const stale = previous !== undefined && now - previous.until > this.#backoffCapMs;
    let backoff: HostBackoff;
    if (previous && previous.until > now) {
      // Sessions opened before the backoff began report the same pushback: one episode, one step.
      backoff = { ip, until: previous.until, reason: previous.reason };
    } else {
      const level = previous && !stale ? previous.nextLevel : 0;
      const delay = Math.min(this.#backoffCapMs, this.#backoffBaseMs * 2 ** Math.min(level, 30));
      backoff = { ip, until: now + delay, reason };
      this.#backoffByIp.set(ip, { until: backoff.until, reason, nextLevel: level + 1 });
    }
    const refused = this.#waiting.filter((waiter) => waiter.ip === ip);
    this.#waiting = this.#waiting.filter((waiter) => waiter.ip !== ip);
    for (const waiter of refused) waiter.refuse(new HostBackoffError(backoff));
    return backoff;
  }

  /**
   * A session to `ip` got its answers: the next backoff starts from the base again. A backoff
   * under way stays: the success may be a session opened before the host pushed back.
   */
  recordSuccess(ip: string): void {
    const state = this.#backoffByIp.get(ip);
    if (!state) return;
    if (state.until <= this.#now()) this.#backoffByIp.delete(ip);
    else state.nextLevel = 0;
  }

  /** The backoff `ip` is in now, or null. */
  backoffOf(ip: string): HostBackoff | null {
    const state = this.#backoffByIp.get(ip);
    if (!state || state.until <= this.#now()) return null;
    return { ip, until: state.until, reason: state.reason };
  }

  /** SMTP sessions open now (for the rcpt_open_sessions gauge). */
  openSessions(): number {
    return this.#open;
  }

  /** Sessions open now, by MX IP. */
  openSessionsByIp(): Map<string, number> {
    return new Map(this.#openByIp);
  }

  /** The most sessions that were open at once to `ip` since this throttle was made. */
  peakOpenSessions(ip: string): number {
    return this.#peakByIp.get(ip) ?? 0;
  }

  /** acquire() calls waiting for a slot now. */
  waiting(): number {
    return this.#waiting.length;
  }

  /** Hosts in backoff now (for the rcpt_host_backoffs gauge); expired entries are dropped. */
  backoffs(): HostBackoff[] {
    const now = this.#now();
    const active: HostBackoff[] = [];
    for (const [ip, state] of this.#backoffByIp) {
      if (state.until > now) active.push({ ip, until: state.until, reason: state.reason });
      else if (now - state.until > this.#backoffCapMs) this.#backoffByIp.delete(ip);
    }
    return active;
  }

  #hasRoom(ip: string, provider: string | null): boolean {
    const limit = this.#profiles.get(ip)?.sessionLimit ?? this.perIpLimit;
    if ((this.#openByIp.get(ip) ?? 0) >= limit) return false;
    const providerLimit = provider === null ? undefined : this.#providerLimits.get(provider);
    return providerLimit === undefined || (this.#openByProvider.get(provider ?? '') ?? 0) < providerLimit;
  }

  #take(ip: string, provider: string | null): ReleaseSlot {
    const open = (this.#openByIp.get(ip) ?? 0) + 1;
    this.#openByIp.set(ip, open);
    this.#peakByIp.set(ip, Math.max(open, this.#peakByIp.get(ip) ?? 0));
    if (provider !== null) this.#openByProvider.set(provider, (this.#openByProvider.get(provider) ?? 0) + 1);
    this.#open++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#give(ip, provider);
    };
  }

  #give(ip: string, provider: string | null): void {
    this.#open--;
    decrement(this.#openByIp, ip);
    if (provider !== null) decrement(this.#openByProvider, provider);
    this.#grantWaiting();
  }

  /** Grants every waiter that fits now, oldest first; one that does not fit does not block others. */
  #grantWaiting(): void {
    const stillWaiting: Waiter[] = [];
    const granted: [Waiter, ReleaseSlot][] = [];
    for (const waiter of this.#waiting) {
      // #take counts the slot at once, so the waiters after this one see it taken.
      if (this.#hasRoom(waiter.ip, waiter.provider))
        granted.push([waiter, this.#take(waiter.ip, waiter.provider)]);
      else stillWaiting.push(waiter);
    }
    this.#waiting = stillWaiting;
    for (const [waiter, release] of granted) waiter.grant(release);
  }
}

function decrement(counts: Map<string, number>, key: string): void {
  const count = (counts.get(key) ?? 0) - 1;
  if (count > 0) counts.set(key, count);
  else counts.delete(key);
}

function positiveInteger(value: number, name: string): number {
  if (!Number.isInteger(value) || value < 1)
    throw new RangeError(`${name} must be a positive integer, got ${value}`);
  return value;
}

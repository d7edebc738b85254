// A probe: the SMTP half of verifying the addresses of one domain. It walks the domain's MX
// hosts in preference order (RFC 5321 §5.1) and asks RCPT TO for every address in sessions
// that host tolerates: each session stops before it collects more rejections than the host's
// budget (MxThrottle's profile: Postfix slows every reply after 10 errors in a connection and
// hangs up after 20, postconf(5)), and a fresh connection goes on with the rest; several run
// at once, up to the host's session limit. Addresses a session could not ask (a hang-up, a
// 421, a timeout) are asked again at once in another session, within the probe's deadline.
// One random address of the domain, asked after the real ones of a session's first group,
// tells a real mailbox from a catch-all when a real address is accepted; its answer is cached
// per domain. Round trips are what a probe far from the server waits for, so none is idle: a
// group (RFC 2920) carries RSET, MAIL, the RCPTs and, when it is the session's last, QUIT, and
// a session's slot passes to the next as soon as the host can no longer count it (runSession).
// It reports raw replies and failures; the verdict (shared/verify) decides what they mean.
import { randomInt } from 'node:crypto';
import { domainToASCII } from 'node:url';
import type {
  AddressOutcome,
  Evidence,
  MxTarget,
  ProbeReport,
  ProbeRequest,
  SessionFacts,
  SessionFailure,
  SmtpReply,
} from '@rcpt/shared/contract/prober';
import { sessionEvidence } from '@rcpt/shared/verify/evidence';
import {
  type MailProvider,
  PROVIDER_REGISTRY,
  type ProviderRegistry,
  rcptTells,
} from '@rcpt/shared/verify/providers';
import { asksClientToSlowDown, refusesClient, replyStageOf } from '@rcpt/shared/verify/smtp-reply';
import { type Egress, SYSTEM_EGRESS } from '../egress/egress.ts';
import { egressLabel, egressMasker, egressNames } from '../egress/egress-label.ts';
import { HostBackoffError, type MxThrottle, type ReleaseSlot } from '../throttle/mx-throttle.ts';
import type { CatchAllCache } from './catch-all-cache.ts';
import { guardFailure, targetIpRefusal, wireTextRefusal } from './guards.ts';
import {
  failureOf,
  type SessionTimeouts,
  SmtpSession,
  type StartTlsPolicy,
  type TransactionOutcome,
  Transcript,
} from './session.ts';

export interface ProbeDeps {
  /** The port every MX listens on: 25 in production (RFC 5321 §4.5.4.2 has no other), the world's in tests. */
  smtpPort: number;
  /** Lets the prober dial private and loopback MX addresses (tests, private deployments). */
  allowPrivateTargets: boolean;
  /** No session without STARTTLS; otherwise TLS is used when offered. */
  requireTls: boolean;
  /** Step deadlines; the defaults are DEFAULT_SESSION_TIMEOUTS. The whole probe has request.timeoutMs. */
  timeouts?: Partial<SessionTimeouts>;
  /** Shared by every probe of the process: it is what keeps the per-host limits. */
  throttle: MxThrottle;
  /** Who runs the domain's mail: whether RCPT tells anything, and the session pool. Default PROVIDER_REGISTRY. */
  providers?: ProviderRegistry;
  /** Milliseconds for durationMs and the probe's deadline; default performance.now. */
  now?: () => number;
  /** The local part of the catch-all test address; default 20 random lowercase letters and digits. */
  randomLocalPart?: () => string;
  /** Most RCPTs in one mail transaction (RSET between them); default 50, or what the host takes. */
  recipientsPerTransaction?: number;
  /** Catch-all answers per domain, shared by the probes of the process; none: asked every probe. */
  catchAllCache?: CatchAllCache;
  /** Where the sessions go out from (egress/egress.ts); default the system's choice. */
  egress?: Egress;
  /** The prober's region, named in the evidence. */
  region?: string;
  /**
   * The key of the egress's label in the evidence (egress/egress-label.ts): the prober's token;
   * none, a key of this process.
   */
  egressLabelKey?: string | null;
}

// RFC 5321 §4.5.3.1.8 obliges servers to take 100 recipients per transaction; staying well
// below keeps us clear of anti-harvesting limits that count RCPTs per transaction.
const DEFAULT_RECIPIENTS_PER_TRANSACTION = 50;
const CATCH_ALL_LOCAL_PART_LENGTH = 20;
// Sessions that may end before an address got its answer; then it keeps the last failure.
const SESSIONS_PER_ADDRESS = 3;
// The catch-all test is tried in at most this many sessions.
const CATCH_ALL_ATTEMPTS = 2;
// A reply this much later than the round trip shows the server holding it back: Postfix's
// error sleep is 1 s (smtpd_error_sleep_time), Exchange's tarpit 5 s (TarpitInterval).
const SLOW_REPLY_MS = 600;
// How often a session refused at the greeting for too many connections is tried again.
const CONNECTION_CAP_RETRIES = 5;
const LOCAL_PART_ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';
// The shortest round trip to a host at which its slot is handed on when QUIT is written
// (runSession): the round trip is the host's time to read QUIT before our next connection
// reaches it, and below this a moment's delay in the host's own processing could eat it (seen
// at 20 ms: on a busy machine a loopback host's shortest EHLO took that long, and the host then
// counted our next connection before reading our QUIT).
const HANDOVER_MIN_ROUND_TRIP_MS = 40;

/** One real address of the request, and what it is asked as. */
interface ProbedAddress {
  outcome: AddressOutcome;
  /** The RCPT TO path: the domain as A-labels unless the local part needs SMTPUTF8 anyway. */
  wire: string;
  /** RFC 6531 §3.2: a non-ASCII local part cannot be expressed without SMTPUTF8. */
  needsSmtputf8: boolean;
  /** Sessions that ended before this address was answered. */
  cutShort: number;
  /** The session that last asked it: where its outcome came from. */
  askedIn: SmtpSession | null;
}

interface Candidate {
  host: string;
  ip: string;
}

/** How the sessions to one MX address ended: every address has an outcome, or the next MX address should be tried. */
type Attempt = { kind: 'finished' } | { kind: 'next'; failure: SessionFailure };

/** Everything one probe shares between its sessions. */
interface ProbeRun {
  request: ProbeRequest;
  deps: ProbeDeps;
  asciiDomain: string;
  /** Where the domain's catch-all answer is kept in the cache (`catchAllKeyOf`). */
  catchAllKey: string;
  /** Addresses waiting to be asked; a session takes them a group at a time and gives back what it could not ask. */
  pending: ProbedAddress[];
  /** Every address that passed the guards. */
  probed: ProbedAddress[];
  /** The sessions opened so far, recording their dialogue when the request asks for evidence. */
  sessions: SmtpSession[];
  /** Sessions that handed their slot on and are still closing: a report with their dialogue waits for them. */
  closing: Promise<void>[];
  /** The made-up addresses of the catch-all test, as sent. */
  catchAllPaths: Set<string>;
  provider: MailProvider | null;
  facts: SessionFacts;
  catchAllReply: SmtpReply | null;
  /** untested, asked by a session now, or answered (here or from the cache). */
  catchAll: { state: 'untested' | 'asking' | 'answered'; attempts: number };
  /** A real address was accepted: the catch-all test is worth its RCPT. */
  accepted: boolean;
  transcript: Transcript | null;
  remainingMs: () => number;
  /**
   * A reply that refused the client itself (a block-list listing): no other address is asked
   * from this egress, so the caller can ask them from another (egress/egress-router.ts).
   */
  clientRefusal: SmtpReply | null;
}

/** The sessions of one probe to one MX address. */
interface HostRun {
  candidate: Candidate;
  /** Why this host cannot answer the rest (the next MX address may). */
  failure: SessionFailure | null;
  /** Every address has its outcome: stop. */
  settled: boolean;
  /** Sessions of this probe open to the host now. */
  running: number;
}

/**
 * Probes the addresses of `request` (all of one domain) in one SMTP session. Never throws for
 * anything a server, the network or the request does: each address gets its RCPT reply or the
 * failure that kept it from one, within `request.timeoutMs`.
 */
export async function probe(request: ProbeRequest, deps: ProbeDeps): Promise<ProbeReport> {
  const now = deps.now ?? (() => performance.now());
  const startedAt = now();
  const deadline = startedAt + request.timeoutMs;
  const perAddress = request.emails.map((email): AddressOutcome => ({ email, reply: null, failure: null }));
  const run: ProbeRun = {
    request,
    deps,
    pending: [],
    probed: [],
    sessions: [],
    closing: [],
    catchAllPaths: new Set(),
    provider: null,
    asciiDomain: toAsciiDomain(request.domain),
    catchAllKey: catchAllKeyOf(request, deps.providers ?? PROVIDER_REGISTRY),
    facts: { mxHost: null, mxIp: null, tls: false, tlsError: null, smtputf8: false, durationMs: 0 },
    catchAllReply: null,
    catchAll: { state: 'untested', attempts: 0 },
    accepted: false,
    transcript: request.transcript ? new Transcript() : null,
    remainingMs: () => deadline - now(),
    clientRefusal: null,
  };
  const report = (): ProbeReport => {
    for (const outcome of perAddress) {
      if (outcome.reply === null && outcome.failure === null) {
        outcome.failure = {
          kind: 'disconnected',
          stage: 'connect',
          reply: null,
          message: 'no outcome recorded',
        };
      }
    }
    if (run.catchAllReply === null && run.accepted) {
      run.catchAllReply = deps.catchAllCache?.get(run.catchAllKey) ?? null;
    }
    const session: SessionFacts = { ...run.facts, durationMs: Math.max(0, Math.round(now() - startedAt)) };
    if (run.transcript) session.transcript = run.transcript.lines;
    if (request.evidence) addEvidence(run);
    return { perAddress, catchAllReply: run.catchAllReply, session };
  };

  // Guards first: nothing below may put unchecked text on the wire or dial an unchecked address.
  const requestRefusal =
    wireTextRefusal(request.helo, 'the HELO name') ??
    wireTextRefusal(request.mailFrom, 'the MAIL FROM address') ??
    wireTextRefusal(request.domain, 'the domain');
  if (requestRefusal) {
    for (const outcome of perAddress) outcome.failure = guardFailure(requestRefusal);
    return report();
  }
  for (const outcome of perAddress) {
    const address = addressOf(outcome.email, run.asciiDomain);
    if (typeof address === 'string') outcome.failure = guardFailure(address);
    else run.pending.push({ outcome, ...address, cutShort: 0, askedIn: null });
  }
  run.probed = [...run.pending];
  if (deps.catchAllCache?.get(run.catchAllKey)) run.catchAll.state = 'answered';
  if (run.pending.length === 0) return report();

  const providers = deps.providers ?? PROVIDER_REGISTRY;
  run.provider =
    providers.find(
      request.domain,
      request.mx.map((mx) => mx.host),
    )?.provider ?? null;
  if (run.provider && !rcptTells(run.provider)) {
    settle(run.pending, {
      kind: 'provider_unverifiable',
      stage: 'guard',
      reply: null,
      message:
        run.provider.rcpt === 'accepts_everything'
          ? `${run.provider.name} accepts every address at RCPT: a probe cannot tell`
          : `${run.provider.name} does not answer verification probes`,
    });
    return report();
  }

  const { candidates, refusals } = candidatesOf(request.mx, deps.allowPrivateTargets);
  if (candidates.length === 0) {
    settle(
      run.pending,
      refusals[0]
        ? guardFailure(refusals[0])
        : {
            kind: 'connection_failed',
            stage: 'connect',
            reply: null,
            message: 'no MX address to connect to',
          },
    );
    return report();
  }

  const failures: SessionFailure[] = [];
  for (const candidate of candidates) {
    if (run.remainingMs() <= 0) {
      failures.push(probeTimeout(failures.at(-1)?.stage ?? 'connect', request.timeoutMs));
      break;
    }
    const attempt = await askHost(run, candidate);
    if (attempt.kind === 'finished') return report();
    failures.push(attempt.failure);
  }
  settle(run.pending, mostTelling(failures));
  return report();
}

/**
 * Runs `probe` over `requests` with at most `concurrency` probes at once and returns the
 * reports in request order: a load generator for benchmarks (the throttle still applies).
 */
export async function probeMany(
  requests: readonly ProbeRequest[],
  deps: ProbeDeps,
  concurrency = 100,
): Promise<ProbeReport[]> {
  const reports: ProbeReport[] = new Array(requests.length);
  let next = 0;
  const worker = async () => {
    while (next < requests.length) {
      const index = next++;
      const request = requests[index];
      if (request) reports[index] = await probe(request, deps);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(concurrency, requests.length)) }, worker));
  return reports;
}

/**
 * Asks the pending addresses on one MX address, in as many sessions at once as the host takes
 * and the addresses need, until each has its answer, the host fails, or the deadline passes.
 */
async function askHost(run: ProbeRun, candidate: Candidate): Promise<Attempt> {
  const host: HostRun = { candidate, failure: null, settled: false, running: 0 };
  const profile = run.deps.throttle.profile(candidate.ip);
  const sessions = Math.max(
    1,
    Math.min(profile.sessionLimit, Math.ceil(run.pending.length / Math.max(1, profile.rcptsPerSession))),
  );
  await Promise.all(Array.from({ length: sessions }, () => sessionLoop(run, host)));
  // Sessions that handed their slot on are still reading their last replies. The evidence and
  // the transcript show the dialogue to its end; without them the answer is known already.
  if (run.request.evidence || run.request.transcript) await Promise.all(run.closing);
  if (run.clientRefusal) {
    // The same refusal for the rest: it was about the client, whichever address it answered.
    settle(run.pending, clientRefused(run.clientRefusal));
    return { kind: 'finished' };
  }
  if (host.settled || run.pending.length === 0) return { kind: 'finished' };
  if (host.failure) return { kind: 'next', failure: host.failure };
  settle(run.pending, probeTimeout('rcpt', run.request.timeoutMs));
  return { kind: 'finished' };
}

/** Addresses left to ask, or a catch-all test still worth a session. */
function hasWork(run: ProbeRun): boolean {
  return run.clientRefusal === null && (run.pending.length > 0 || wantsCatchAll(run));
}

/** The catch-all test has no answer yet and may still be tried. */
function catchAllUntested(run: ProbeRun): boolean {
  return (
    run.clientRefusal === null &&
    run.catchAll.state === 'untested' &&
    run.catchAll.attempts < CATCH_ALL_ATTEMPTS
  );
}

/** The verdict needs the catch-all answer (a real address was accepted) and none is in sight: worth a session of its own. */
function wantsCatchAll(run: ProbeRun): boolean {
  return run.accepted && catchAllUntested(run);
}

function clientRefused(reply: SmtpReply): SessionFailure {
  return { kind: 'rejected', stage: 'rcpt', reply, message: 'the server refused this client (egress)' };
}

/** One session after another to the host, each holding a throttle slot while its connection is open. */
async function sessionLoop(run: ProbeRun, host: HostRun): Promise<void> {
  const { deps, request } = run;
  const { ip } = host.candidate;
  let capRetries = 0;
  while (hasWork(run) && host.failure === null && !host.settled) {
    if (run.remainingMs() <= 0) {
      settle(run.pending, probeTimeout('connect', request.timeoutMs));
      host.settled = true;
      return;
    }
    let release: ReleaseSlot;
    const waitLimit = new AbortController();
    const waitTimer = setTimeout(() => waitLimit.abort(), Math.max(0, run.remainingMs()));
    try {
      release = await deps.throttle.acquire(ip, run.provider?.id ?? null, waitLimit.signal);
    } catch (error) {
      if (error instanceof HostBackoffError) {
        // Another MX address of the domain may be fine; if none is, the edge retries later.
        host.failure = { kind: 'throttled', stage: 'connect', reply: null, message: error.message };
        return;
      }
      settle(run.pending, probeTimeout('connect', request.timeoutMs, 'waiting for a session slot'));
      host.settled = true;
      return;
    } finally {
      clearTimeout(waitTimer);
    }
    let counted = false;
    try {
      // Another session may have taken the last addresses while this one waited for its slot,
      // and those running may carry the rest (the host's profile knows more by now).
      if (!hasWork(run) || host.failure !== null || host.settled) return;
      const needed = Math.ceil(run.pending.length / Math.max(1, deps.throttle.profile(ip).rcptsPerSession));
      if (host.running > 0 && host.running >= needed) return;
      host.running++;
      counted = true;
      // Opportunistic TLS whose handshake fails is retried once in plaintext, as MTAs do at TLS
      // level "may"; the handshake error stays in tlsError.
      let failure = await runSession(
        run,
        host,
        deps.requireTls ? 'required' : 'opportunistic',
        null,
        release,
      );
      if (failure?.kind === 'tls_failed' && !deps.requireTls) {
        failure = await runSession(run, host, 'off', failure.message, release);
      }
      if (failure === null) continue;
      // Postfix's anvil: "421 4.7.0 … too many connections from …" at the greeting while other
      // sessions of ours are open means the host takes that many; wait for one of them to end.
      const othersOpen = deps.throttle.connectedSessions(ip);
      if (isGreetingRefusal(failure) && othersOpen > 0 && capRetries++ < CONNECTION_CAP_RETRIES) {
        deps.throttle.noteConnectionRefused(ip, othersOpen);
        continue;
      }
      endBeforeRcpt(run, host, failure);
    } finally {
      if (counted) host.running--;
      release();
    }
  }
}

/**
 * One session: opens it, then asks groups of pending addresses until they are done or the
 * session's rejection budget is spent. Returns the failure that kept it from asking anything,
 * or null when it asked (whatever became of the addresses: those not answered are pending again).
 *
 * The session's throttle slot stands for a connection the host counts, and a host stops
 * counting one when it reads our QUIT, half a round trip after we write it, while a connection
 * we open then reaches its accept() only after the handshake, 1.5 round trips later. So when
 * QUIT is written to a prompt host over a path long enough for that gap to matter, the slot
 * goes to the next session at once (`release`) and this one closes in the background: the
 * greeting and EHLO of the next overlap the last replies of this one, and the host never
 * serves more of our sessions than its limit. A host that held a reply back (an error sleep, a
 * tarpit) may still be busy with our last commands when the next connection arrives: its slot
 * waits for the close.
 */
async function runSession(
  run: ProbeRun,
  host: HostRun,
  startTls: StartTlsPolicy,
  earlierTlsError: string | null,
  release: ReleaseSlot,
): Promise<SessionFailure | null> {
  const { request, deps } = run;
  const { ip } = host.candidate;
  const tally: SessionTally = { rcpts: 0, errors: 0, strained: false, pushback: null };
  let handedOn = false;
  const session = new SmtpSession({
    host: host.candidate.host,
    ip: host.candidate.ip,
    port: deps.smtpPort,
    helo: request.helo,
    sessionTimeoutMs: Math.max(1, Math.round(run.remainingMs())),
    ...(deps.timeouts ? { timeouts: deps.timeouts } : {}),
    startTls,
    transcript: run.transcript,
    recordDialogue: request.evidence ?? false,
    ...(deps.egress ? { egress: deps.egress } : {}),
    onConnected: () => {
      disconnected = deps.throttle.noteConnected(ip);
    },
    onQuitWritten: () => {
      const profile = deps.throttle.profile(ip);
      if (
        (profile.roundTripMs ?? 0) < HANDOVER_MIN_ROUND_TRIP_MS ||
        !profile.prompt ||
        tally.strained ||
        tally.pushback !== null
      ) {
        return;
      }
      handedOn = true;
      disconnected();
      release();
    },
  });
  let disconnected = () => {};
  run.sessions.push(session);
  try {
    try {
      await session.open();
    } catch (error) {
      const failure = failureOf(error);
      if (failure.stage !== 'connect') noteFacts(run, session, earlierTlsError);
      return failure;
    }
    noteFacts(run, session, earlierTlsError);
    if (session.roundTripMs !== null) deps.throttle.noteRoundTrip(ip, session.roundTripMs);
    return await askRecipients(run, host, session, tally);
  } finally {
    const closed = session.quit().then(() => {
      disconnected();
      // Postfix's error sleep holds every reply once the session has made its soft limit of
      // errors, the 221 too: a session that stopped just there learns it from the QUIT.
      const held = session.quitReplyWaitMs;
      if (held !== null && tally.errors > 0 && held > (session.roundTripMs ?? 0) + SLOW_REPLY_MS) {
        deps.throttle.noteSlowAfterErrors(ip, tally.errors);
      }
    });
    if (handedOn) run.closing.push(closed);
    else await closed;
  }
}

/** What one session did, for the host's profile. */
interface SessionTally {
  rcpts: number;
  /** Rejected RCPTs (4xx and 5xx, "too many recipients" aside): what Postfix counts as errors. */
  errors: number;
  /** The server held a reply back after rejections, or hung up after them. */
  strained: boolean;
  /** Replies that asked the host to be left alone (421, 4.7.x). */
  pushback: SmtpReply | null;
}

/**
 * Groups of pending addresses, each one mail transaction (RSET pipelined before all but the
 * first), each no larger than the rejections the session may still collect, so that even a
 * group of unknown mailboxes stays within the host's budget. The catch-all test's made-up
 * address ends the first group with room for it: its answer only counts when a real address is
 * accepted (shared/verify/verdict.ts), and asking it alongside costs no round trip of its own.
 * QUIT ends the group after which nothing is left to ask. Returns a failure only when the
 * session could not ask anything.
 */
async function askRecipients(
  run: ProbeRun,
  host: HostRun,
  session: SmtpSession,
  tally: SessionTally,
): Promise<SessionFailure | null> {
  const { request, deps } = run;
  const { ip } = host.candidate;
  const mailFromNeedsSmtputf8 = !isAscii(request.mailFrom);
  const unsupported = (what: string): SessionFailure => ({
    kind: 'smtputf8_unsupported',
    stage: 'mail',
    reply: null,
    message: `${what} needs SMTPUTF8 (RFC 6531), which ${session.host} does not advertise`,
  });
  if (mailFromNeedsSmtputf8 && !session.smtputf8) return unsupported('the MAIL FROM address');
  // RFC 6531 §3.4: an internationalised address must not reach a server without SMTPUTF8.
  // Only those addresses fail; the others are still asked.
  if (!session.smtputf8) {
    for (const address of run.pending) {
      if (address.needsSmtputf8) address.outcome.failure = unsupported('the address');
    }
    run.pending = run.pending.filter((address) => address.outcome.failure === null);
  }

  const profile = deps.throttle.profile(ip);
  let first = true;
  let stop = false;
  let askedAnything = false;
  while (!stop && tally.errors < profile.rejectionBudget) {
    const perTransaction = Math.max(
      1,
      deps.recipientsPerTransaction ?? profile.recipientsPerTransaction ?? DEFAULT_RECIPIENTS_PER_TRANSACTION,
    );
    const room = Math.min(profile.rejectionBudget - tally.errors, perTransaction);
    // Alone, the made-up address is only worth a transaction once a real one was accepted; beside
    // real ones, whenever there is room for both.
    const withCatchAll = catchAllUntested(run) && (run.accepted || (room >= 2 && run.pending.length > 0));
    const group = run.pending.splice(0, room - (withCatchAll ? 1 : 0));
    if (group.length === 0 && !withCatchAll) break;
    if (withCatchAll) {
      run.catchAll.state = 'asking';
      run.catchAll.attempts++;
    }
    const randomLocalPart = deps.randomLocalPart ?? catchAllLocalPart;
    const catchAllPath = withCatchAll ? `${randomLocalPart()}@${run.asciiDomain}` : null;
    if (catchAllPath) run.catchAllPaths.add(catchAllPath);
    // The made-up address last: a server that slows down or hangs up after a rejection (a
    // tarpit, an error limit) has answered the real ones by then.
    const recipients = [...group.map((address) => address.wire), ...(catchAllPath ? [catchAllPath] : [])];
    for (const address of group) address.askedIn = session;
    const smtputf8 = mailFromNeedsSmtputf8 || group.some((address) => address.needsSmtputf8);
    // The last group carries QUIT: nothing is left to ask (the catch-all test included).
    const last = run.pending.length === 0 && (withCatchAll || !catchAllUntested(run));
    const outcome = await session.transaction(request.mailFrom, recipients, {
      smtputf8,
      reset: !first,
      quit: last,
    });
    first = false;
    stop = takeReplies(run, host, outcome, group, withCatchAll, tally) || last;
    if (outcome.replies.length > 0) askedAnything = true;
    if (outcome.failure) {
      // Nothing asked at all: the session failed as a whole (MAIL refused, a hang-up at once).
      if (!askedAnything) {
        run.pending.unshift(...group);
        if (withCatchAll && run.catchAll.state === 'asking') run.catchAll.state = 'untested';
        return outcome.failure;
      }
      if (tally.errors > 0 && isHangup(outcome.failure)) {
        // Postfix's smtpd_hard_error_limit: "421 4.7.0 … Error: too many errors" and the end.
        deps.throttle.noteHangupAfterErrors(ip, tally.errors);
        tally.strained = true;
      } else if (
        outcome.failure.reply &&
        asksClientToSlowDown(outcome.failure.reply, replyStageOf(outcome.failure.stage))
      ) {
        tally.pushback = outcome.failure.reply;
      }
      break;
    }
  }
  if (tally.pushback) deps.throttle.backoff(ip, describeReply(tally.pushback));
  else deps.throttle.recordSuccess(ip);
  deps.throttle.noteSessionEnd(ip, tally.rcpts, tally.errors, !tally.strained && tally.pushback === null);
  return null;
}

/**
 * Gives each reply of a transaction to its address (or to the catch-all test), counts the
 * rejections, notices replies held back, and puts back what was not answered. Returns whether
 * the session should end here (the server has begun to slow it down).
 */
function takeReplies(
  run: ProbeRun,
  host: HostRun,
  outcome: TransactionOutcome,
  group: ProbedAddress[],
  withCatchAll: boolean,
  tally: SessionTally,
): boolean {
  const { deps } = run;
  const { ip } = host.candidate;
  const { replies, timing } = outcome;
  // RFC 5321 §4.5.3.1.10: "452 too many recipients" asks for the rest in a new transaction.
  // Only when this one made progress, so a server that says it to everything cannot loop us.
  const progressed = replies.some((reply) => !isTooManyRecipients(reply));
  const roundTrip = Math.max(0, timing.mailAt - timing.sentAt);
  const deferred: ProbedAddress[] = [];
  let acceptedInTransaction = 0;
  let recipientLimitSeen = false;
  let slow = false;
  replies.forEach((reply, index) => {
    tally.rcpts++;
    const previousAt = index === 0 ? timing.mailAt : (timing.replyAt[index - 1] ?? timing.mailAt);
    const late = (timing.replyAt[index] ?? previousAt) - previousAt > roundTrip + SLOW_REPLY_MS;
    const rejected = reply.code >= 400 && !isTooManyRecipients(reply);
    // A reply held back after rejections (Postfix's error sleep), or a rejection held back
    // itself (a tarpit): this many rejections is what the host takes in one session.
    if (late && !slow && (tally.errors > 0 || rejected)) {
      slow = true;
      tally.strained = true;
      deps.throttle.noteSlowAfterErrors(ip, tally.errors);
    }
    if (rejected) tally.errors++;
    const address = group[index];
    const recipientLimit = progressed && isTooManyRecipients(reply);
    // A recipient limit asks for another transaction, not for the host to be left alone.
    if (!recipientLimit && asksClientToSlowDown(reply, 'rcpt')) tally.pushback ??= reply;
    if (refusesClient(reply, 'rcpt')) run.clientRefusal ??= reply;
    if (recipientLimit) {
      if (!recipientLimitSeen) deps.throttle.noteRecipientLimit(ip, acceptedInTransaction);
      recipientLimitSeen = true;
      if (address) deferred.push(address);
      else run.catchAll.state = 'untested';
      return;
    }
    if (reply.code >= 200 && reply.code < 300) acceptedInTransaction++;
    if (!address) {
      // After the group's addresses: the catch-all test's made-up one.
      run.catchAllReply = reply;
      run.catchAll.state = 'answered';
      // A refusal of the client says nothing about the domain's catch-all: not kept.
      if (!refusesClient(reply, 'rcpt')) deps.catchAllCache?.set(run.catchAllKey, reply);
      return;
    }
    address.outcome.reply = reply;
    if (reply.code >= 200 && reply.code < 300) run.accepted = true;
  });
  if (withCatchAll && replies.length <= group.length) run.catchAll.state = 'untested';
  // What the session could not ask goes back to the front, to be asked at once by another
  // session; an address cut short too often keeps the failure.
  const unanswered = group.slice(replies.length);
  const failure = outcome.failure;
  for (const address of unanswered) {
    address.cutShort++;
    if (failure && address.cutShort >= SESSIONS_PER_ADDRESS) address.outcome.failure = failure;
  }
  run.pending.unshift(...deferred, ...unanswered.filter((address) => address.outcome.failure === null));
  return slow || run.clientRefusal !== null;
}

/** A session that ended before any RCPT reply: back off if the host asked for it, then fall back or finish. */
function endBeforeRcpt(run: ProbeRun, host: HostRun, failure: SessionFailure): void {
  if (failure.reply && asksClientToSlowDown(failure.reply, replyStageOf(failure.stage))) {
    run.deps.throttle.backoff(host.candidate.ip, describeReply(failure.reply));
  }
  if (isWorthAnotherHost(failure)) {
    host.failure = failure;
    return;
  }
  settle(run.pending, failure);
  host.settled = true;
}

/** 421 instead of the greeting (RFC 5321 §3.1). */
function isGreetingRefusal(failure: SessionFailure): boolean {
  return failure.kind === 'rejected' && failure.stage === 'banner' && failure.reply?.code === 421;
}

/** The server ended the session in the middle: a 421 or a closed connection. */
function isHangup(failure: SessionFailure): boolean {
  return failure.kind === 'disconnected' || (failure.kind === 'rejected' && failure.reply?.code === 421);
}

/**
 * Failures that say nothing about the domain's mail, so the next MX address may do better:
 * no connection, a timeout, a hang-up, garbage, TLS trouble, a host in backoff, and 421
 * (RFC 5321 §3.8: service not available). A 5xx refusal is final: a backup MX often takes
 * anything for later relaying and would answer "accepted" for mailboxes that do not exist.
 */
function isWorthAnotherHost(failure: SessionFailure): boolean {
  if (failure.kind === 'rejected') return failure.reply?.code === 421;
  return failure.kind !== 'target_refused' && failure.kind !== 'smtputf8_unsupported';
}

function isTooManyRecipients(reply: SmtpReply): boolean {
  return reply.code === 452 && (reply.enhanced === '4.5.3' || /too many recipients/i.test(reply.text));
}

function noteFacts(run: ProbeRun, session: SmtpSession, earlierTlsError: string | null): void {
  run.facts = {
    ...run.facts,
    mxHost: session.host,
    mxIp: session.ip,
    tls: session.tls,
    tlsError: session.tlsError ?? earlierTlsError,
    smtputf8: session.smtputf8,
  };
}

/**
 * Each address's evidence: the session that last asked it (where its answer came from), or, for
 * an address no session got to ask, the last session opened (a refused connection, a greeting
 * refused). None without a session.
 */
function addEvidence(run: ProbeRun): void {
  const { egress, region } = run.deps;
  const label = egressLabel(
    egress?.id ?? SYSTEM_EGRESS.id,
    region ?? 'default',
    run.deps.egressLabelKey ?? null,
  );
  const views = new Map<SmtpSession, ((own: string) => Evidence) | null>();
  const viewOf = (session: SmtpSession) => {
    if (views.has(session)) return views.get(session) ?? null;
    const recorder = session.dialogue;
    // Customers see the egress by its label, in every text of the session (docs/verdicts.md).
    const mask = egressMasker({
      label,
      names: [...egressNames(egress), session.localAddress, run.request.helo],
      mxIp: session.ip,
    });
    const view = recorder
      ? sessionEvidence(
          {
            mxHost: session.host,
            mxIp: session.ip,
            egress: label,
            region: region ?? null,
            tls: session.tls
              ? {
                  version: session.tlsVersion,
                  cipher: session.tlsCipher,
                  certificateVerified: session.tlsError === null,
                }
              : null,
            startedAt: recorder.startedAt,
            durationMs: recorder.durationMs,
            steps: recorder.steps.map((step) => ({
              ...step,
              command: step.command === null ? null : mask(step.command, 'command'),
              reply: step.reply ? { ...step.reply, text: mask(step.reply.text, 'reply') } : null,
            })),
            ended: recorder.ended === null ? null : mask(recorder.ended, 'reply'),
          },
          run.catchAllPaths,
        )
      : null;
    views.set(session, view);
    return view;
  };
  const last = run.sessions.at(-1) ?? null;
  for (const address of run.probed) {
    const session = address.askedIn ?? last;
    const view = session ? viewOf(session) : null;
    if (view) address.outcome.evidence = view(address.wire);
  }
}

/** Gives `failure` to every address still without an outcome. */
function settle(addresses: readonly ProbedAddress[], failure: SessionFailure): void {
  for (const address of addresses) {
    if (address.outcome.reply === null && address.outcome.failure === null) address.outcome.failure = failure;
  }
}

// When every MX address failed, the failure that says most about the domain is reported: a
// server's own refusal over a hang-up, over a timeout, over no connection at all.
const FAILURE_WEIGHT: Record<SessionFailure['kind'], number> = {
  rejected: 9,
  tls_failed: 8,
  smtputf8_unsupported: 7,
  invalid_response: 6,
  disconnected: 5,
  timeout: 4,
  throttled: 3,
  connection_failed: 2,
  provider_unverifiable: 1,
  target_refused: 0,
};

function mostTelling(failures: readonly SessionFailure[]): SessionFailure {
  let best: SessionFailure | undefined;
  for (const failure of failures) {
    if (!best || FAILURE_WEIGHT[failure.kind] > FAILURE_WEIGHT[best.kind]) best = failure;
  }
  return (
    best ?? { kind: 'connection_failed', stage: 'connect', reply: null, message: 'no MX address was tried' }
  );
}

function probeTimeout(stage: SessionFailure['stage'], timeoutMs: number, doing?: string): SessionFailure {
  return {
    kind: 'timeout',
    stage,
    reply: null,
    message: `the probe ran out of its ${timeoutMs} ms${doing ? ` ${doing}` : ''}`,
  };
}

/** MX addresses in preference order (RFC 5321 §5.1), each once, minus those the guard refuses. */
function candidatesOf(
  mx: readonly MxTarget[],
  allowPrivateTargets: boolean,
): { candidates: Candidate[]; refusals: string[] } {
  const candidates: Candidate[] = [];
  const refusals: string[] = [];
  const seen = new Set<string>();
  for (const target of [...mx].sort((a, b) => a.preference - b.preference)) {
    const hostRefusal = wireTextRefusal(target.host, 'the MX host name');
    if (hostRefusal) {
      refusals.push(hostRefusal);
      continue;
    }
    for (const ip of target.ips) {
      const refusal = targetIpRefusal(ip, allowPrivateTargets);
      if (refusal) refusals.push(`${target.host}: ${refusal}`);
      else if (!seen.has(ip)) {
        seen.add(ip);
        candidates.push({ host: target.host, ip });
      }
    }
  }
  return { candidates, refusals };
}

/** The RCPT form of `email`, or why it cannot be asked about. */
/**
 * The catch-all cache key of a probe: the domain, and for a domain whose MX is a known
 * provider's, that provider. A security gateway and the tenant behind it (docs/verdicts.md,
 * "Catch-alls behind security gateways") answer the same domain's made-up address differently:
 * the gateway takes it, the tenant refuses it.
 */
function catchAllKeyOf(request: ProbeRequest, providers: ProviderRegistry): string {
  const domain = toAsciiDomain(request.domain);
  const match = providers.find(
    request.domain,
    request.mx.map((mx) => mx.host),
  );
  return match?.by === 'mx' ? `${domain} via ${match.provider.id}` : domain;
}

function addressOf(
  email: string,
  asciiDomain: string,
): Pick<ProbedAddress, 'wire' | 'needsSmtputf8'> | string {
  const refusal = wireTextRefusal(email, 'the address');
  if (refusal) return refusal;
  const at = email.lastIndexOf('@');
  if (at <= 0) return 'the address has no local part';
  const localPart = email.slice(0, at);
  if (toAsciiDomain(email.slice(at + 1)) !== asciiDomain) {
    return `the address is not in the probed domain ${asciiDomain}`;
  }
  if (isAscii(localPart)) return { wire: `${localPart}@${asciiDomain}`, needsSmtputf8: false };
  return { wire: email, needsSmtputf8: true };
}

/** The domain as A-labels (RFC 5890), lower case; unchanged when it is not a valid IDN. */
function toAsciiDomain(domain: string): string {
  const lower = domain.trim().toLowerCase().replace(/\.$/, '');
  return domainToASCII(lower) || lower;
}

function isAscii(text: string): boolean {
  return /^\p{ASCII}*$/u.test(text);
}

function catchAllLocalPart(): string {
  let localPart = '';
  for (let index = 0; index < CATCH_ALL_LOCAL_PART_LENGTH; index++) {
    localPart += LOCAL_PART_ALPHABET[randomInt(LOCAL_PART_ALPHABET.length)];
  }
  return localPart;
}

function describeReply(reply: SmtpReply): string {
  return `${reply.code}${reply.enhanced ? ` ${reply.enhanced}` : ''} ${reply.text}`.slice(0, 200);
}

// A probe: the SMTP half of verifying the addresses of one domain. It walks the domain's MX
// hosts in preference order (RFC 5321 §5.1), opens one session, asks RCPT TO for every
// address, and, when the server accepted at least one, asks for a random address of the same
// domain to tell a real mailbox from a catch-all. It reports raw replies and failures; the
// verdict (shared/verify) decides what they mean.
import { randomInt } from 'node:crypto';
import { domainToASCII } from 'node:url';
import type {
  AddressOutcome,
  MxTarget,
  ProbeReport,
  ProbeRequest,
  SessionFacts,
  SessionFailure,
  SmtpReply,
} from '@rcpt/shared/contract/prober';
import {
  type MailProvider,
  PROVIDER_REGISTRY,
  type ProviderRegistry,
  rcptTells,
} from '@rcpt/shared/verify/providers';
import { HostBackoffError, type MxThrottle, type ReleaseSlot } from '../throttle/mx-throttle.ts';
import { guardFailure, targetIpRefusal, wireTextRefusal } from './guards.ts';
import { failureOf, type SessionTimeouts, SmtpSession, type StartTlsPolicy, Transcript } from './session.ts';

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
  /** Most RCPTs in one mail transaction (RSET between them); default 50. */
  recipientsPerTransaction?: number;
}

// RFC 5321 §4.5.3.1.8 obliges servers to take 100 recipients per transaction; staying well
// below keeps us clear of anti-harvesting limits that count RCPTs per transaction.
const DEFAULT_RECIPIENTS_PER_TRANSACTION = 50;
const CATCH_ALL_LOCAL_PART_LENGTH = 20;
const LOCAL_PART_ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';

/** One real address of the request, and what it is asked as. */
interface ProbedAddress {
  outcome: AddressOutcome;
  /** The RCPT TO path: the domain as A-labels unless the local part needs SMTPUTF8 anyway. */
  wire: string;
  /** RFC 6531 §3.2: a non-ASCII local part cannot be expressed without SMTPUTF8. */
  needsSmtputf8: boolean;
}

interface Candidate {
  host: string;
  ip: string;
}

/** How one session attempt ended: every address has an outcome, or the next MX address should be tried. */
type Attempt = { kind: 'finished' } | { kind: 'next'; failure: SessionFailure };

/** Everything one probe shares between its attempts. */
interface ProbeRun {
  request: ProbeRequest;
  deps: ProbeDeps;
  pending: ProbedAddress[];
  provider: MailProvider | null;
  facts: SessionFacts;
  catchAllReply: SmtpReply | null;
  transcript: Transcript | null;
  remainingMs: () => number;
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
    provider: null,
    facts: { mxHost: null, mxIp: null, tls: false, tlsError: null, smtputf8: false, durationMs: 0 },
    catchAllReply: null,
    transcript: request.transcript ? new Transcript() : null,
    remainingMs: () => deadline - now(),
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
    const session: SessionFacts = { ...run.facts, durationMs: Math.max(0, Math.round(now() - startedAt)) };
    if (run.transcript) session.transcript = run.transcript.lines;
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
  const asciiDomain = toAsciiDomain(request.domain);
  for (const outcome of perAddress) {
    const address = addressOf(outcome.email, asciiDomain);
    if (typeof address === 'string') outcome.failure = guardFailure(address);
    else run.pending.push({ outcome, ...address });
  }
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
    const attempt = await attemptSession(run, candidate);
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

/** One session to one MX address, holding a throttle slot for as long as the connection is open. */
async function attemptSession(run: ProbeRun, candidate: Candidate): Promise<Attempt> {
  const { deps } = run;
  let release: ReleaseSlot;
  const waitLimit = new AbortController();
  const waitTimer = setTimeout(() => waitLimit.abort(), Math.max(0, run.remainingMs()));
  try {
    release = await deps.throttle.acquire(candidate.ip, run.provider?.id ?? null, waitLimit.signal);
  } catch (error) {
    if (error instanceof HostBackoffError) {
      // Another MX address of the domain may be fine; if none is, the edge retries later.
      return {
        kind: 'next',
        failure: { kind: 'throttled', stage: 'connect', reply: null, message: error.message },
      };
    }
    settle(run.pending, probeTimeout('connect', run.request.timeoutMs, 'waiting for a session slot'));
    return { kind: 'finished' };
  } finally {
    clearTimeout(waitTimer);
  }
  try {
    // Opportunistic TLS whose handshake fails is retried once in plaintext, as MTAs do at TLS
    // level "may"; the handshake error stays in tlsError.
    let attempt = await runSession(run, candidate, deps.requireTls ? 'required' : 'opportunistic', null);
    if (attempt.kind === 'next' && attempt.failure.kind === 'tls_failed' && !deps.requireTls) {
      attempt = await runSession(run, candidate, 'off', attempt.failure.message);
    }
    return attempt;
  } finally {
    release();
  }
}

async function runSession(
  run: ProbeRun,
  candidate: Candidate,
  startTls: StartTlsPolicy,
  earlierTlsError: string | null,
): Promise<Attempt> {
  const { request, deps } = run;
  const session = new SmtpSession({
    host: candidate.host,
    ip: candidate.ip,
    port: deps.smtpPort,
    helo: request.helo,
    sessionTimeoutMs: Math.max(1, Math.round(run.remainingMs())),
    ...(deps.timeouts ? { timeouts: deps.timeouts } : {}),
    startTls,
    transcript: run.transcript,
  });
  const answers: SmtpReply[] = [];
  try {
    try {
      await session.open();
    } catch (error) {
      const failure = failureOf(error);
      if (failure.stage !== 'connect') noteFacts(run, session, earlierTlsError);
      return endBeforeRcpt(run, session, failure);
    }
    noteFacts(run, session, earlierTlsError);
    const failure = await askRecipients(run, session, answers);
    if (failure && answers.length === 0) return endBeforeRcpt(run, session, failure);
    if (failure) settle(run.pending, failure);
    const hostRefusal = [...answers, run.catchAllReply, failure?.reply ?? null].find(
      (reply) => reply && isHostPushback(reply),
    );
    if (hostRefusal) deps.throttle.backoff(candidate.ip, describeReply(hostRefusal));
    else deps.throttle.recordSuccess(candidate.ip);
    return { kind: 'finished' };
  } finally {
    await session.quit();
  }
}

/**
 * RCPT TO for every pending address, in transactions of at most `recipientsPerTransaction`
 * with RSET between them, then the catch-all test. Returns the failure that stopped the
 * session, if any; `answers` collects every RCPT reply received.
 */
async function askRecipients(
  run: ProbeRun,
  session: SmtpSession,
  answers: SmtpReply[],
): Promise<SessionFailure | null> {
  const { request, deps } = run;
  const mailFromNeedsSmtputf8 = !isAscii(request.mailFrom);
  const unsupported = (what: string): SessionFailure => ({
    kind: 'smtputf8_unsupported',
    stage: 'mail',
    reply: null,
    message: `${what} needs SMTPUTF8 (RFC 6531), which ${session.host} does not advertise`,
  });
  if (mailFromNeedsSmtputf8 && !session.smtputf8) return unsupported('the MAIL FROM address');
  // RFC 6531 §3.4: an internationalised address must not reach a server without SMTPUTF8.
  // Only those addresses fail; the others of the batch are still asked.
  const askable: ProbedAddress[] = [];
  for (const address of run.pending) {
    if (address.needsSmtputf8 && !session.smtputf8) address.outcome.failure = unsupported('the address');
    else askable.push(address);
  }
  run.pending = askable;

  const perTransaction = Math.max(1, deps.recipientsPerTransaction ?? DEFAULT_RECIPIENTS_PER_TRANSACTION);
  const transactions: ProbedAddress[][] = [];
  for (let start = 0; start < askable.length; start += perTransaction) {
    transactions.push(askable.slice(start, start + perTransaction));
  }
  let first = true;
  for (let group = transactions.shift(); group; group = transactions.shift()) {
    if (!first) {
      try {
        await session.reset();
      } catch (error) {
        return failureOf(error, 'mail');
      }
    }
    first = false;
    const smtputf8 = mailFromNeedsSmtputf8 || group.some((address) => address.needsSmtputf8);
    const outcome = await session.transaction(
      request.mailFrom,
      group.map((address) => address.wire),
      { smtputf8 },
    );
    // RFC 5321 §4.5.3.1.10: "452 too many recipients" asks for the rest in a new transaction.
    // Only when this one made progress, so a server that says it to everything cannot loop us.
    const progressed = outcome.replies.some((reply) => !isTooManyRecipients(reply));
    const deferred: ProbedAddress[] = [];
    outcome.replies.forEach((reply, index) => {
      const address = group[index];
      if (!address) return;
      if (progressed && isTooManyRecipients(reply)) {
        deferred.push(address);
        return;
      }
      address.outcome.reply = reply;
      answers.push(reply);
    });
    run.pending = run.pending.filter((address) => address.outcome.reply === null);
    if (outcome.failure) return outcome.failure;
    if (deferred.length > 0) transactions.unshift(deferred);
  }

  // The catch-all test, in the transaction still open: only an accepted real address makes it
  // worth asking (ARCHITECTURE.md), and its answer is only about the domain.
  if (answers.some((reply) => reply.code >= 200 && reply.code < 300)) {
    const randomLocalPart = deps.randomLocalPart ?? catchAllLocalPart;
    try {
      run.catchAllReply = await session.recipient(`${randomLocalPart()}@${toAsciiDomain(request.domain)}`);
    } catch (error) {
      // The real addresses have their answers; catch-all stays untested (null).
      run.transcript?.record('*', `catch-all test not answered: ${failureOf(error, 'rcpt').message}`);
    }
  }
  return null;
}

/** A session that ended before any RCPT reply: back off if the host asked for it, then fall back or finish. */
function endBeforeRcpt(run: ProbeRun, session: SmtpSession, failure: SessionFailure): Attempt {
  if (failure.reply && isHostPushback(failure.reply)) {
    run.deps.throttle.backoff(session.ip, describeReply(failure.reply));
  }
  if (isWorthAnotherHost(failure)) return { kind: 'next', failure };
  settle(run.pending, failure);
  return { kind: 'finished' };
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

/** 421, or a 4.7.x temporary refusal (RFC 3463 §3.8: security or policy status): the host wants fewer probes. */
function isHostPushback(reply: SmtpReply): boolean {
  return (
    reply.code === 421 ||
    (reply.code >= 400 && reply.code < 500 && (reply.enhanced?.startsWith('4.7.') ?? false))
  );
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
function addressOf(email: string, asciiDomain: string): Omit<ProbedAddress, 'outcome'> | string {
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

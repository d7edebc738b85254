// What an upload learns of the list's domains rcpt has not met (docs/api.md, "Upload a list"): before
// it answers, it asks one address of each of a few of them, as a single call probes (through the
// hub, ahead of batch work), and waits a short while for the answers. A quick answer: the domain
// is ordinary. Greylisting: the domain holds every address back for its delay. No answer within
// the wait: a tarpit, whose probes run to the batch's probe timeout. What is not learnt in time
// (rcpt's own lateness: no prober, the hub down, DNS slow) counts as ordinary, as before the
// sample: the sample never fails nor charges the upload.
//
// The answers are only the estimate's: the job asks the sampled addresses again with the others
// (one probe each of a few domains is cheaper than a second way into the job's results). The
// probes go through the domain facts' probing (verify/domain-facts.ts), so a quick answer's
// catch-all reply is kept, and the next upload counts the domain as known. A probe cut at the
// wait measured nothing but "longer than the wait", so its time is not kept as the domain's slow
// probe: the job's first probe of the domain measures it, and the next upload is told that.
import { checkSyntax } from '@rcpt/shared/verify/syntax';
import { verdictFromFacts } from '@rcpt/shared/verify/verdict';
import type { VerifyDeps } from '@rcpt/shared/verify/verify-address';
import { within } from '@rcpt/shared/within';
import { recentGreylistDelays } from '../../storage/domain-facts.ts';
import type { RequestServices } from '../request-services.ts';
import type { ProbingCaller } from '../verify/deps.ts';
import type { DomainPace, UnknownDomain } from './estimate.ts';

/** Unknown domains asked at most, those with the most addresses first. */
export const SAMPLE_DOMAINS = 8;

/** How long an upload waits for the sample's answers at most, DNS and SMTP together (BATCH_SAMPLE_WAIT_MS). */
export const SAMPLE_WAIT_MS = 2_000;

/** Kept from the prober's timeout for its answer to reach the upload within the wait (the hub keeps 250 ms twice, probe-scheduler.ts). */
const HUB_MARGIN_MS = 600;

/** A sample probe with less than this left is not asked: it could not reach the server's greeting. */
const MIN_PROBE_MS = 300;

/**
 * The delay assumed for a greylister whose reply names none, while rcpt has measured no other
 * greylister to take the median of. Greylisters hold addresses back for 60 s (the greylist pace's
 * first step is built on it, RETRY_PACES) or Postgrey's `--delay` default of 300 s (postgrey(8)):
 * the pace lets them through 90 s and 390 s after the first answer, more than 4× apart, so no one
 * guess is within 2× of both. 120 s (let through at 150 s) is 1.7× over the first and 2.6× under
 * the second, where 60 s or 300 s would be 4.3× off the other; the job measures the real delay,
 * and every later upload takes the median of the measures. The bench's list greylists for 60 s:
 * its first upload was estimated 152 s for the 93 s it took (docs/capacity.md).
 */
export const UNMEASURED_GREYLIST_DELAY_SECONDS = 120;

/** The newest measured greylisting delays whose median stands for a greylister not yet measured. */
export const GREYLIST_DELAYS_READ = 101;

export interface PaceSampleDeps {
  /** The pipeline's deps for the uploader's single calls: the domain's route, its probes. */
  verify: Pick<VerifyDeps, 'mailRoute' | 'prober' | 'mailFrom' | 'helo'>;
  /** The measured greylisting delays of other domains (storage `recentGreylistDelays`). */
  greylistDelays: () => Promise<number[]>;
  /** The batch's probe timeout (BATCH_PROBE_TIMEOUT_MS), in seconds: what a tarpit takes per try. */
  probeTimeoutSeconds: number;
  waitMs?: number;
  now?: () => number;
}

/** The upload's sampler: `caller`'s single-call probes, over the request's domain facts. */
export function paceSamplerOf(
  services: Pick<RequestServices, 'db' | 'config' | 'verifyDeps'>,
  caller: ProbingCaller,
): (unknown: readonly UnknownDomain[]) => Promise<DomainPace[]> {
  const { db, config } = services;
  return async (unknown) =>
    samplePaces(
      {
        verify: services.verifyDeps(caller),
        greylistDelays: () => recentGreylistDelays(db, Date.now(), GREYLIST_DELAYS_READ),
        probeTimeoutSeconds: config.BATCH_PROBE_TIMEOUT_MS / 1000,
        ...(config.BATCH_SAMPLE_WAIT_MS === undefined ? {} : { waitMs: config.BATCH_SAMPLE_WAIT_MS }),
      },
      unknown,
    );
}

/** What one sampled domain's answer says of its pace; null: nothing (ordinary, as unsampled). */
type Sampled = { kind: 'greylist'; namedDelaySeconds: number | null } | { kind: 'tarpit' } | null;

/**
 * The paces of the slow ones among the first SAMPLE_DOMAINS of `unknown` (most addresses first),
 * as one probe each answered within the wait. The job ends when its slowest work does, so the
 * slow paces found stand for the unknown domains not sampled as well: if one in eight sampled is
 * a tarpit, about one in eight of the others is, and the job ends with the tarpit's work either
 * way; when none sampled is slow, the others count as ordinary.
 */
export async function samplePaces(
  deps: PaceSampleDeps,
  unknown: readonly UnknownDomain[],
): Promise<DomainPace[]> {
  const { prober } = deps.verify;
  if (prober === null || unknown.length === 0) return [];
  const now = deps.now ?? Date.now;
  const waitMs = deps.waitMs ?? SAMPLE_WAIT_MS;
  const deadlineAt = now() + waitMs;
  const answers = await Promise.all(
    unknown.slice(0, SAMPLE_DOMAINS).map((domain) =>
      // Whatever fails or comes late tells nothing: the upload never waits past its wait.
      within(sampleDomain(deps, domain, deadlineAt, now), deadlineAt - now()).catch(() => null),
    ),
  );
  const paces: DomainPace[] = [];
  let greylistGuess: number | null = null;
  for (const answer of answers) {
    if (answer?.kind === 'tarpit') {
      paces.push({
        greylistDelaySeconds: null,
        slowProbe: { seconds: deps.probeTimeoutSeconds, timedOut: true },
      });
    } else if (answer?.kind === 'greylist') {
      // The delay the reply names, else what greylisters rcpt measured hold back for, else the guess.
      greylistGuess ??=
        answer.namedDelaySeconds === null ? await greylistDelayGuess(deps).catch(() => null) : null;
      const delay = answer.namedDelaySeconds ?? greylistGuess ?? UNMEASURED_GREYLIST_DELAY_SECONDS;
      paces.push({ greylistDelaySeconds: delay, slowProbe: null });
    }
  }
  return paces;
}

/** One probe of one address of `unknown`, and what its answer says of the domain's pace. */
async function sampleDomain(
  deps: PaceSampleDeps,
  unknown: UnknownDomain,
  deadlineAt: number,
  now: () => number,
): Promise<Sampled> {
  const { verify } = deps;
  const route = await verify.mailRoute(unknown.domain);
  // No mail server to ask (no MX, a null MX, private addresses): nothing slow to probe.
  if (route.kind !== 'mx' || verify.prober === null) return null;
  // The prober gets what is left of the wait, less the time its answer takes to come back.
  const probeMs = deadlineAt - now() - HUB_MARGIN_MS;
  if (probeMs < MIN_PROBE_MS) return null;
  const probe = await verify.prober.probe(
    {
      emails: [unknown.email],
      domain: unknown.domain,
      mx: route.mx,
      mailFrom: verify.mailFrom,
      helo: verify.helo,
      timeoutMs: probeMs,
      transcript: false,
    },
    probeMs + HUB_MARGIN_MS,
  );
  const { policy } = verdictFromFacts({
    address: checkSyntax(unknown.email),
    dns: route,
    probe,
    verifiedAt: new Date(now()).toISOString(),
    processingTimeMs: 0,
  });
  // The reply table decides, as for the job's own answers (sub-statuses.ts: `greylisted` is
  // asked again on the greylist pace, `smtp_timeout` on the timeout pace).
  if (policy.retry === 'greylist') {
    const named = policy.retryAfterGuessed ? undefined : policy.retryAfterSeconds;
    return { kind: 'greylist', namedDelaySeconds: named ?? null };
  }
  if (policy.retry === 'timeout') return { kind: 'tarpit' };
  return null;
}

/** The median of the measured greylisting delays; null when none is measured. */
async function greylistDelayGuess(deps: PaceSampleDeps): Promise<number | null> {
  const delays = (await deps.greylistDelays()).sort((a, b) => a - b);
  if (delays.length === 0) return null;
  const middle = Math.floor(delays.length / 2);
  return delays.length % 2 === 1
    ? (delays[middle] as number)
    : ((delays[middle - 1] as number) + (delays[middle] as number)) / 2;
}

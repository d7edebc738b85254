// How long a batch job will take, as its upload answers (`estimatedTimeSeconds`): from what
// rcpt knows of the list's domains and of the fleet that will probe them.
//
// A job ends when its slowest work does. Most of a list is ordinary work the fleet gets through
// at its pace: the probe slots of the linked probers (their CAPACITY), shared with the work of
// the jobs already running. Some domains take their own time whatever the fleet does, and the
// domain facts say which: a greylisting server lets an address through only after its delay,
// which the batch waits out on the greylist pace; a tarpit lets each probe run to its timeout,
// and the batch asks such an address once more. So the estimate is the longer of the two, plus
// the start every job pays (queue delivery, DNS, the first sessions). Of the domains rcpt has
// not met (or not lately), the upload asks a few before it answers (pace-sample.ts): a
// greylister or a tarpit among them counts as the facts would count it; the rest are ordinary.
// The first job to meet a greylister or a tarpit measures it, and the next upload is told.
import { RETRY_PACES } from '@rcpt/shared/contract/sub-statuses';
import { type Config, proberRegionsOf } from '../../config.ts';
import type { Db } from '../../storage/db.ts';
import { type DomainPaceRow, readDomainPaces } from '../../storage/domain-facts.ts';
import { regionHub } from '../fleet/prober-gateway.ts';
import { nextAttemptAt } from './retry.ts';

/**
 * Addresses one probe slot settles per second: a slot holds one probe of up to 15 addresses of
 * a domain, one SMTP session or two of a few round trips each. Measured (2026-11-28) over 200
 * slots: `npm run bench -- distance`, 10,000 addresses on Postfix defaults in 2.6 s at 0 ms from
 * the mail servers, 3.9 s at 60 ms, 8.4 s at 150 ms; `npm run bench -- batch`, 10,000 addresses
 * of defended servers (their session and rate limits) in 7.6 s. The upload does not know how far
 * the servers are nor how they defend themselves, so the rate is the one whose estimate (7 s)
 * stays within 2× of the defended list and of the far servers: only a list of near, undefended
 * servers finishes sooner than half of it.
 */
export const ADDRESSES_PER_SLOT_SECOND = 12;

/** What every job pays before its first answers and after its last: queue delivery, DNS, the first sessions, the completion. */
export const START_SECONDS = 2;

/** What slows one domain's work, as the domain facts last measured it. */
export interface DomainPace {
  /** How long the domain's greylisting held an address back, in seconds. */
  greylistDelaySeconds: number | null;
  /** Its slowest recent probe, and whether that ran out of time (a tarpit). */
  slowProbe: { seconds: number; timedOut: boolean } | null;
}

export interface BatchOutlook {
  /** The job's addresses still to probe (those the upload answered aside). */
  addresses: number;
  /** The domains of the list that rcpt knows to be slow; the others are ordinary. */
  paces: readonly DomainPace[];
  /** Probe slots of the probers linked now (draining ones aside); 0: none linked. */
  probeSlots: number;
  /** Addresses of the jobs already running, still to be answered: the fleet's work ahead. */
  addressesAhead: number;
  /** The job's deadline, in seconds after upload: it never takes longer. */
  deadlineSeconds: number;
}

/** The estimated seconds from upload to completion; see the file comment. */
export function estimateBatchSeconds(outlook: BatchOutlook): number {
  if (outlook.addresses === 0) return 0;
  // No prober to take the work: it waits for one, and at the deadline what is unanswered ends.
  if (outlook.probeSlots <= 0) return outlook.deadlineSeconds;
  const throughput = outlook.probeSlots * ADDRESSES_PER_SLOT_SECOND;
  const ordinary = (outlook.addressesAhead + outlook.addresses) / throughput;
  const slowest = Math.max(0, ...outlook.paces.map(domainSeconds));
  const seconds = Math.ceil(START_SECONDS + Math.max(ordinary, slowest));
  return Math.min(outlook.deadlineSeconds, Math.max(1, seconds));
}

/** How long one slow domain's addresses take to their final answer, alone. */
export function domainSeconds(pace: DomainPace): number {
  const probeSeconds = pace.slowProbe?.seconds ?? 0;
  // A probe that ran out of time is asked again on the timeout pace, each try a full probe.
  const probing = pace.slowProbe?.timedOut
    ? probeSeconds * (1 + RETRY_PACES.timeout.delays.length) +
      RETRY_PACES.timeout.delays.reduce((sum, delay) => sum + delay, 0)
    : probeSeconds;
  const greylisting = pace.greylistDelaySeconds === null ? 0 : greylistPassedAfter(pace.greylistDelaySeconds);
  return Math.max(probing, greylisting);
}

/**
 * When the greylist pace's retries first come `delaySeconds` or more after the first answer:
 * the retry the server lets through (batch-retry.ts picks each retry, the measured delay
 * standing in for the one a server may name).
 */
export function greylistPassedAfter(delaySeconds: number): number {
  let at = 0;
  for (let count = 0; at < delaySeconds; count++) {
    const next = nextAttemptAt({
      pace: 'greylist',
      count,
      retryAfterSeconds: delaySeconds,
      now: at * 1000,
      deadlineAt: Number.POSITIVE_INFINITY,
      probeMs: 0,
    });
    // The pace is spent before the delay: the address ends greylisted at the deadline.
    if (next === null) return Number.POSITIVE_INFINITY;
    at = next / 1000;
  }
  return at;
}

/** A list's domain whose pace rcpt does not know (pace-sample.ts asks it), with an address of it to ask. */
export interface UnknownDomain {
  domain: string;
  email: string;
  /** How many of the list's addresses are at the domain. */
  addresses: number;
}

/**
 * What the domain facts say of a list's domains, in one D1 statement: the known slow ones'
 * paces, and the domains rcpt does not know (`readDomainPaces`), most addresses first.
 */
export async function listPaces(
  db: Db,
  addresses: readonly { email: string; domain: string }[],
  now: number,
): Promise<{ paces: DomainPace[]; unknown: UnknownDomain[] }> {
  const byDomain = new Map<string, UnknownDomain>();
  for (const { email, domain } of addresses) {
    const entry = byDomain.get(domain);
    if (entry) entry.addresses++;
    else byDomain.set(domain, { domain, email, addresses: 1 });
  }
  const rows = await readDomainPaces(db, [...byDomain.keys()], now);
  for (const row of rows) byDomain.delete(row.domain);
  return {
    paces: pacesOf(rows),
    unknown: [...byDomain.values()].sort((a, b) => b.addresses - a.addresses),
  };
}

/** The known paces of those of `domains` that rcpt knows to be slow, in one D1 statement. */
export async function domainPaces(db: Db, domains: Iterable<string>, now: number): Promise<DomainPace[]> {
  return pacesOf(await readDomainPaces(db, [...new Set(domains)], now));
}

function pacesOf(rows: readonly DomainPaceRow[]): DomainPace[] {
  return rows
    .filter((row) => row.greylistDelaySeconds !== null || row.slowProbeSeconds !== null)
    .map((row) => ({
      greylistDelaySeconds: row.greylistDelaySeconds,
      slowProbe:
        row.slowProbeSeconds === null
          ? null
          : { seconds: row.slowProbeSeconds, timedOut: row.slowProbeTimedOut === 1 },
    }));
}

/**
 * The probe slots of the probers linked now in the first region that has any: batch work goes
 * to the first region that takes it (prober-gateway.ts). 0 when no region has a prober;
 * unbounded when the deployment speaks no SMTP, so no address waits for a probe.
 */
export async function linkedProbeSlots(hubs: Env['PROBER_HUB'], config: Config): Promise<number> {
  if (!config.SMTP_ENABLED) return Number.POSITIVE_INFINITY;
  for (const region of proberRegionsOf(config)) {
    const probers = await regionHub(hubs, region).status();
    const slots = probers
      .filter((prober) => prober.ready && !prober.draining)
      .reduce((sum, prober) => sum + prober.capacity, 0);
    if (slots > 0) return slots;
  }
  return 0;
}

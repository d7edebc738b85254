// A probe at the hub: what waits in an account's lane (probe-scheduler.ts) or is out at a prober,
// and the answers it can end with. Shared by the scheduler and the hub object (prober-hub.ts).
import type { ProbeRequest } from '@rcpt/shared/contract/prober';
import type { ProbeOutcome } from '@rcpt/shared/verify/inputs';
import type { HubPass } from './prober-links.ts';

/** A probe's outcome, or its pass to the next region. */
export type HubAnswer = ProbeOutcome | HubPass;

/** A probe waiting for, or out at, a prober. */
export interface HubProbe {
  lane: 'single' | 'batch';
  accountId: string;
  /** Only the account's own probers may take it: it turned the shared fleet's fallback off. */
  ownOnly: boolean;
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

/** A probe of `request` about to wait in its account's lane of `lane`. */
export function hubProbe(
  lane: HubProbe['lane'],
  { accountId, ownOnly }: { accountId: string; ownOnly: boolean },
  request: ProbeRequest,
  deadlineAt: number,
  passable: boolean,
  finish: HubProbe['finish'],
): HubProbe {
  return {
    lane,
    accountId,
    ownOnly,
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
export function mxKeyOf(request: ProbeRequest): string {
  const [first] = [...request.mx].sort((a, b) => a.preference - b.preference);
  return (first?.host ?? request.domain).toLowerCase();
}

/**
 * The prober gave no answer by the deadline, though it had its own timeout set before it, so a
 * mail server's slowness would have come back as its report: this is rcpt's own failure
 * (`smtp_unavailable`), asked again in a batch, never kept as a single call's verdict.
 */
export function silentProber(): ProbeOutcome {
  return { kind: 'unavailable', message: 'the prober did not answer in time' };
}

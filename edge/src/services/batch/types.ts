// The batch lifecycle's shared types, and nothing else: the hub's ticket (`BatchTask`), what a
// probe answered of it (`SettledTask`), and what each step after the hub is given (`SettleDeps`).
// Every step imports these from here, so that no step imports a later one (docs/architecture.md,
// "The code").
import type { DnsOutcome, ProbeOutcome, TenantProbe } from '@rcpt/shared/verify/inputs';
import type { MailboxBounce } from '@rcpt/shared/verify/learnt';
import type { Config } from '../../config.ts';
import type { Db } from '../../storage/db.ts';
import type { JobStoreKind } from '../../storage/job-lists/index.ts';
import type { BatchMessage } from './queue.ts';
import type { RetryState } from './retry.ts';

/** One domain's addresses of one job, with its mail route, ready to probe: the hub's ticket. */
export interface BatchTask {
  jobId: string;
  accountId: string;
  domain: string;
  deadlineAt: number;
  attempt: number;
  retry?: RetryState;
  /** A recheck round's work (greylist follow-up): its answers go to the round, never retried. */
  recheckRound?: number;
  addresses: { idx: number; email: string }[];
  dns: DnsOutcome;
  /** The job keeps the evidence behind each answer: its probes ask for it. */
  evidence?: boolean;
  /** Where the job's lists live: the hub's isolate learns it with the ticket. */
  store?: JobStoreKind;
  /** The shard whose database holds the job (storage/shards.ts); absent: shard 0. */
  shard?: number;
  /**
   * Whether the job asks its recheckable final answers again (`jobs.recheck`), read with its row:
   * its results write then reads nothing of the job first. Absent (a ticket from before): read there.
   */
  recheck?: boolean;
}

export interface SettledTask {
  task: BatchTask;
  probe: ProbeOutcome;
  /** The tenant behind the domain's catch-all gateway MX and its probe, when one was asked. */
  tenant?: TenantProbe;
  /** No retry whatever the answer (SMTP is disabled for the deployment). */
  final?: boolean;
  /**
   * The account's own mailbox bounces of the task's addresses (bounced.ts): an address with one
   * is answered from it, whatever `probe` says.
   */
  bounces?: ReadonlyMap<string, MailboxBounce>;
}

/** What the settlement, the results and the follow-up rounds work with (services/batch-lifecycle.ts wires it). */
export interface SettleDeps {
  db: Db;
  queue: Queue<BatchMessage>;
  config: Config;
  inBackground: (task: Promise<unknown>) => void;
  /**
   * The job's events were written (it completed or failed, or a round changed verdicts): attempt
   * their delivery now, in the background; what fails is retried by the cron. The webhooks come
   * after the results in the lifecycle, so the results call them through this.
   */
  announce: (jobId: string, now: number) => void;
}

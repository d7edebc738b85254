// The public API (docs/architecture.md) as zod schemas. Routes, the OpenAPI document and clients'
// types are all derived from these; field names here are the API.
import { z } from 'zod';
import { Evidence, MAX_EVIDENCE_BYTES } from './prober.ts';
import {
  SEND_ADVICE,
  type SendAdvice,
  SUB_STATUS_TABLE,
  subStatusesAdvised,
  subStatusMarkdown,
  VERIFICATION_STATUSES,
} from './sub-statuses.ts';
import { UNKNOWN_VERDICT_LIFETIME_MS, VERDICT_LIFETIME_MS } from './verdict-lifetime.ts';

/** Longest `email` string the API accepts at all; longer is a 400, not a verdict. */
export const MAX_EMAIL_INPUT_LENGTH = 512;
/** Most addresses one batch job takes. */
export const MAX_BATCH_EMAILS = 10_000;

export { SUB_STATUSES, VERIFICATION_STATUSES } from './sub-statuses.ts';

export const VerificationStatus = z.enum(VERIFICATION_STATUSES);
export type VerificationStatus = z.infer<typeof VerificationStatus>;

export const SubStatus = z
  .enum(Object.keys(SUB_STATUS_TABLE) as [keyof typeof SUB_STATUS_TABLE])
  .describe(`The exact reason, one of:\n\n${subStatusMarkdown()}`);
export type SubStatus = z.infer<typeof SubStatus>;

export const TypoSuggestion = z
  .object({
    original: z.string().describe('the domain as given'),
    suggested: z.string().describe('the domain the address most likely meant'),
    confidence: z
      .number()
      .min(0)
      .max(1)
      .describe('0..1; only suggestions at or above the threshold are shown'),
  })
  .meta({ id: 'TypoSuggestion' });
export type TypoSuggestion = z.infer<typeof TypoSuggestion>;

export const Checks = z
  .object({
    syntax: z.boolean(),
    mxRecords: z.boolean(),
    smtpValid: z.boolean().nullable().describe('null when no SMTP answer decided it'),
    isDisposable: z.boolean(),
    isRoleBased: z.boolean(),
    isFreeProvider: z.boolean(),
    isCatchAll: z
      .boolean()
      .nullable()
      .describe('true: a random address was accepted; false: rejected; null: unknown'),
    hasTypo: TypoSuggestion.nullable(),
  })
  .meta({ id: 'Checks' });
export type Checks = z.infer<typeof Checks>;

export const DNS_TYPES = ['MX', 'A', 'AAAA', 'NULL_MX'] as const;

/** How a verdict's SMTP answer was reached (Meta.verifiedVia). */
export const VERIFIED_VIA = ['mx', 'tenant', 'sandbox'] as const;

/**
 * What rcpt learnt from outcomes that decided the answer (docs/verdicts.md, "Learning from
 * outcomes"): the account's own hard bounce of this mailbox, or the domain's habit of accepting
 * addresses it bounces afterwards (learnt from several accounts; no address of theirs is named).
 */
export const LearntFact = z
  .discriminatedUnion('kind', [
    z.object({
      kind: z.literal('mailbox_bounce'),
      bouncedAt: z.iso.datetime().describe("when the account's send to this address hard-bounced"),
      diagnostic: z
        .string()
        .nullable()
        .describe("the receiving server's reply, as the sending service passed it on"),
    }),
    z.object({
      kind: z.literal('domain_accepts_then_bounces'),
      bounces: z
        .number()
        .int()
        .min(0)
        .describe('hard bounces on a mailbox reason after the domain accepted the address'),
      accounts: z.number().int().min(0).describe('how many accounts reported them'),
      lastBounceAt: z.iso.datetime(),
    }),
  ])
  .meta({ id: 'LearntFact' });
export type LearntFact = z.infer<typeof LearntFact>;

export const Meta = z
  .object({
    domain: z.string().describe('the domain in A-label (punycode) form'),
    localPart: z.string(),
    mxHost: z.string().nullable(),
    provider: z.string().nullable().describe('mailbox provider family, e.g. gmail, microsoft, yahoo'),
    dnsType: z
      .enum(DNS_TYPES)
      .nullable()
      .describe('the record that routes mail: MX, implicit A/AAAA, or null MX'),
    verifiedAt: z.iso
      .datetime()
      .describe('when this verdict was reached; for a cached answer, its first time'),
    processingTimeMs: z.number().int().min(0).describe('how long reaching the verdict took'),
    verifiedVia: z
      .enum(VERIFIED_VIA)
      .nullable()
      .describe(
        "how the SMTP answer was reached: `mx`, the domain's mail server; `tenant`, the Microsoft 365 or " +
          'Google Workspace tenant behind a security gateway that accepts every address (the gateway ' +
          "stays `checks.isCatchAll`); `sandbox`, a test key's fixed answer; null, no SMTP answer was used",
      ),
    cached: z
      .boolean()
      .optional()
      .describe(
        "true: the account's earlier verdict for this address, still within its lifetime " +
          `(${VERDICT_LIFETIME_MS / 3_600_000} hours; ${UNKNOWN_VERDICT_LIFETIME_MS / 60_000} minutes for \`unknown\`, ` +
          "a greylisting answer only until its `retryAfterSeconds`, and rcpt's own failures — `smtp_unavailable`, " +
          '`dns_error`, `internal_error` — not at all), given again; false: reached for this request. Absent from ' +
          "a publishable key's answer, which never reads the account's verdict cache",
      ),
    learnt: LearntFact.optional().describe(
      "present when an outcome decided the answer: the account's own hard bounce of this mailbox " +
        '(`undeliverable`, until a later `delivered` outcome), or a domain that accepts then bounces (`risky`)',
    ),
  })
  .meta({ id: 'Meta' });
export type Meta = z.infer<typeof Meta>;

export const VerificationResult = z
  .object({
    email: z.string(),
    status: VerificationStatus,
    subStatus: SubStatus,
    reason: z.string().describe('one plain-English sentence'),
    score: z
      .number()
      .int()
      .min(0)
      .max(100)
      .describe('undeliverable 0–20, unknown 21–49, risky 50–79, deliverable 80–100'),
    isDeliverable: z.boolean(),
    toxicity: z.number().int().min(0).max(5).describe('0 clean … 5 known trap or abusive'),
    checks: Checks,
    meta: Meta,
    riskFactors: z.array(z.string()),
    retryAfterSeconds: z
      .number()
      .int()
      .min(0)
      .optional()
      .describe('present when greylisted: when a retry is likely to get an answer'),
    evidence: Evidence.optional(),
  })
  .meta({ id: 'VerificationResult' });
export type VerificationResult = z.infer<typeof VerificationResult>;

/**
 * A result as it was stored (history, a job's rows), for answering again. Results stored before
 * `meta.verifiedVia` existed say null: how their SMTP answer was reached was not recorded.
 */
export function storedVerificationResult(json: string): VerificationResult {
  const result = JSON.parse(json) as VerificationResult;
  return result.meta.verifiedVia === undefined
    ? { ...result, meta: { ...result.meta, verifiedVia: null } }
    : result;
}

// An address as sent, single or in a batch. Control characters are refused before trimming,
// so a CRLF can never be smuggled at an end (nor reach an SMTP command line).
const RawEmailInput = z
  .string()
  .max(MAX_EMAIL_INPUT_LENGTH)
  .refine((value) => !/\p{Cc}/u.test(value), 'must not contain control characters (CR, LF, NUL …)');
const EmailInput = RawEmailInput.trim().min(1);

/**
 * `Idempotency-Key` on the charged POSTs: a retry with the same key and the same request gets
 * the first answer again and is not charged again (as Stripe's API does). Kept 24 hours per
 * account.
 */
export const IdempotencyHeaders = z.object({
  'idempotency-key': z
    .string()
    .min(1)
    .max(255)
    .regex(/^[\x21-\x7e]+$/, 'printable ASCII without spaces')
    .optional()
    .meta({
      description:
        'A unique value (a UUID, say) per logical request. A retry with the same key and the same request (the ' +
        'same bytes of body, content type and query) answers the first response (with `Idempotent-Replayed: ' +
        'true`) and is not charged again; the same key with another request is 422 `IDEMPOTENCY_KEY_REUSED`; ' +
        'while the first is still running, 409 `IDEMPOTENCY_KEY_IN_USE`. Keys are kept 24 hours per account and ' +
        'key mode: a test key and a live key never share one. Only a success is kept: a refusal (402, 429, …) ' +
        'did nothing and a failure (500, 503) was refunded, so a retry with the same key runs afresh.',
    }),
});

/**
 * Bounds of a single call's `timeoutMs`. Commercial verifiers take 2 to 60 seconds per request; an
 * SMTP conversation (greeting, EHLO, STARTTLS, MAIL, two RCPTs) with a prompt server takes about a
 * second, so below 2 s most answers would be cut short, and past 60 s a client's HTTP stack has
 * usually given up.
 */
export const MIN_VERIFY_TIMEOUT_MS = 2_000;
export const MAX_VERIFY_TIMEOUT_MS = 60_000;

const EVIDENCE_DESCRIPTION =
  'true: each answer that came from SMTP carries `evidence`, the session behind it (MX host and address, egress, ' +
  "region, TLS, the dialogue with its times, every address but the answer's own masked), stored with the result " +
  `for the result's retention. It is at most ${MAX_EVIDENCE_BYTES} bytes an address, counted at that bound against ` +
  'the storage budget of the day. A recent verdict kept without evidence is not answered again: the address is ' +
  'verified afresh. Default false.';

const EvidenceField = z.boolean().optional().describe(EVIDENCE_DESCRIPTION);

/** `evidence` as a query or multipart form field, beside a CSV file. */
export const EvidenceFormField = z.enum(['true', 'false']).describe(EVIDENCE_DESCRIPTION);

export const VerifyRequest = z
  .strictObject({
    email: EmailInput,
    fresh: z
      .boolean()
      .optional()
      .describe(
        'true: verify now even if the account has a recent verdict for this address, and keep the new one ' +
          'for later calls. Default false: a recent verdict is answered again, marked `meta.cached`, and ' +
          'charged like any other call.',
      ),
    timeoutMs: z
      .number()
      .int()
      .min(MIN_VERIFY_TIMEOUT_MS)
      .max(MAX_VERIFY_TIMEOUT_MS)
      .optional()
      .describe(
        `How long the caller waits for the answer, in milliseconds (${MIN_VERIFY_TIMEOUT_MS} to ${MAX_VERIFY_TIMEOUT_MS}). ` +
          'When the mail server has not answered by then, the answer is what is known (syntax, DNS, lists) ' +
          'with `subStatus` `timeout_exceeded` (charged, as every single call is); the check goes on, and the next call ' +
          'for the address gets its verdict from the verdict cache (charged as such an answer is). Without it, ' +
          "the deployment's budget (10,000 ms unless its operator set another) bounds the check itself: a server " +
          'that has not answered by then is `smtp_timeout`, a prober that could not be had `smtp_unavailable`.',
      ),

    evidence: EvidenceField,
  })
  .meta({
    id: 'VerifyRequest',
    example: { email: 'alice@example.com' },
  });
export type VerifyRequest = z.infer<typeof VerifyRequest>;

/** What a publishable key's call may carry: the address, nothing else (docs/publishable-keys.md). */
export const PublishableVerifyRequest = z.strictObject({ email: EmailInput });

export const VerifyResponse = z
  .object({
    success: z.literal(true),
    data: VerificationResult,
    creditsRemaining: z.number().int().min(0),
  })
  .meta({ id: 'VerifyResponse' });
export type VerifyResponse = z.infer<typeof VerifyResponse>;

/** Bounds of a job's deadline, in seconds after upload. */
export const MIN_MAX_WAIT_SECONDS = 30;
export const MAX_MAX_WAIT_SECONDS = 10_800;

export const MaxWaitSeconds = z.coerce
  .number()
  .int()
  .min(MIN_MAX_WAIT_SECONDS)
  .max(MAX_MAX_WAIT_SECONDS)
  .describe(
    "The job's deadline, in seconds after upload (30 to 10,800). Addresses whose mail server has not given a " +
      'final answer by then (greylisting, tarpit, refused or failing connections) are reported `unknown` with ' +
      'the reason as subStatus, and refunded when the provider blocked or deferred them. Default: 180 seconds ' +
      'plus 1 second per 25 addresses.',
  );

const RECHECK_DESCRIPTION =
  'Greylist follow-up: true asks the addresses whose final answer is temporary and marked recheckable in the ' +
  "subStatus table (`greylisted`, temporary errors and blocks, failed connections, rcpt's own failures — never " +
  'a permanent 5xx reply) again over the next hours (by default 15 min, 1 h, 4 h and 12 h after the job ' +
  'completed). Each round that changes a verdict updates the results and counts (the job stays `completed`, ' +
  'with `recheckedAt`) and sends a `job.updated` webhook. Asking again is free, but an address refunded at ' +
  'completion that a round answers with a known verdict (deliverable, undeliverable, risky) is charged 1 credit ' +
  'then (ledger reason `recheck_charge`, counted in `creditsCharged`), as far as the balance covers it; the rest ' +
  "waits for a later round. Default: the account's setting (`PUT /api/v1/account/settings`), else false. " +
  'Test-key jobs are never rechecked.';

/** `recheck` as a query or multipart form field, beside a CSV file. */
export const RecheckField = z.enum(['true', 'false']).describe(RECHECK_DESCRIPTION);

/** How long a watched job watches its domains by default, and the bounds of `watchDays`. */
export const WATCH_DEFAULT_DAYS = 30;
export const MIN_WATCH_DAYS = 1;
/** No longer than a job is kept (60 days, SPEC "Retention"): a deleted job watches nothing. */
export const MAX_WATCH_DAYS = 60;

const WATCH_DESCRIPTION =
  "Watched job: true keeps the completed job's verdicts in step with its domains for `watchDays` days " +
  `(default ${WATCH_DEFAULT_DAYS}). When rcpt sees that a domain of the job changed — its MX hosts moved, it ` +
  'stopped taking mail (null MX, no MX, gone from DNS) or took it again, catch-all turned on or off, another ' +
  "mail tenant behind its gateway — the job's addresses at that domain are verified again; changed verdicts " +
  'update the results, counts and CSV (the job stays `completed`) and a `job.updated` webhook says what changed ' +
  'per domain. A domain that does not change is never probed. Verifying again is free; an address refunded at ' +
  'completion that is then answered with a known verdict is charged 1 credit (ledger reason `recheck_charge`), ' +
  "as far as the balance covers it. Default: the account's setting (`PUT /api/v1/account/settings`), else " +
  'false. Test-key jobs are never watched.';

const WATCH_DAYS_DESCRIPTION = `How many days after completion a watched job watches its domains (${MIN_WATCH_DAYS} to ${MAX_WATCH_DAYS}, default ${WATCH_DEFAULT_DAYS}); giving it watches the job unless \`watch\` is false, which it contradicts (400).`;

export const WatchDays = z.coerce
  .number()
  .int()
  .min(MIN_WATCH_DAYS)
  .max(MAX_WATCH_DAYS)
  .describe(WATCH_DAYS_DESCRIPTION);

/** `watch` as a query or multipart form field, beside a CSV file. */
export const WatchField = z.enum(['true', 'false']).describe(WATCH_DESCRIPTION);

export const BulkUploadJsonRequest = z
  .strictObject({
    // An empty item is kept (it is counted in emptyRows); a control character is refused.
    emails: z.array(RawEmailInput).min(1).max(MAX_BATCH_EMAILS),
    name: z.string().max(200).optional(),
    webhookUrl: z.url().max(2048).optional(),
    maxWaitSeconds: MaxWaitSeconds.optional(),
    recheck: z.boolean().optional().describe(RECHECK_DESCRIPTION),
    evidence: EvidenceField,
    watch: z.boolean().optional().describe(WATCH_DESCRIPTION),
    watchDays: WatchDays.optional(),
  })
  .meta({ id: 'BulkUploadRequest', example: { emails: ['alice@example.com', 'bob@example.org'] } });
export type BulkUploadJsonRequest = z.infer<typeof BulkUploadJsonRequest>;

export const BulkUploadResponse = z
  .object({
    success: z.literal(true),
    jobId: z.uuid(),
    totalEmails: z.number().int().describe('unique addresses queued'),
    duplicateCount: z.number().int(),
    skippedRows: z.number().int(),
    emptyRows: z.number().int(),
    invalidRows: z.number().int(),
    estimatedTimeSeconds: z
      .number()
      .int()
      .describe('when the job is expected to complete; never later than its deadline'),
    creditsCharged: z.number().int(),
  })
  .meta({ id: 'BulkUploadResponse' });
export type BulkUploadResponse = z.infer<typeof BulkUploadResponse>;

export const JOB_STATUSES = ['pending', 'processing', 'completed', 'failed'] as const;
export const JobStatus = z.enum(JOB_STATUSES);
export type JobStatus = z.infer<typeof JobStatus>;

export const BounceEstimate = z
  .object({
    percent: z.number().min(0).max(100),
    level: z.enum(['low', 'medium', 'high']),
    basis: z.string().describe('how the estimate was computed'),
  })
  .meta({ id: 'BounceEstimate' });
export type BounceEstimate = z.infer<typeof BounceEstimate>;

export const Job = z
  .object({
    id: z.uuid(),
    name: z.string().nullable(),
    status: JobStatus,
    progress: z.number().int().min(0).max(100),
    totalEmails: z.number().int(),
    processedEmails: z.number().int(),
    deliverableCount: z.number().int(),
    undeliverableCount: z.number().int(),
    riskyCount: z.number().int(),
    unknownCount: z.number().int(),
    catchAllCount: z.number().int(),
    createdAt: z.iso.datetime(),
    completedAt: z.iso.datetime().nullable(),
    deadlineAt: z.iso
      .datetime()
      .nullable()
      .describe('the job completes by then: what is still temporary becomes `unknown` (see maxWaitSeconds)'),
    bounceEstimate: BounceEstimate.nullable(),
    creditsCharged: z
      .number()
      .int()
      .describe(
        'credits taken for the job: its unique valid addresses at upload, plus one for each refunded address a ' +
          'greylist follow-up round later answered',
      ),
    creditsRefunded: z.number().int().describe('credits given back when the job completed or failed'),
    failureReason: z.string().nullable(),
    recheck: z
      .boolean()
      .describe('whether temporary answers are asked again after completion (see `recheck` of the upload)'),
    recheckedAt: z.iso
      .datetime()
      .nullable()
      .describe('when a recheck last changed a verdict of this job; null until one does'),
    evidence: z
      .boolean()
      .describe(
        "whether the job's results carry the evidence behind their answers (see `evidence` of the upload)",
      ),
    nextRecheckAt: z.iso
      .datetime()
      .nullable()
      .describe('when the next recheck round starts; null when none is planned'),
    watchDays: z
      .number()
      .int()
      .nullable()
      .describe(
        'how many days after completion the job watches its domains (see `watch` of the upload); null: not watched',
      ),
    watchedUntil: z.iso
      .datetime()
      .nullable()
      .describe('when the watch ends; null until the job completed, and for a job that is not watched'),
  })
  .meta({ id: 'Job' });
export type Job = z.infer<typeof Job>;

export const WATCH_CHANGE_KINDS = [
  'mx_moved',
  'mail_stopped',
  'mail_resumed',
  'catch_all_on',
  'catch_all_off',
  'tenant_changed',
] as const;
export const WatchChangeKind = z
  .enum(WATCH_CHANGE_KINDS)
  .describe(
    '`mx_moved`: other MX hosts; `mail_stopped`: the domain no longer takes mail (null MX, no MX or address, ' +
      'gone from DNS, or only private addresses); `mail_resumed`: it takes mail again; `catch_all_on` / ' +
      '`catch_all_off`: its mail server started or stopped accepting made-up addresses; `tenant_changed`: ' +
      'another mail tenant (or none) behind its security gateway',
  );
export type WatchChangeKind = z.infer<typeof WatchChangeKind>;

export const DOMAIN_MAIL_STATES = ['mx', 'null_mx', 'no_mail_route', 'nxdomain', 'unroutable'] as const;

export const WatchedDomainState = z
  .object({
    mail: z
      .enum(DOMAIN_MAIL_STATES)
      .nullable()
      .describe('how the domain takes mail (`mx`: through the hosts below); null when rcpt had no answer'),
    mxHosts: z.array(z.string()).describe('its MX hosts, most preferred first'),
    catchAll: z
      .boolean()
      .nullable()
      .describe('whether its mail server accepts made-up addresses; null: not known'),
  })
  .meta({ id: 'WatchedDomainState' });

export const WatchChange = z
  .object({
    domain: z.string(),
    seenAt: z.iso
      .datetime()
      .describe('when rcpt saw the change and verified the addresses at the domain again'),
    changes: z.array(WatchChangeKind),
    before: WatchedDomainState,
    after: WatchedDomainState,
    addresses: z.number().int().describe("the job's addresses at the domain, all verified again"),
    changedAddresses: z.number().int().describe('of those, how many got another verdict'),
  })
  .meta({ id: 'WatchChange' });
export type WatchChange = z.infer<typeof WatchChange>;

export const BulkStatusResponse = z
  .object({
    success: z.literal(true),
    job: Job,
    domainChanges: z
      .array(WatchChange)
      .describe(
        "a watched job's changed domains, each with the latest change rcpt saw, the most recent first (at most " +
          '100); each change is also sent as it is seen, in a `job.updated` webhook. Empty for a job that is not ' +
          'watched',
      ),
  })
  .meta({ id: 'BulkStatusResponse' });

export const OriginalCsvData = z
  .object({
    headers: z.array(z.string()).describe('the header row as uploaded (generated names when there was none)'),
    rows: z.array(z.array(z.string())).describe('each row by position, aligned with `results`'),
  })
  .meta({ id: 'OriginalCsvData' });
export type OriginalCsvData = z.infer<typeof OriginalCsvData>;

export const Pagination = z
  .object({ offset: z.number().int(), limit: z.number().int(), total: z.number().int() })
  .meta({ id: 'Pagination' });

export const DroppedRows = z
  .object({
    invalid: z.number().int().describe('rows whose input was not an address'),
    empty: z.number().int().describe('rows with no input'),
    skipped: z.number().int().describe('rows that could not be read'),
    duplicate: z
      .number()
      .int()
      .describe('rows of an address an earlier row holds (that row, with the verdict, is kept)'),
    droppedAt: z.iso.datetime(),
  })
  .describe(
    'The rows that cost nothing (no address, or a duplicate), dropped some days after upload ' +
      '(`FREE_ROWS_RETENTION_DAYS`, default 7): the results hold the charged rows only. Absent while every row is kept.',
  )
  .meta({ id: 'DroppedRows' });
export type DroppedRows = z.infer<typeof DroppedRows>;

export const BulkResultsResponse = z
  .object({
    success: z.literal(true),
    droppedRows: DroppedRows.optional(),
    results: z.array(VerificationResult),
    originalCsvData: OriginalCsvData.nullable(),
    pagination: Pagination,
  })
  .meta({ id: 'BulkResultsResponse' });
export type BulkResultsResponse = z.infer<typeof BulkResultsResponse>;

export const JobIdParam = z.object({ jobId: z.uuid() });

export const PageQuery = z.object({
  offset: z.coerce.number().int().min(0).max(1_000_000).default(0),
  limit: z.coerce.number().int().min(1).max(100).default(25),
});

/** A comma-separated list of `words`. */
const listOf = (words: readonly string[]) => new RegExp(`^(${words.join('|')})(,(${words.join('|')}))*$`);
const STATUS_LIST = listOf(VERIFICATION_STATUSES);

export const BulkResultsQuery = z.object({
  offset: z.coerce.number().int().min(0).max(MAX_BATCH_EMAILS).default(0),
  limit: z.coerce.number().int().min(1).max(MAX_BATCH_EMAILS).default(MAX_BATCH_EMAILS),
  format: z
    .enum(['json', 'csv'])
    .optional()
    .describe('csv: the original columns plus verdict columns (also `Accept: text/csv`)'),
  bom: z
    .enum(['0', '1'])
    .optional()
    .describe(
      'CSV only: `1` starts the file with a UTF-8 byte-order mark, which Excel on Windows needs to read ' +
        'non-ASCII text right (the dashboard adds it by default); default `0`',
    ),
  status: z
    .string()
    .regex(STATUS_LIST, 'a comma-separated list of deliverable, undeliverable, risky, unknown')
    .transform((list) => [...new Set(list.split(','))] as VerificationStatus[])
    .optional()
    .describe(
      'only rows whose verdict has one of these statuses, comma-separated (e.g. `deliverable,risky`); ' +
        '`pagination.total` counts the rows kept',
    ),
  advice: z
    .string()
    .regex(listOf(SEND_ADVICE), `a comma-separated list of ${SEND_ADVICE.join(', ')}`)
    .transform((list) => [...new Set(list.split(','))] as SendAdvice[])
    .optional()
    .describe(
      'only rows whose subStatus has one of these send advices, comma-separated: `send` keeps exactly the ' +
        `addresses to send to (${subStatusesAdvised(['send']).join(', ')}), \`decide\` the ones only the sender ` +
        'can judge, `do_not_send` the rest (the subStatus table\'s "send to it?" column); with `status`, a row ' +
        'must match both',
    ),
});

export const BulkJobsResponse = z
  .object({ success: z.literal(true), jobs: z.array(Job), pagination: Pagination })
  .meta({ id: 'BulkJobsResponse' });

const SHARED_FLEET_FALLBACK_DESCRIPTION =
  "whether rcpt's shared probers probe for the account when none of its own probers (linked with the " +
  "account's prober tokens) can: none linked, or each blocked at the address's mail server. Off, the account's " +
  'probes wait for its own probers: a single call answers `unknown` / `smtp_unavailable` when ' +
  "none can within its time, and list work waits for them until the job's deadline. Default on.";

export const AccountSettings = z
  .object({
    recheck: z
      .boolean()
      .describe("the default of an upload's `recheck` when it does not say (greylist follow-up)"),
    watch: z
      .boolean()
      .describe(
        `the default of an upload's \`watch\` when it does not say (watched for ${WATCH_DEFAULT_DAYS} days)`,
      ),
    sharedFleetFallback: z.boolean().describe(SHARED_FLEET_FALLBACK_DESCRIPTION),
  })
  .meta({ id: 'AccountSettings' });
export type AccountSettings = z.infer<typeof AccountSettings>;

export const AccountSettingsRequest = z
  .strictObject({
    recheck: z.boolean().optional().describe(RECHECK_DESCRIPTION),
    watch: z.boolean().optional().describe(WATCH_DESCRIPTION),
    sharedFleetFallback: z.boolean().optional().describe(SHARED_FLEET_FALLBACK_DESCRIPTION),
  })
  .meta({ id: 'AccountSettingsRequest', example: { recheck: true, watch: true, sharedFleetFallback: true } });

export const AccountSettingsResponse = z
  .object({ success: z.literal(true), settings: AccountSettings })
  .meta({ id: 'AccountSettingsResponse' });

export const AccountResponse = z
  .object({
    success: z.literal(true),
    account: z.object({
      id: z.string(),
      email: z.string().nullable(),
      creditsRemaining: z.number().int(),
      createdAt: z.iso.datetime(),
      settings: AccountSettings,
      usage: z.object({
        singleVerifications: z.number().int(),
        batchJobs: z.number().int(),
        creditsSpent: z.number().int(),
        creditsRefunded: z.number().int(),
        storage: z
          .object({
            usedBytesToday: z.number().int(),
            limitBytesPerDay: z.number().int(),
            resetAt: z.iso.datetime(),
          })
          .describe(
            "the storage budget: bytes the account's writes stored today (UTC), the daily limit, and when it resets",
          ),
      }),
    }),
  })
  .meta({ id: 'AccountResponse' });

export const Payment = z
  .object({
    id: z.string().describe("the purchase's id (the Checkout Session's `client_reference_id`)"),
    kind: z
      .enum(['checkout', 'auto_topup'])
      .describe('a pack bought through Checkout, or an automatic top-up'),
    status: z
      .enum(['paid', 'refunded', 'partially_refunded', 'failed'])
      .describe('`failed`: the card was declined and nothing was charged'),
    credits: z.number().int().describe("the pack's credits, granted once the payment is confirmed"),
    amount: z.number().int().describe("the price in the currency's minor unit (cents)"),
    currency: z.string().describe('ISO 4217, lower case'),
    amountRefunded: z.number().int().describe('refunded so far, in minor units'),
    creditsTakenBack: z
      .number()
      .int()
      .describe('credits the refunds took back: their share of the pack, as far as the balance held them'),
    createdAt: z.iso.datetime(),
    paidAt: z.iso.datetime().nullable(),
    failureReason: z.string().nullable(),
  })
  .meta({ id: 'Payment' });

export const PaymentsResponse = z
  .object({
    success: z.literal(true),
    purchasesEnabled: z.boolean().describe('whether this deployment sells credits (Stripe is configured)'),
    payments: z
      .array(Payment)
      .describe("the account's payments, newest first (at most 100); none for a test key"),
  })
  .meta({ id: 'PaymentsResponse' });

export const HistoryEntry = z
  .object({
    id: z.string(),
    kind: z.enum(['single', 'batch']),
    createdAt: z.iso.datetime(),
    email: z.string().nullable().describe('single verifications'),
    status: VerificationStatus.nullable(),
    subStatus: SubStatus.nullable(),
    score: z.number().int().nullable(),
    jobId: z.uuid().nullable().describe('batch jobs'),
    job: Job.optional().describe(
      'batch entries: the job as GET /bulk/status shows it (absent for single ones)',
    ),
  })
  .meta({ id: 'HistoryEntry' });

export const HistoryQuery = PageQuery.extend({
  kind: z.enum(['single', 'batch']).optional(),
  status: VerificationStatus.optional(),
  from: z.iso.datetime().optional(),
  to: z.iso.datetime().optional(),
});

export const HistoryResponse = z
  .object({ success: z.literal(true), history: z.array(HistoryEntry), pagination: Pagination })
  .meta({ id: 'HistoryResponse' });

export const WebhookSettingsRequest = z
  .strictObject({
    url: z.url().max(2048).nullable().describe('the default URL for job events; null removes it'),
  })
  .meta({ id: 'WebhookSettingsRequest' });

export const WebhookSettingsResponse = z
  .object({ success: z.literal(true), url: z.string().nullable(), hasSecret: z.boolean() })
  .meta({ id: 'WebhookSettingsResponse' });

export const WebhookSecretResponse = z
  .object({
    success: z.literal(true),
    secret: z.string().describe('whsec_…: shown once; verify signatures with it'),
  })
  .meta({ id: 'WebhookSecretResponse' });

export const WebhookDelivery = z
  .object({
    id: z.string().describe('the webhook-id header'),
    eventType: z.string(),
    jobId: z.string().nullable(),
    url: z.string(),
    state: z.enum(['pending', 'delivered', 'failed']),
    attempts: z.number().int(),
    lastStatus: z.number().int().nullable(),
    lastError: z.string().nullable(),
    nextAttemptAt: z.iso.datetime().nullable(),
    createdAt: z.iso.datetime(),
    deliveredAt: z.iso.datetime().nullable(),
  })
  .meta({ id: 'WebhookDelivery' });

export const WebhookDeliveriesResponse = z
  .object({ success: z.literal(true), deliveries: z.array(WebhookDelivery), pagination: Pagination })
  .meta({ id: 'WebhookDeliveriesResponse' });

export const WebhookTestResponse = z
  .object({ success: z.literal(true), delivery: WebhookDelivery })
  .meta({ id: 'WebhookTestResponse' });

// ── Outcomes (docs/verdicts.md, "Outcomes") ───────────────────────────────────────────

/** What happened when the account sent to an address. */
export const OUTCOME_KINDS = ['delivered', 'hard_bounce', 'soft_bounce', 'complaint'] as const;
export const OutcomeKind = z.enum(OUTCOME_KINDS);
export type OutcomeKind = z.infer<typeof OutcomeKind>;
/** Most outcomes one request (or one CSV) reports. */
export const MAX_OUTCOMES_PER_REQUEST = 1_000;
/** Longest diagnostic kept; a remote server's reply is a few hundred bytes. */
export const MAX_DIAGNOSTIC_LENGTH = 1_000;

export const OutcomeInput = z
  .strictObject({
    email: z.string().min(1).max(MAX_EMAIL_INPUT_LENGTH),
    outcome: OutcomeKind,
    at: z.iso.datetime({ offset: true }).describe('when the sending service saw it (RFC 3339)'),
    diagnostic: z
      .string()
      .max(MAX_DIAGNOSTIC_LENGTH)
      .optional()
      .describe("the remote server's reply, e.g. `550 5.1.1 user unknown`"),
  })
  .meta({ id: 'OutcomeInput' });
export type OutcomeInput = z.infer<typeof OutcomeInput>;

export const OutcomesRequest = z
  .strictObject({ outcomes: z.array(OutcomeInput).min(1).max(MAX_OUTCOMES_PER_REQUEST) })
  .meta({ id: 'OutcomesRequest' });

/** How a bounce's diagnostic reads with rcpt's reply table: the mailbox, a policy refusal, or neither. */
export const BOUNCE_KINDS = ['mailbox', 'policy', 'other'] as const;
export const BounceKind = z.enum(BOUNCE_KINDS);
export type BounceKind = z.infer<typeof BounceKind>;

export const OutcomeVerdict = z
  .object({
    source: z.enum(['single', 'batch']).describe('a single call, or a job (`id` is the job id)'),
    id: z.string(),
    status: VerificationStatus,
    subStatus: SubStatus,
    verifiedAt: z.iso.datetime(),
  })
  .meta({ id: 'OutcomeVerdict' });

export const RecordedOutcome = z
  .object({
    email: z.string(),
    outcome: OutcomeKind,
    at: z.iso.datetime(),
    diagnostic: z.string().nullable(),
    duplicate: z.boolean().describe('already recorded: counted once'),
    bounce: z
      .object({ kind: BounceKind, subStatus: SubStatus.nullable() })
      .nullable()
      .describe("a bounce's diagnostic read with the reply table; null for deliveries and complaints"),
    verdict: OutcomeVerdict.nullable().describe('the verdict matched, null when none was in the window'),
  })
  .meta({ id: 'RecordedOutcome' });
export type RecordedOutcome = z.infer<typeof RecordedOutcome>;

export const OutcomesResponse = z
  .object({
    success: z.literal(true),
    recorded: z.number().int().describe('outcomes new to rcpt'),
    duplicates: z.number().int(),
    matched: z.number().int().describe('outcomes of this request matched to a verdict'),
    outcomes: z.array(RecordedOutcome).describe('in the order of the request'),
  })
  .meta({ id: 'OutcomesResponse' });
export type OutcomesResponse = z.infer<typeof OutcomesResponse>;

// ── Accuracy (docs/verdicts.md, "Accuracy") ──────────────────────────────────────────

/** The longest period one accuracy request covers. */
export const MAX_ACCURACY_DAYS = 366;

export const AccuracyQuery = z.object({
  from: z.iso
    .datetime({ offset: true })
    .optional()
    .describe('outcomes at or after this time (RFC 3339); default 30 days before `to`'),
  to: z.iso.datetime({ offset: true }).optional().describe('outcomes before this time; default now'),
});

/**
 * What happened to the sends of one group of verdicts. `wrong` counts the outcomes that say the
 * verdict was wrong for its status: a mailbox-reason hard bounce of a `deliverable` or `risky`, a
 * delivery of an `undeliverable`; none for `unknown`.
 */
export const AccuracyCounts = z
  .object({
    matched: z.number().int().describe('outcomes matched to a verdict of this group'),
    delivered: z.number().int(),
    mailboxBounces: z.number().int().describe('hard bounces whose reply says the mailbox does not exist'),
    policyBounces: z
      .number()
      .int()
      .describe('hard bounces refused by policy (blocked, spam): no verdict of the mailbox'),
    otherBounces: z.number().int().describe('hard bounces whose reply says neither'),
    softBounces: z.number().int(),
    complaints: z.number().int(),
    wrong: z.number().int(),
    wrongRate: z
      .number()
      .nullable()
      .describe('wrong ÷ matched; null when nothing was matched or for `unknown`'),
  })
  .meta({ id: 'AccuracyCounts' });
export type AccuracyCounts = z.infer<typeof AccuracyCounts>;

const ByStatus = z.partialRecord(VerificationStatus, AccuracyCounts);

export const AccuracyResponse = z
  .object({
    success: z.literal(true),
    from: z.iso.datetime(),
    to: z.iso.datetime(),
    byStatus: ByStatus.describe('for each status rcpt gave that has matched outcomes'),
    byProvider: z
      .array(z.object({ provider: z.string(), byStatus: ByStatus }))
      .describe('by provider family of the registry, or MX host; the 50 with the most outcomes'),
    bySubStatus: z.array(
      z.object({ status: VerificationStatus, subStatus: SubStatus, counts: AccuracyCounts }),
    ),
    byWeek: z
      .array(z.object({ weekStart: z.iso.date(), byStatus: ByStatus }))
      .describe('by the UTC week (from Monday) of the outcome, oldest first: the rate over time'),
  })
  .meta({ id: 'AccuracyResponse' });
export type AccuracyResponse = z.infer<typeof AccuracyResponse>;

/** The sending services whose event webhooks rcpt takes. */
export const OUTCOME_PROVIDERS = ['ses', 'sendgrid', 'postmark', 'mailgun'] as const;
export const OutcomeProvider = z.enum(OUTCOME_PROVIDERS);
export type OutcomeProvider = z.infer<typeof OutcomeProvider>;

/** An SNS topic ARN (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference-arns.html). */
export const SNS_TOPIC_ARN = /^arn:aws[a-z-]*:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]{1,256}(?:\.fifo)?$/;

export const OutcomeEndpointRequest = z
  .discriminatedUnion('provider', [
    z.strictObject({
      provider: z.literal('ses'),
      topicArn: z.string().regex(SNS_TOPIC_ARN).describe('the SNS topic SES publishes to; no other is taken'),
    }),
    z.strictObject({
      provider: z.literal('sendgrid'),
      publicKey: z.string().min(40).max(1_000).describe("the Event Webhook's verification key (base64)"),
    }),
    z.strictObject({ provider: z.literal('postmark') }),
    z.strictObject({
      provider: z.literal('mailgun'),
      signingKey: z.string().min(16).max(200).describe('the HTTP webhook signing key'),
    }),
  ])
  .meta({ id: 'OutcomeEndpointRequest' });
export type OutcomeEndpointRequest = z.infer<typeof OutcomeEndpointRequest>;

export const OutcomeEndpoint = z
  .object({
    id: z.string(),
    provider: OutcomeProvider,
    url: z
      .string()
      .describe("the webhook URL to give the sending service (Postmark's without its credentials)"),
    createdAt: z.iso.datetime(),
  })
  .meta({ id: 'OutcomeEndpoint' });
export type OutcomeEndpoint = z.infer<typeof OutcomeEndpoint>;

export const OutcomeEndpointResponse = z
  .object({
    success: z.literal(true),
    endpoint: OutcomeEndpoint,
    basicAuth: z
      .object({ username: z.string(), password: z.string() })
      .nullable()
      .describe('Postmark: the credentials to put in the webhook URL, shown once; null for the others'),
  })
  .meta({ id: 'OutcomeEndpointResponse' });

// D1 schema (drizzle). Migrations in /migrations are generated from this file by
// `npm run db:generate`; never edit a generated migration by hand.
// Times are integer milliseconds since the epoch (UTC).
import { sql } from 'drizzle-orm';
import { blob, index, integer, primaryKey, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core';

export const accounts = sqliteTable('accounts', {
  id: text('id').primaryKey(),
  email: text('email').unique(),
  passwordHash: text('password_hash'),
  // Never read-modify-written in code: changed only by conditional UPDATEs beside a ledger row.
  creditBalance: integer('credit_balance').notNull().default(0),
  webhookUrl: text('webhook_url'),
  webhookSecret: text('webhook_secret'),
  createdAt: integer('created_at').notNull(),
  // When the owner followed the confirmation link sent to `email` (docs/money.md): the free
  // credits are granted in the same transaction. Null: not confirmed yet, no free credits.
  emailConfirmedAt: integer('email_confirmed_at'),
  // Whether the account's jobs ask temporary answers again over the next hours when the
  // upload does not say (`recheck`, docs/architecture.md "Greylist follow-up"). 1: yes.
  recheckDefault: integer('recheck_default').notNull().default(0),
  // Whether the account's jobs watch their domains when the upload does not say (`watch`,
  // docs/architecture.md "Watched jobs"). 1: yes, for WATCH_DEFAULT_DAYS.
  watchDefault: integer('watch_default').notNull().default(0),
  // Disputes of the account's payments still open (docs/money.md, "Disputes"): while above 0, no
  // paid work is admitted. Moved only beside the dispute's own state change, in one transaction.
  openDisputes: integer('open_disputes').notNull().default(0),
  // Credits a lost dispute left owed (the disputed purchase's credits already spent); the next
  // purchases settle it before their credits reach the balance.
  creditDebt: integer('credit_debt').notNull().default(0),
  // When the password was last set through a reset link, until the owner has looked at the API
  // keys made before then (whoever held the account may have made them): the keys page lists
  // them. Null: nothing to review.
  keysReviewBefore: integer('keys_review_before'),
  // Whether the shared fleet may take the account's probes when none of its own probers
  // (prober tokens with its account_id) is ready or every one is blocked at the MX
  // (docs/operations.md, "Customer-run probers"). 1, the default: its work is never stranded.
  sharedFleetFallback: integer('shared_fleet_fallback').notNull().default(1),
  // Credits of the balance held by the account's desk (objects/account-desk.ts) for the single
  // calls it charges in its own storage (docs/money.md, "Where the balance lives"): every other
  // charge sees the balance less these (`freeCreditsSql`). Moved only by the desk, in the same
  // statement that takes a block or that books what the desk spent.
  creditsReserved: integer('credits_reserved').notNull().default(0),
});

/**
 * The flushes of account desks applied, one row each (docs/money.md, "Where the balance lives"):
 * a flush's batch writes its row first, so a flush retried after its answer was lost fails on the
 * primary key and changes nothing.
 */
export const deskBatches = sqliteTable('desk_batches', {
  id: text('id').primaryKey(),
  accountId: text('account_id').notNull(),
  createdAt: integer('created_at').notNull(),
});

/**
 * The mailboxes that received free sign-up credits, one row each (docs/money.md, "Free
 * credits"): `mailbox` is the address normalised by shared `normaliseMailbox`, so `me+2@…` and
 * `m.e@gmail.com` are the mailbox of `me@…`. The grant claims the row in the same transaction;
 * the primary key lets one account only ever hold it.
 */
export const signupGrantMailboxes = sqliteTable('signup_grant_mailboxes', {
  mailbox: text('mailbox').primaryKey(),
  // No reference to `accounts`: the claims are decided in the directory for the accounts of every
  // shard (docs/architecture.md, "Sharding what still grows").
  accountId: text('account_id').notNull(),
  grantedAt: integer('granted_at').notNull(),
});

export const apiKeys = sqliteTable(
  'api_keys',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id),
    name: text('name').notNull(),
    mode: text('mode', { enum: ['live', 'test'] }).notNull(),
    // SHA-256 of the whole secret, hex. The secret itself is shown once and never stored.
    keyHash: text('key_hash').notNull().unique(),
    // The visible start of the key (`rk_live_ab12`), for people to tell keys apart.
    prefix: text('prefix').notNull(),
    createdAt: integer('created_at').notNull(),
    lastUsedAt: integer('last_used_at'),
    revokedAt: integer('revoked_at'),
    // 'publishable' (`rk_pub_…`): a live key for web pages, limited to the single verify from
    // its allowed origins (docs/publishable-keys.md). 'secret': every other key.
    kind: text('kind', { enum: ['secret', 'publishable'] })
      .notNull()
      .default('secret'),
    // The operations the key may call, a JSON array of KeyScope; null: every operation.
    scopes: text('scopes'),
    // The client address blocks the key may be used from, a JSON array of CIDR text; null: any.
    allowedCidrs: text('allowed_cidrs'),
    // Publishable keys: the page origins (`https://shop.example`) the key answers, a JSON array.
    allowedOrigins: text('allowed_origins'),
    // Publishable keys: verifications admitted per UTC day, set by the customer.
    dailyCap: integer('daily_cap'),
    // Publishable keys: the whole key, shown again in the dashboard (it is embedded in pages
    // and not a secret; docs/publishable-keys.md). Null for secret keys, which are shown once.
    publishableKey: text('publishable_key'),
    // Publishable keys: the customer's Turnstile secret key, sealed (services/accounts/secret-box.ts); when set,
    // every call must carry a Turnstile token that its Siteverify accepts.
    turnstileSecret: text('turnstile_secret'),
  },
  (table) => [index('api_keys_account').on(table.accountId, table.createdAt)],
);

export const creditLedger = sqliteTable(
  'credit_ledger',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id),
    delta: integer('delta').notNull(),
    balanceAfter: integer('balance_after').notNull(),
    reason: text('reason').notNull(),
    // Request id for a single verification, job id for a batch charge or refund.
    reference: text('reference').notNull(),
    createdAt: integer('created_at').notNull(),
  },
  (table) => [
    index('credit_ledger_account').on(table.accountId, table.createdAt),
    // One charge and one refund per request or job, one sign-up grant per account, one grant
    // per Stripe payment and one take-back per refunded amount: a replayed movement changes nothing.
    uniqueIndex('credit_ledger_once')
      .on(table.reference, table.reason)
      .where(
        sql`reason IN ('verify', 'verify_refund', 'bulk_charge', 'bulk_refund', 'signup_grant', 'purchase', 'purchase_refund', 'dispute_hold', 'dispute_return', 'debt_settlement', 'guarantee_refund')`,
      ),
  ],
);

export const verifications = sqliteTable(
  'verifications',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id),
    apiKeyId: text('api_key_id'),
    kind: text('kind', { enum: ['single', 'batch'] }).notNull(),
    email: text('email'),
    // A single verification's address normalised (domain in lower-case A-labels, local part as
    // given): the key of the account's verdict cache. Null for a batch entry and for an address
    // the cache does not keep (docs/verdicts.md, "Cached answers").
    address: text('address'),
    jobId: text('job_id'),
    status: text('status'),
    subStatus: text('sub_status'),
    score: integer('score'),
    resultJson: text('result_json'),
    createdAt: integer('created_at').notNull(),
  },
  (table) => [
    index('verifications_account').on(table.accountId, table.createdAt),
    index('verifications_created').on(table.createdAt),
    // Single verifications charged and not yet answered: the recovery sweep refunds stale ones.
    index('verifications_open').on(table.createdAt).where(sql`kind = 'single' AND status IS NULL`),
    // The account's latest verdict for an address, for the verdict cache.
    index('verifications_address')
      .on(table.accountId, table.address, table.createdAt)
      .where(sql`address IS NOT NULL`),
  ],
);

// ── Domain facts ───────────────────────────────────────────────────────────────────────
// What rcpt learned about a domain, shared by every account, each fact with its own expiry
// (docs/architecture.md, "Domain facts"). An expired fact is kept: the next answer is compared
// with it, and `changed_at` moves only when a fact's answer changed, which retires every
// cached verdict reached before.

export const domainFacts = sqliteTable(
  'domain_facts',
  {
    domain: text('domain').primaryKey(),
    // The mail route (a DnsOutcome, JSON) and when its DNS TTL runs out.
    route: text('route'),
    // What identifies the route for change detection: its kind and MX hosts, not their
    // addresses, which large providers rotate on every answer.
    routeKey: text('route_key'),
    routeExpiresAt: integer('route_expires_at'),
    // The mailbox provider family the route names (gmail, microsoft, …), or null.
    provider: text('provider'),
    // The reply to a made-up address (an SmtpReply, JSON), its reading (1 catch-all, 0 not),
    // and when it is asked again.
    catchAllReply: text('catch_all_reply'),
    catchAll: integer('catch_all'),
    catchAllExpiresAt: integer('catch_all_expires_at'),
    // The mail tenant behind a security gateway (JSON), once detected.
    tenant: text('tenant'),
    tenantExpiresAt: integer('tenant_expires_at'),
    // How long the domain's greylisting held an address back before a batch retry was let
    // through (seconds), as last measured, and when that measure is no longer trusted. Not a
    // fact verdicts rest on: it does not move `changed_at`.
    greylistDelaySeconds: integer('greylist_delay_s'),
    greylistDelayExpiresAt: integer('greylist_delay_expires_at'),
    // The domain's slowest recent batch probe (seconds), whether it ran out of time (1: a
    // tarpit that never answered), and when that is no longer trusted. What a new job's
    // estimate counts on for the domain; like the greylisting delay, it does not move `changed_at`.
    slowProbeSeconds: integer('slow_probe_s'),
    slowProbeTimedOut: integer('slow_probe_timed_out'),
    slowProbeExpiresAt: integer('slow_probe_expires_at'),
    // Learnt from outcomes (docs/verdicts.md, "Learning from outcomes"): hard bounces on a mailbox
    // reason of addresses the domain's server had accepted, over the accounts whose latest such
    // bounce is within the window (domain_accepted_bounces), how many accounts, and the latest
    // bounce. Enough of them from enough accounts moves `changed_at`: verdicts reached on the
    // domain's acceptance no longer hold.
    acceptedBounces: integer('accepted_bounces'),
    acceptedBounceAccounts: integer('accepted_bounce_accounts'),
    acceptedBouncesAt: integer('accepted_bounces_at'),
    changedAt: integer('changed_at').notNull(),
    updatedAt: integer('updated_at').notNull(),
  },
  (table) => [
    // Retention drops rows nobody has touched for a day.
    index('domain_facts_updated').on(table.updatedAt),
    // The measured greylisting delays, newest first: an upload's estimate reads their median for
    // a greylister it has not measured yet (batch/estimate.ts). Only rows that hold one.
    index('domain_facts_greylist_delay')
      .on(table.greylistDelayExpiresAt)
      .where(sql`greylist_delay_s IS NOT NULL`),
  ],
);

export const proberTokens = sqliteTable('prober_tokens', {
  id: text('id').primaryKey(),
  name: text('name').notNull(),
  region: text('region').notNull(),
  tokenHash: text('token_hash').notNull().unique(),
  prefix: text('prefix').notNull(),
  createdAt: integer('created_at').notNull(),
  lastSeenAt: integer('last_seen_at'),
  revokedAt: integer('revoked_at'),
  // The account whose probers link with it: they serve that account's work only. Null: the
  // shared fleet, which serves every account (docs/operations.md, "Customer-run probers").
  accountId: text('account_id'),
});

// Operators read the fleet's state (docs/operations.md, "The operator's view") with a token of
// their own, stored hashed like every secret: it opens no account's data and no prober link.
export const operatorTokens = sqliteTable('operator_tokens', {
  id: text('id').primaryKey(),
  name: text('name').notNull(),
  tokenHash: text('token_hash').notNull().unique(),
  prefix: text('prefix').notNull(),
  createdAt: integer('created_at').notNull(),
  lastSeenAt: integer('last_seen_at'),
  revokedAt: integer('revoked_at'),
});

// ── Batch verification ─────────────────────────────────────────────────────────────────
// A job's rows keep the upload's order and original columns; its addresses are the unique
// normalised addresses to verify (a duplicate row points at the same address). Both are the
// job's lists (storage/job-lists/): each write of them reports the job's counters with a write
// sequence number, which the job row applies when it is higher than `lists_seq`, so replays and
// late reports change nothing (docs/architecture.md, "Where a job's lists live").

export const jobs = sqliteTable(
  'jobs',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id),
    apiKeyId: text('api_key_id'),
    name: text('name'),
    status: text('status', { enum: ['pending', 'processing', 'completed', 'failed'] }).notNull(),
    source: text('source', { enum: ['json', 'csv'] }).notNull(),
    totalRows: integer('total_rows').notNull(),
    totalEmails: integer('total_emails').notNull(),
    duplicateCount: integer('duplicate_count').notNull(),
    emptyRows: integer('empty_rows').notNull(),
    invalidRows: integer('invalid_rows').notNull(),
    skippedRows: integer('skipped_rows').notNull(),
    processedEmails: integer('processed_emails').notNull().default(0),
    deliverableCount: integer('deliverable_count').notNull().default(0),
    undeliverableCount: integer('undeliverable_count').notNull().default(0),
    riskyCount: integer('risky_count').notNull().default(0),
    unknownCount: integer('unknown_count').notNull().default(0),
    catchAllCount: integer('catch_all_count').notNull().default(0),
    refundableCount: integer('refundable_count').notNull().default(0),
    creditsCharged: integer('credits_charged').notNull(),
    creditsRefunded: integer('credits_refunded').notNull().default(0),
    // Set once, in the transaction that completes the job and applies its refund.
    finalized: integer('finalized').notNull().default(0),
    csvHeaders: text('csv_headers'),
    webhookUrl: text('webhook_url'),
    failureReason: text('failure_reason'),
    createdAt: integer('created_at').notNull(),
    completedAt: integer('completed_at'),
    // The job completes by then: what is still temporary becomes `unknown` (docs/verdicts.md).
    deadlineAt: integer('deadline_at'),
    // Greylist follow-up (docs/architecture.md): 1 when the completed job asks its recheckable
    // answers again. Rounds are numbered from 1; `recheck_round` is how many started. A round
    // is running while `recheck_round_ends_at` is set; the next starts at `recheck_due_at`
    // (null: no more). `rechecked_at` is when a round last changed a verdict, and
    // `recheck_changes` how many that round changed.
    recheck: integer('recheck').notNull().default(0),
    recheckRound: integer('recheck_round').notNull().default(0),
    recheckDueAt: integer('recheck_due_at'),
    recheckRoundEndsAt: integer('recheck_round_ends_at'),
    recheckedAt: integer('rechecked_at'),
    recheckChanges: integer('recheck_changes').notNull().default(0),
    // 1: each result carries the evidence behind its answer (docs/verdicts.md, "Evidence").
    evidence: integer('evidence').notNull().default(0),
    // Watched jobs (docs/architecture.md): the days a completed job watches its domains (null:
    // not watched), until when (set at completion), and how many of its follow-up rounds a
    // domain change started (the greylist schedule counts only its own).
    watchDays: integer('watch_days'),
    watchUntil: integer('watch_until'),
    watchRounds: integer('watch_rounds').notNull().default(0),
    // When the retention cron deleted the job's rows that cost nothing (no address, or a
    // duplicate), FREE_ROWS_RETENTION_DAYS after upload; null: they are kept (docs/money.md).
    freeRowsDroppedAt: integer('free_rows_dropped_at'),
    // The write sequence number of the lists' report the counters above come from.
    listsSeq: integer('lists_seq').notNull().default(0),
    // Where the job's lists live, chosen at upload and never changed: 'object' (its JobStore
    // Durable Object) for new jobs, 'd1' for those from before (docs/architecture.md, "Where a
    // job's lists live"). `rows_stored_at`: when the upload's rows reached the lists; null past a
    // minute, the recovery sweep fails and refunds the job.
    store: text('store', { enum: ['d1', 'object'] })
      .notNull()
      .default('d1'),
    rowsStoredAt: integer('rows_stored_at'),
  },
  (table) => [
    index('jobs_account').on(table.accountId, table.createdAt),
    index('jobs_status').on(table.status, table.createdAt),
    // Follow-up rounds due or overdue, for the recovery sweep when a queue message was lost.
    index('jobs_recheck_due').on(table.recheckDueAt).where(sql`recheck_due_at IS NOT NULL`),
    // The account's jobs in flight, counted by every upload against its quota.
    index('jobs_in_flight').on(table.accountId).where(sql`status IN ('pending', 'processing')`),
    // Jobs whose free rows the retention cron has still to drop, oldest first.
    index('jobs_free_rows_kept').on(table.createdAt).where(sql`free_rows_dropped_at IS NULL`),
    // Jobs whose rows have not reached their lists yet, for the recovery sweep.
    index('jobs_rows_unstored').on(table.createdAt).where(sql`rows_stored_at IS NULL`),
  ],
);

export const jobRows = sqliteTable(
  'job_rows',
  {
    jobId: text('job_id').notNull(),
    row: integer('row').notNull(),
    input: text('input').notNull(),
    // Index into job_addresses; null for an empty or invalid row (its result is below).
    addressIdx: integer('address_idx'),
    resultJson: text('result_json'),
    csvValues: text('csv_values'),
  },
  (table) => [primaryKey({ columns: [table.jobId, table.row] })],
);

export const jobAddresses = sqliteTable(
  'job_addresses',
  {
    jobId: text('job_id').notNull(),
    idx: integer('idx').notNull(),
    email: text('email').notNull(),
    domain: text('domain').notNull(),
    state: text('state', { enum: ['queued', 'done'] }).notNull(),
    attempts: integer('attempts').notNull().default(0),
    // When the address was last handed to the queue; the recovery sweep re-enqueues stale ones.
    enqueuedAt: integer('enqueued_at').notNull(),
    status: text('status'),
    subStatus: text('sub_status'),
    catchAll: integer('catch_all'),
    // 1: the final answer is refundable (refunded at completion), until a follow-up round's
    // known answer is charged (docs/money.md).
    refundable: integer('refundable').notNull().default(0),
    resultJson: text('result_json'),
    // When a queued address that has a temporary answer is asked again (its retry's due time).
    retryAt: integer('retry_at'),
    // Greylist follow-up: 'due' — a recheckable final answer, asked again in the next round;
    // 'asking' — asked in the running round, no answer yet; 'charging' — within the one
    // transaction that records a paid answer only; null — nothing to ask.
    recheck: text('recheck', { enum: ['due', 'asking', 'charging'] }),
    // The round in which a recheck last changed this address's verdict.
    changedInRound: integer('changed_in_round'),
  },
  (table) => [
    primaryKey({ columns: [table.jobId, table.idx] }),
    // An address's answers in the account's jobs, for matching outcomes (docs/verdicts.md, "Outcomes").
    index('job_addresses_email').on(table.email),
    index('job_addresses_state').on(table.jobId, table.state, table.enqueuedAt),
    // The few addresses a follow-up round asks again: found without reading the job's others
    // (every settled probe checks whether its job has any).
    index('job_addresses_recheck').on(table.jobId, table.recheck).where(sql`recheck IS NOT NULL`),
  ],
);

// A Bloom filter of a job's addresses (storage/address-filter.ts), written with the job: the jobs
// whose lists an outcome's email may be in (docs/architecture.md, "Where a job's lists live").
// Beside the job's row, not in it, so that reading a job does not read its filter; read with raw
// SQL only.
export const jobAddressFilters = sqliteTable('job_address_filters', {
  jobId: text('job_id').primaryKey(),
  filter: blob('filter').notNull(),
});

// The write sequence number of each job's lists (storage/job-lists/d1.ts): one step per write.
export const jobListSeqs = sqliteTable('job_list_seqs', {
  jobId: text('job_id').primaryKey(),
  seq: integer('seq').notNull(),
});

/**
 * The addresses of a job that a follow-up round's answer charged (docs/money.md, "Batch"), each
 * once in the job's life, written in the transaction that moved its credit (`applied` is 0 only
 * inside it): an address found here is paid for, so an answer recorded again after a crash
 * between D1's charge and the lists' record is not charged twice (storage/ledger.ts,
 * chargeRecheckedAddresses).
 */
export const jobRecheckCharges = sqliteTable(
  'job_recheck_charges',
  {
    jobId: text('job_id').notNull(),
    idx: integer('idx').notNull(),
    round: integer('round').notNull(),
    applied: integer('applied').notNull().default(0),
  },
  (table) => [primaryKey({ columns: [table.jobId, table.idx] })],
);

/**
 * The domains of a watched job (docs/architecture.md, "Watched jobs"), one row each: the domain
 * facts its verdicts rest on (`facts_changed_at`, and `facts_key`: the route key, catch-all
 * reading and tenant, null when there were none), when the cron last looked at them, and the
 * last change seen with the follow-up round that verified the domain's addresses again.
 */
export const jobWatchDomains = sqliteTable(
  'job_watch_domains',
  {
    jobId: text('job_id').notNull(),
    domain: text('domain').notNull(),
    accountId: text('account_id').notNull(),
    factsChangedAt: integer('facts_changed_at').notNull(),
    factsKey: text('facts_key'),
    lookedAt: integer('looked_at').notNull(),
    // JSON: the WatchChange last seen (shared/src/contract/api.ts); null until one is.
    change: text('change'),
    changedAt: integer('changed_at'),
    round: integer('round'),
  },
  (table) => [
    primaryKey({ columns: [table.jobId, table.domain] }),
    // Every watcher of a domain, when the cron looks at it.
    index('job_watch_domains_domain').on(table.domain),
  ],
);

export const webhookDeliveries = sqliteTable(
  'webhook_deliveries',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id),
    jobId: text('job_id'),
    eventType: text('event_type').notNull(),
    url: text('url').notNull(),
    payload: text('payload').notNull(),
    state: text('state', { enum: ['pending', 'delivered', 'failed'] }).notNull(),
    attempts: integer('attempts').notNull().default(0),
    lastStatus: integer('last_status'),
    lastError: text('last_error'),
    nextAttemptAt: integer('next_attempt_at'),
    createdAt: integer('created_at').notNull(),
    deliveredAt: integer('delivered_at'),
  },
  (table) => [
    index('webhook_deliveries_account').on(table.accountId, table.createdAt),
    index('webhook_deliveries_due').on(table.state, table.nextAttemptAt),
  ],
);

// ── Operator alerts ───────────────────────────────────────────────────────────────────
// What the fleet's hubs saw that an operator acts on (docs/operations.md, "Alerts"): an egress
// blocked or unblocked, a prober or a whole region gone. Each is delivered to the operator's
// webhook (signed, retried as customers' job events are) and by email; kept 60 days.

export const operatorAlerts = sqliteTable(
  'operator_alerts',
  {
    id: text('id').primaryKey(),
    eventType: text('event_type').notNull(),
    region: text('region').notNull(),
    payload: text('payload').notNull(),
    state: text('state', { enum: ['pending', 'delivered', 'failed'] }).notNull(),
    attempts: integer('attempts').notNull().default(0),
    lastStatus: integer('last_status'),
    lastError: text('last_error'),
    nextAttemptAt: integer('next_attempt_at'),
    emailedAt: integer('emailed_at'),
    createdAt: integer('created_at').notNull(),
    deliveredAt: integer('delivered_at'),
  },
  (table) => [
    index('operator_alerts_due').on(table.state, table.nextAttemptAt),
    index('operator_alerts_created').on(table.createdAt),
  ],
);

// ── Idempotency keys ──────────────────────────────────────────────────────────────────
// The first answer to a request sent with an `Idempotency-Key`, kept 24 hours per account and
// key mode (a test key never sees a live key's answer, nor the reverse), so that a retry gets
// that answer instead of being run (and charged) again.

export const idempotencyKeys = sqliteTable(
  'idempotency_keys',
  {
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id),
    // Whose keys: the mode of the secret key that sent the request, or `publishable` for the
    // account's publishable keys (storage/idempotency.ts): keys are scoped per (account, mode).
    mode: text('mode', { enum: ['live', 'test', 'publishable'] })
      .notNull()
      .default('live'),
    key: text('key').notNull(),
    // SHA-256 of the operation, its options and its raw body: the same key with another
    // request is refused.
    fingerprint: text('fingerprint').notNull(),
    // 'running' while the first request is being answered; 'done' once its answer is kept.
    state: text('state', { enum: ['running', 'done'] }).notNull(),
    responseStatus: integer('response_status'),
    responseBody: text('response_body'),
    createdAt: integer('created_at').notNull(),
    // When the running request took the key; a key held far longer than any request is taken over,
    // unless it charged: then its answer is lost, and running it again would charge twice.
    lockedAt: integer('locked_at').notNull(),
    // The ledger reference the holding request charges under (its request id, or its job id).
    chargeReference: text('charge_reference'),
  },
  (table) => [
    primaryKey({ columns: [table.accountId, table.mode, table.key] }),
    index('idempotency_keys_created').on(table.createdAt),
  ],
);

// ── Storage budget ─────────────────────────────────────────────────────────────────────
// Bytes each account wrote on a UTC day, counted by every write path in the transaction of the
// write it counts (docs/money.md, "Quotas and free work"), and the share of them written to D1
// (a job's lists in its JobStore object are not: docs/capacity.md, "The daily write budget").
// Rows older than yesterday are deleted by the retention cron.

export const storageDays = sqliteTable(
  'storage_days',
  {
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id),
    // The UTC day's start, ms since the epoch.
    day: integer('day').notNull(),
    bytes: integer('bytes').notNull(),
    d1Bytes: integer('d1_bytes').notNull().default(0),
  },
  (table) => [primaryKey({ columns: [table.accountId, table.day] }), index('storage_days_day').on(table.day)],
);

// ── Dashboard ──────────────────────────────────────────────────────────────────────────

export const sessions = sqliteTable(
  'sessions',
  {
    // SHA-256 of the session token; the token itself lives only in the browser's cookie.
    tokenHash: text('token_hash').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id),
    createdAt: integer('created_at').notNull(),
    expiresAt: integer('expires_at').notNull(),
    lastSeenAt: integer('last_seen_at').notNull(),
  },
  (table) => [index('sessions_account').on(table.accountId), index('sessions_expires').on(table.expiresAt)],
);

// ── Buying credits ─────────────────────────────────────────────────────────────────────
// Credit packs paid through Stripe (docs/money.md, "Buying credits"). A purchase row is written
// before Stripe is asked for anything; the signed webhook that says it was paid grants its
// credits in the transaction that marks it paid, so a replayed or concurrent delivery finds it
// paid and grants nothing.

export const purchases = sqliteTable(
  'purchases',
  {
    // Ours: Checkout's `client_reference_id`, the top-up PaymentIntent's metadata and idempotency key.
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id),
    kind: text('kind', { enum: ['checkout', 'auto_topup'] }).notNull(),
    credits: integer('credits').notNull(),
    // In the currency's minor unit (cents), as Stripe counts it.
    amount: integer('amount').notNull(),
    currency: text('currency').notNull(),
    status: text('status', {
      enum: ['pending', 'paid', 'failed', 'expired', 'refunded', 'partially_refunded'],
    }).notNull(),
    checkoutSessionId: text('checkout_session_id').unique(),
    paymentIntentId: text('payment_intent_id').unique(),
    // What Stripe refunded so far, and the credits taken back for it (never more than the
    // balance held then; docs/money.md "Refunds").
    amountRefunded: integer('amount_refunded').notNull().default(0),
    creditsTakenBack: integer('credits_taken_back').notNull().default(0),
    failureReason: text('failure_reason'),
    createdAt: integer('created_at').notNull(),
    paidAt: integer('paid_at'),
  },
  (table) => [index('purchases_account').on(table.accountId, table.createdAt)],
);

/**
 * An account's billing settings: its Stripe customer, the card saved for automatic top-ups, the
 * low-balance email and auto top-up thresholds (null: off), and the one top-up in flight.
 */
export const accountBilling = sqliteTable('account_billing', {
  accountId: text('account_id')
    .primaryKey()
    .references(() => accounts.id),
  stripeCustomerId: text('stripe_customer_id').unique(),
  // A PaymentMethod saved by a Checkout with `setup_future_usage: off_session`, and its label.
  paymentMethodId: text('payment_method_id'),
  paymentMethodLabel: text('payment_method_label'),
  lowBalanceThreshold: integer('low_balance_threshold'),
  // When the low-balance email went; cleared once the balance is back at the threshold.
  lowBalanceNotifiedAt: integer('low_balance_notified_at'),
  autoTopUpThreshold: integer('auto_top_up_threshold'),
  autoTopUpCredits: integer('auto_top_up_credits'),
  // The top-up purchase in flight and when it started: at most one at a time.
  topUpPurchaseId: text('top_up_purchase_id'),
  topUpStartedAt: integer('top_up_started_at'),
  // Why the last top-up failed (a declined card); top-ups stay off until the card is saved again.
  topUpFailure: text('top_up_failure'),
  // At most this many automatic top-ups start in a UTC day (docs/money.md, "Low balance and
  // automatic top-up"); past it, one email that day (`topUpLimitNotifiedAt`: when it went).
  autoTopUpDailyLimit: integer('auto_top_up_daily_limit').notNull().default(3),
  topUpLimitNotifiedAt: integer('top_up_limit_notified_at'),
  updatedAt: integer('updated_at').notNull(),
});

/**
 * Disputes (chargebacks) of purchases, one row per Stripe dispute (docs/money.md, "Disputes").
 * `creditsOwed` is what the disputed amount bought; `creditsHeld` what the balance gave up when
 * the dispute opened (never more than it held). Won: the held credits come back; lost: the rest
 * (`creditsOwed - creditsHeld`) becomes the account's `creditDebt`. Every change is guarded by
 * `status`, so a replayed event moves nothing.
 */
export const disputes = sqliteTable(
  'disputes',
  {
    // Stripe's dispute id (`du_…`).
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id),
    purchaseId: text('purchase_id')
      .notNull()
      .references(() => purchases.id),
    amount: integer('amount').notNull(),
    status: text('status', { enum: ['opening', 'open', 'won', 'lost'] }).notNull(),
    creditsOwed: integer('credits_owed').notNull(),
    creditsHeld: integer('credits_held').notNull().default(0),
    createdAt: integer('created_at').notNull(),
    closedAt: integer('closed_at'),
  },
  (table) => [index('disputes_account').on(table.accountId, table.createdAt)],
);

// ── Outcomes ───────────────────────────────────────────────────────────────────────────
// What happened when the account sent to an address (docs/verdicts.md, "Outcomes"), each matched
// when it is recorded to the account's latest verdict for the address before the send. One row
// per (account, event, address): a replayed event — the same id from a sending service, or for
// the API the same address, outcome and time — finds its row and adds nothing.

export const outcomes = sqliteTable(
  'outcomes',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id),
    // The key that reported it (its mode is the outcome's); null: the dashboard or an endpoint.
    apiKeyId: text('api_key_id'),
    source: text('source', {
      enum: ['api', 'dashboard', 'ses', 'sendgrid', 'postmark', 'mailgun'],
    }).notNull(),
    // `<service>:<its event id>`, or `<outcome>@<time>` for the API and the dashboard.
    eventKey: text('event_key').notNull(),
    // Normalised as a verification's (domain in lower-case A-labels, local part as given).
    email: text('email').notNull(),
    outcome: text('outcome', { enum: ['delivered', 'hard_bounce', 'soft_bounce', 'complaint'] }).notNull(),
    at: integer('at').notNull(),
    diagnostic: text('diagnostic'),
    // A bounce's diagnostic as rcpt's reply table reads it: the subStatus of its row, and the kind.
    bounceSubStatus: text('bounce_sub_status'),
    bounceKind: text('bounce_kind', { enum: ['mailbox', 'policy', 'other'] }),
    // The verdict matched: a single call (`verifications.id`) or a job (`jobs.id`); null: none.
    verdictSource: text('verdict_source', { enum: ['single', 'batch'] }),
    verdictRef: text('verdict_ref'),
    verdictAt: integer('verdict_at'),
    verdictStatus: text('verdict_status'),
    verdictSubStatus: text('verdict_sub_status'),
    // The verdict's provider family (meta.provider) or else its MX host, for the accuracy figures.
    verdictProvider: text('verdict_provider'),
    createdAt: integer('created_at').notNull(),
  },
  (table) => [
    uniqueIndex('outcomes_event').on(table.accountId, table.eventKey, table.email),
    index('outcomes_account').on(table.accountId, table.at),
    index('outcomes_created').on(table.createdAt),
    // The account's latest bounce of an address, and whether it was delivered since (learning).
    index('outcomes_account_email').on(table.accountId, table.email, table.at),
  ],
);

/**
 * Per domain and account: hard bounces on a mailbox reason of addresses the domain's server had
 * accepted (a `deliverable` verdict), and the latest one. What the domain facts' learnt bounces
 * are summed from; an account's addresses are never kept here, only its count.
 */
export const domainAcceptedBounces = sqliteTable(
  'domain_accepted_bounces',
  {
    domain: text('domain').notNull(),
    accountId: text('account_id').notNull(),
    bounces: integer('bounces').notNull(),
    lastAt: integer('last_at').notNull(),
  },
  (table) => [primaryKey({ columns: [table.domain, table.accountId] })],
);

/**
 * An account's endpoint for one sending service's event webhook (docs/verdicts.md, "Outcomes"):
 * its id is in the URL; `credential` is what the service's scheme checks — SES: the SNS topic ARN
 * it accepts; SendGrid: the verification key (base64 DER, public); Postmark: SHA-256 of the basic
 * auth password rcpt made; Mailgun: the webhook signing key, sealed (services/accounts/secret-box.ts).
 */
export const outcomeEndpoints = sqliteTable(
  'outcome_endpoints',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id')
      .notNull()
      .references(() => accounts.id),
    provider: text('provider', { enum: ['ses', 'sendgrid', 'postmark', 'mailgun'] }).notNull(),
    credential: text('credential').notNull(),
    createdAt: integer('created_at').notNull(),
    revokedAt: integer('revoked_at'),
  },
  (table) => [index('outcome_endpoints_account').on(table.accountId)],
);

/**
 * Signature nonces an endpoint has seen (Mailgun's `token`): a token seen again with another body
 * is a replay and refused; kept for a day, past the freshness window of a signature.
 */
export const outcomeHookNonces = sqliteTable(
  'outcome_hook_nonces',
  {
    endpointId: text('endpoint_id').notNull(),
    nonce: text('nonce').notNull(),
    bodyDigest: text('body_digest').notNull(),
    createdAt: integer('created_at').notNull(),
  },
  (table) => [
    primaryKey({ columns: [table.endpointId, table.nonce] }),
    index('outcome_hook_nonces_created').on(table.createdAt),
  ],
);

// ── The directory ──────────────────────────────────────────────────────────────────────
// Which database holds each account, and what finds an account from outside it
// (docs/architecture.md, "Sharding what still grows"). Kept in the directory's database (`DB`);
// every database has the tables, the shards leave them empty.

/** The shard whose database holds the account's rows (0: `DB` itself). An account never moves. */
export const accountShards = sqliteTable('account_shards', {
  accountId: text('account_id').primaryKey(),
  shard: integer('shard').notNull(),
});

/**
 * What names an account before its shard is known: `key`, the SHA-256 of an API key (the same
 * `key_hash` its shard's `api_keys` row holds); `email`, an account's stored (normalised) email,
 * claimed by its sign-up; `session`, a dashboard session's token hash; `endpoint`, an outcome
 * endpoint's id; `payment_intent`, a Stripe PaymentIntent's id that paid a purchase. A row is
 * written before the row it finds and stays when that row goes (a revoked key still finds its
 * account, to be refused there); a session's goes with the cron's retention once every session
 * of its `created_at` has ended.
 */
export const accountLookups = sqliteTable(
  'account_lookups',
  {
    kind: text('kind', { enum: ['key', 'email', 'session', 'endpoint', 'payment_intent'] }).notNull(),
    value: text('value').notNull(),
    accountId: text('account_id').notNull(),
    createdAt: integer('created_at'),
  },
  (table) => [primaryKey({ columns: [table.kind, table.value] })],
);

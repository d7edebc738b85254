// Deployment configuration: the Worker's env vars parsed once, with clear errors.
import { type ProberRegion, proberRegions, regionName } from '@rcpt/shared/prober-regions';
import { z } from 'zod';

const booleanFlag = z
  .enum(['true', 'false', '1', '0'])
  .transform((value) => value === 'true' || value === '1');

/** A comma-separated list: its items trimmed, empty ones dropped. */
const commaList = (value: string) =>
  value
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean);

/** An optional setting: unset and empty mean the same. */
const optionalText = z
  .string()
  .optional()
  .transform((value) => value || undefined);

const ConfigSchema = z
  .object({
    DOH_URL: z.string().transform(commaList).pipe(z.array(z.url()).min(1)),
    ALLOW_PRIVATE_TARGETS: booleanFlag.default(false),
    MAIL_FROM: z.string().min(3),
    HELO_NAME: z.string().min(1),
    VERIFY_TIMEOUT_MS: z.coerce.number().int().min(500).max(120_000).default(10_000),
    /** The prober regions in order, the first the primary (docs/operations.md, "Regions"). */
    PROBER_REGIONS: proberRegions.optional(),
    /** The older name of a one-region PROBER_REGIONS; read only when PROBER_REGIONS is unset. */
    PROBER_REGION: regionName.optional(),
    RETENTION_DAYS: z.coerce.number().int().min(1).max(3650).default(60),
    /** Sandbox (test-key) jobs and history are deleted sooner: nothing in them is real (docs/operations.md). */
    SANDBOX_RETENTION_DAYS: z.coerce.number().int().min(1).max(3650).default(7),
    /**
     * Rows that cost nothing (no address, or a duplicate) are deleted from a job this long after
     * its upload; its charged rows stay for RETENTION_DAYS (docs/money.md, "Quotas and free work").
     */
    FREE_ROWS_RETENTION_DAYS: z.coerce.number().int().min(1).max(3650).default(7),
    // Per-account quotas (docs/operations.md): past one, 429 QUOTA_EXCEEDED, nothing stored or charged.
    /** The most bytes a day (UTC) any account may write: every stored row counts (docs/money.md). */
    QUOTA_STORAGE_BYTES_PER_DAY: z.coerce.number().int().min(0).default(100_000_000),
    /**
     * Bytes a day (UTC) one publishable key's calls may store, booked apart from its account's
     * budget so that a page's visitors cannot fill the customer's (docs/publishable-keys.md).
     */
    QUOTA_PUBLISHABLE_STORAGE_BYTES_PER_DAY: z.coerce.number().int().min(0).default(50_000_000),
    /** The daily storage budget of an account that bought no credits in 30 days and holds none. */
    QUOTA_STORAGE_BASE_BYTES_PER_DAY: z.coerce.number().int().min(0).default(5_000_000),
    /** What each credit bought in the last 30 days (or held) adds to the daily budget, up to the most. */
    QUOTA_STORAGE_BYTES_PER_CREDIT: z.coerce.number().int().min(0).default(10_000),
    /**
     * Bytes all accounts together may write to D1 a UTC day before new lists are refused (503
     * DAILY_STORAGE_FULL); unset: derived from D1's database size and RETENTION_DAYS
     * (docs/capacity.md, "The daily write budget").
     */
    GLOBAL_DAILY_STORAGE_BYTES: z.coerce.number().int().min(0).optional(),
    /** Jobs pending or processing at once. */
    QUOTA_JOBS_IN_FLIGHT: z.coerce.number().int().min(0).default(10),
    /** Active (not revoked) API keys. */
    QUOTA_API_KEYS: z.coerce.number().int().min(0).default(25),
    /** Live prober tokens an account makes on its Probers page (docs/operations.md, "Customer-run probers"). */
    QUOTA_PROBER_TOKENS: z.coerce.number().int().min(0).default(5),
    /**
     * Requests to the internet one invocation may make: the Workers plan's subrequest limit
     * (https://developers.cloudflare.com/workers/platform/limits/#subrequests): 50 on Workers
     * Free, 10,000 on Workers Paid (the default here), more where `[limits] subrequests` raises it.
     */
    SUBREQUEST_LIMIT: z.coerce.number().int().min(10).default(10_000),
    SMTP_ENABLED: booleanFlag.default(true),
    /** Most probes of one address in a batch, whatever its retry pace (1: every first answer is final). */
    BATCH_MAX_ATTEMPTS: z.coerce.number().int().min(1).max(30).default(30),
    BATCH_PROBE_TIMEOUT_MS: z.coerce.number().int().min(1000).max(600_000).default(60_000),
    /**
     * How long an upload waits for the sample of its unknown domains, DNS and SMTP together;
     * unset: SAMPLE_WAIT_MS (services/batch/pace-sample.ts, docs/capacity.md).
     */
    BATCH_SAMPLE_WAIT_MS: z.coerce.number().int().min(500).max(30_000).optional(),
    /** Lease after which queued batch work is enqueued again by the recovery sweep. */
    BATCH_LEASE_SECONDS: z.coerce.number().int().min(10).max(86_400).default(900),
    /** A job still processing after this long fails (with a reason) and is refunded. */
    BATCH_MAX_HOURS: z.coerce.number().min(0.01).max(168).default(6),
    /**
     * Greylist follow-up (docs/architecture.md): when a job with `recheck` asks its temporary
     * answers again, in seconds after the job completed, one round each: 15 min, 1 h, 4 h, 12 h.
     */
    RECHECK_SCHEDULE_SECONDS: z
      .string()
      .default('900,3600,14400,43200')
      .transform((value) => commaList(value).map(Number))
      .pipe(
        z
          .array(
            z
              .number()
              .int()
              .min(1)
              .max(7 * 86_400),
          )
          .max(12)
          .refine(
            (delays) => delays.every((delay, index) => index === 0 || delay > (delays[index - 1] ?? 0)),
            {
              message: 'must be increasing',
            },
          ),
      ),
    /** AES-GCM key (base64, 32 bytes) sealing stored webhook secrets; a Worker secret in production. */
    SECRETS_KEY: z.string().optional(),
    /** How sign-up confirmation links are sent: `console` for local development only. */
    EMAIL_SENDER: z.enum(['console', 'cloudflare']).default('cloudflare'),
    /** The From address of confirmation emails (`cloudflare` sender). */
    EMAIL_FROM: optionalText,
    /**
     * The operator's alerts (docs/operations.md, "Alerts"): where the fleet's events are posted,
     * signed with OPERATOR_WEBHOOK_SECRET (`whsec_…`, Standard Webhooks), and who is emailed
     * them; PUBLIC_URL is this edge's public origin, for the link to the fleet view.
     */
    OPERATOR_WEBHOOK_URL: optionalText.pipe(z.url().optional()),
    OPERATOR_WEBHOOK_SECRET: optionalText.pipe(z.string().startsWith('whsec_').optional()),
    OPERATOR_EMAIL: optionalText.pipe(z.email().optional()),
    PUBLIC_URL: optionalText.pipe(z.url().optional()),
    /** Cloudflare Turnstile on the sign-up form: on when the site key is set (with its secret). */
    TURNSTILE_SITE_KEY: optionalText,
    TURNSTILE_SECRET_KEY: optionalText,
    TURNSTILE_SITEVERIFY_URL: z.url().default('https://challenges.cloudflare.com/turnstile/v0/siteverify'),
    // Buying credits (docs/money.md "Buying credits", docs/operations.md "Payments"): on when
    // both Stripe secrets are set; without them the dashboard says purchases are off.
    /** Stripe secret API key (`sk_live_…`/`sk_test_…`); a Worker secret, never logged. */
    STRIPE_SECRET_KEY: optionalText,
    /** Signing secret of the Stripe webhook endpoint (`whsec_…`); a Worker secret, never logged. */
    STRIPE_WEBHOOK_SECRET: optionalText,
    /** Where the Stripe library sends its requests; unset: Stripe's API. Local and tests: the fake Stripe. */
    STRIPE_API_URL: optionalText.pipe(z.url().optional()),
    /** The credit packs on sale: `credits:price` pairs, the price in the currency's minor unit (cents). */
    CREDIT_PACKS: z
      .string()
      .default('1000:900,10000:4900,100000:29900')
      .transform((value) =>
        commaList(value).map((item) => {
          const [credits, price] = item.split(':').map((part) => Number(part.trim()));
          return { credits, price };
        }),
      )
      .pipe(
        z
          .array(
            z.object({
              credits: z.number().int().min(1).max(10_000_000),
              // Stripe's smallest charge is 50 cents (https://docs.stripe.com/currencies#minimum-and-maximum-charge-amounts).
              price: z.number().int().min(50).max(99_999_999),
            }),
          )
          .min(1)
          .max(6)
          .refine((packs) => new Set(packs.map((pack) => pack.credits)).size === packs.length, {
            message: 'two packs have the same number of credits',
          }),
      ),
    /**
     * Tests only: a loopback origin (`http://127.0.0.1:port`) whose SNS signing certificates and
     * subscription links are taken besides Amazon SNS's own hosts (docs/verdicts.md, "Outcomes").
     * Refused unless ALLOW_PRIVATE_TARGETS is on, so it can never widen a production deployment.
     */
    SNS_TEST_ORIGIN: optionalText.pipe(
      z
        .string()
        .regex(
          /^https?:\/\/127\.\d{1,3}\.\d{1,3}\.\d{1,3}:\d{1,5}$/,
          'a loopback origin such as http://127.0.0.1:8080',
        )
        .optional(),
    ),
    /** ISO 4217 code of the packs' prices, lower case as Stripe writes it. */
    CREDIT_CURRENCY: z
      .string()
      .regex(/^[a-z]{3}$/)
      .default('usd'),
  })
  .refine((config) => !config.SNS_TEST_ORIGIN || config.ALLOW_PRIVATE_TARGETS, {
    message: 'SNS_TEST_ORIGIN is for tests, which set ALLOW_PRIVATE_TARGETS; it is refused without it',
    path: ['SNS_TEST_ORIGIN'],
  })
  .refine((config) => !config.TURNSTILE_SITE_KEY || config.TURNSTILE_SECRET_KEY, {
    message: 'TURNSTILE_SITE_KEY is set but the TURNSTILE_SECRET_KEY secret is not',
    path: ['TURNSTILE_SECRET_KEY'],
  })
  .refine((config) => !config.OPERATOR_WEBHOOK_URL || config.OPERATOR_WEBHOOK_SECRET, {
    message: 'OPERATOR_WEBHOOK_URL needs OPERATOR_WEBHOOK_SECRET (whsec_…) to sign the alerts',
    path: ['OPERATOR_WEBHOOK_SECRET'],
  });

export type Config = z.infer<typeof ConfigSchema>;

/** A credit pack on sale: `credits` for `price` minor units of CREDIT_CURRENCY. */
export type CreditPack = Config['CREDIT_PACKS'][number];

const parsed = new WeakMap<object, Config>();

/** The config for this env, parsed on first use and cached for the isolate's life. */
export function configOf(env: Env): Config {
  let config = parsed.get(env);
  if (!config) {
    const result = ConfigSchema.safeParse(env);
    if (!result.success) {
      const problems = result.error.issues
        .map((issue) => `${issue.path.join('.')}: ${issue.message}`)
        .join('; ');
      throw new Error(`invalid edge configuration: ${problems}`);
    }
    config = result.data;
    parsed.set(env, config);
  }
  return config;
}

/** The deployment's prober regions, the primary first: PROBER_REGIONS, or PROBER_REGION alone, or `default`. */
export function proberRegionsOf(config: Config): readonly ProberRegion[] {
  return config.PROBER_REGIONS ?? [{ name: config.PROBER_REGION ?? 'default' }];
}

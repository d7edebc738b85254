// Deployment configuration: the Worker's env vars parsed once, with clear errors.
import { z } from 'zod';

const booleanFlag = z
  .enum(['true', 'false', '1', '0'])
  .transform((value) => value === 'true' || value === '1');

/** An optional setting: unset and empty mean the same. */
const optionalText = z
  .string()
  .optional()
  .transform((value) => value || undefined);

/** Durable Object location hints (https://developers.cloudflare.com/durable-objects/platform/data-location/). */
const LOCATION_HINTS = ['wnam', 'enam', 'sam', 'weur', 'eeur', 'apac', 'oc', 'afr', 'me'] as const;

/** A prober region's name: what its probers' tokens and REGION say. */
const regionName = z
  .string()
  .regex(/^[A-Za-z0-9._-]{1,64}$/, 'a region is 1–64 letters, digits, dots, dashes or underscores');

/**
 * PROBER_REGIONS: `name[:hint],…` in order of preference, the first the primary; the hint places
 * that region's hub near its probers (docs/operations.md, "Regions").
 */
const proberRegions = z
  .string()
  .transform((value) =>
    value
      .split(',')
      .map((entry) => entry.trim())
      .filter(Boolean),
  )
  .pipe(
    z
      .array(
        z
          .string()
          .transform((entry) => {
            const [name = '', locationHint] = entry.split(':');
            return { name, ...(locationHint === undefined ? {} : { locationHint }) };
          })
          .pipe(z.object({ name: regionName, locationHint: z.enum(LOCATION_HINTS).optional() })),
      )
      .min(1)
      .refine((regions) => new Set(regions.map((region) => region.name)).size === regions.length, {
        message: 'names a region twice',
      }),
  );

export type ProberRegion = z.infer<typeof proberRegions>[number];

const ConfigSchema = z
  .object({
    DOH_URL: z
      .string()
      .transform((value) =>
        value
          .split(',')
          .map((url) => url.trim())
          .filter(Boolean),
      )
      .pipe(z.array(z.url()).min(1)),
    ALLOW_PRIVATE_TARGETS: booleanFlag.default(false),
    MAIL_FROM: z.string().min(3),
    HELO_NAME: z.string().min(1),
    VERIFY_TIMEOUT_MS: z.coerce.number().int().min(500).max(120_000).default(10_000),
    PROBER_REGIONS: proberRegions.optional(),
    /** The older name of a one-region PROBER_REGIONS; read only when PROBER_REGIONS is unset. */
    PROBER_REGION: regionName.optional(),
    RETENTION_DAYS: z.coerce.number().int().min(1).max(3650).default(60),
    /** Sandbox (test-key) jobs and history are deleted sooner: nothing in them is real (docs/operations.md). */
    SANDBOX_RETENTION_DAYS: z.coerce.number().int().min(1).max(3650).default(7),
    // Per-account quotas (docs/operations.md): past one, 429 QUOTA_EXCEEDED, nothing stored or charged.
    /** Bytes a day (UTC) an account may write: every stored row counts (docs/money.md). */
    QUOTA_STORAGE_BYTES_PER_DAY: z.coerce.number().int().min(0).default(100_000_000),
    /** Jobs pending or processing at once. */
    QUOTA_JOBS_IN_FLIGHT: z.coerce.number().int().min(0).default(10),
    /** Active (not revoked) API keys. */
    QUOTA_API_KEYS: z.coerce.number().int().min(0).default(25),
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
      .transform((value) =>
        value
          .split(',')
          .map((item) => item.trim())
          .filter(Boolean)
          .map(Number),
      )
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
    /** Cloudflare Turnstile on the sign-up form: on when the site key is set (with its secret). */
    TURNSTILE_SITE_KEY: optionalText,
    TURNSTILE_SECRET_KEY: optionalText,
    TURNSTILE_SITEVERIFY_URL: z.url().default('https://challenges.cloudflare.com/turnstile/v0/siteverify'),
  })
  .refine((config) => !config.TURNSTILE_SITE_KEY || config.TURNSTILE_SECRET_KEY, {
    message: 'TURNSTILE_SITE_KEY is set but the TURNSTILE_SECRET_KEY secret is not',
    path: ['TURNSTILE_SECRET_KEY'],
  });

export type Config = z.infer<typeof ConfigSchema>;

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

/** A PROBER_REGIONS value read as the edge reads it (local tooling starts its probers by it); throws when invalid. */
export function parseProberRegions(value: string): ProberRegion[] {
  return proberRegions.parse(value);
}

/** The deployment's prober regions, the primary first: PROBER_REGIONS, or PROBER_REGION alone, or `default`. */
export function proberRegionsOf(config: Config): readonly ProberRegion[] {
  return config.PROBER_REGIONS ?? [{ name: config.PROBER_REGION ?? 'default' }];
}

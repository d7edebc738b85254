// The prober link protocol (docs/architecture.md, "The prober link"): JSON messages over the WebSocket between the
// edge's ProberHub and a prober. Both ends validate every message with these schemas.
import { z } from 'zod';

export const PROBER_PROTOCOL_VERSION = 1;
/** Most addresses one probe message carries (one SMTP session, several RCPTs). */
export const MAX_EMAILS_PER_PROBE = 100;

/** Most MX hosts one probe carries. */
export const MAX_MX_PER_PROBE = 20;
/** Most addresses of one MX host a probe carries. */
export const MAX_IPS_PER_MX = 16;

const MessageId = z.string().min(1).max(100);

export const MxTarget = z.object({
  host: z.string().min(1).max(253),
  preference: z.number().int().min(0).max(65535),
  ips: z.array(z.string()).max(MAX_IPS_PER_MX),
});
export type MxTarget = z.infer<typeof MxTarget>;

/** One SMTP reply: the basic code, the RFC 3463 enhanced code if any, and the text of all lines. */
export const SmtpReply = z.object({
  code: z.number().int().min(100).max(599),
  enhanced: z
    .string()
    .regex(/^[245]\.\d{1,3}\.\d{1,3}$/)
    .nullable(),
  text: z.string(),
});
export type SmtpReply = z.infer<typeof SmtpReply>;

// ── Evidence (docs/verdicts.md, "Evidence") ─────────────────────────────────────────────
// The evidence behind an answer that came from SMTP: where rcpt spoke from and to, and the
// dialogue, with every address but the result's own masked. The prober builds it
// (shared/src/verify/evidence.ts), the edge stores it with the result, and the API, the
// dashboard, the CSV export and the CLI show it.
/** Most UTF-8 bytes one address's evidence takes as JSON: what is stored, and counted, per address. */
export const MAX_EVIDENCE_BYTES = 4_096;
/** Most steps of a dialogue the evidence keeps. */
export const MAX_EVIDENCE_STEPS = 64;
/** Longest command or reply text kept (RFC 5321 §4.5.3.1.5: a reply line is at most 512 octets). */
export const MAX_EVIDENCE_TEXT = 512;
/** What stands for an address's local part that is not the customer's. */
export const MASKED_LOCAL_PART = '***';

export const EvidenceStep = z
  .object({
    atMs: z
      .number()
      .int()
      .min(0)
      .describe(
        'when the command was sent (or the connection opened, for the greeting), ms after `startedAt`',
      ),
    command: z
      .string()
      .max(MAX_EVIDENCE_TEXT)
      .nullable()
      .describe("what rcpt sent; null for the server's greeting (or a reply nobody asked for)"),
    reply: SmtpReply.extend({ text: z.string().max(MAX_EVIDENCE_TEXT) })
      .nullable()
      .describe('what the server answered (all lines of a multi-line reply); null when it never did'),
    tookMs: z.number().int().min(0).nullable().describe('ms from the command to its whole reply'),
  })
  .meta({ id: 'EvidenceStep' });
export type EvidenceStep = z.infer<typeof EvidenceStep>;

export const EvidenceTls = z
  .object({
    version: z.string().max(64).nullable().describe('e.g. TLSv1.3'),
    cipher: z.string().max(128).nullable().describe('e.g. TLS_AES_256_GCM_SHA384'),
    certificateVerified: z
      .boolean()
      .describe("whether the MX's certificate verified (MX certificates often do not; rcpt goes on)"),
  })
  .meta({ id: 'EvidenceTls' });
export type EvidenceTls = z.infer<typeof EvidenceTls>;

export const Evidence = z
  .object({
    mxHost: z.string().max(253).nullable().describe('the MX host rcpt spoke to'),
    mxIp: z.string().max(64).nullable().describe('its address'),
    egress: z
      .string()
      .max(128)
      .nullable()
      .describe(
        "the egress the session went out from, by an opaque label stable per egress (e.g. `eu-3fa91c`); never an address or a proxy. rcpt's address, proxies and HELO names are shown as this label in the dialogue's texts too",
      ),
    region: z.string().max(64).nullable().describe("the prober's region"),
    tls: EvidenceTls.nullable().describe(
      'null: the dialogue ran in plaintext (STARTTLS not offered or failed)',
    ),
    startedAt: z.iso.datetime().describe('when the connection to the MX began'),
    durationMs: z.number().int().min(0).describe('from connecting to the end of the session'),
    dialogue: z
      .array(EvidenceStep)
      .max(MAX_EVIDENCE_STEPS)
      .describe(
        "greeting, EHLO, STARTTLS, MAIL FROM and each RCPT with its reply, in order. Every address that is not this result's " +
          `own — the MAIL FROM, the made-up address of the catch-all test, other addresses asked in the same session — ` +
          `shows as \`${MASKED_LOCAL_PART}@domain\`, in commands and in reply texts alike`,
      ),
    ended: z
      .string()
      .max(MAX_EVIDENCE_TEXT)
      .nullable()
      .describe(
        'why the session ended before QUIT (a timeout, a hang-up, a refusal); null when it ended normally',
      ),
    omittedSteps: z
      .number()
      .int()
      .min(0)
      .describe(
        `steps left out to keep the evidence within ${MAX_EVIDENCE_BYTES} bytes (other addresses' RCPTs first); texts ` +
          `longer than ${MAX_EVIDENCE_TEXT} characters are cut and end in …`,
      ),
  })
  .meta({
    id: 'Evidence',
    description:
      "The SMTP session behind the answer (only when asked for with `evidence: true`, and only for answers that came from SMTP). For an answer from the tenant behind a security gateway (`meta.verifiedVia: tenant`), the tenant's session.",
  });
export type Evidence = z.infer<typeof Evidence>;

/** Where an SMTP conversation stopped before an address got its RCPT answer. */
export const SESSION_FAILURE_KINDS = [
  'connection_failed', // no TCP connection to any MX
  'timeout', // a step exceeded its deadline (connect, banner, command or session)
  'disconnected', // the server closed the connection mid-dialogue
  'invalid_response', // garbage, an oversized reply, or a code out of place
  'rejected', // a non-RCPT step (banner, EHLO, MAIL FROM) was refused: see `reply`
  'tls_failed', // STARTTLS required by configuration and not available or failed
  'smtputf8_unsupported', // an internationalised address and a server without SMTPUTF8
  'target_refused', // the guard refused the target (private address, unsafe input)
  'provider_unverifiable', // the provider registry says RCPT at this provider tells nothing
  'throttled', // the prober is backing off this host (421/4.7.x seen recently)
] as const;

export const SessionFailure = z.object({
  kind: z.enum(SESSION_FAILURE_KINDS),
  stage: z.enum(['connect', 'banner', 'ehlo', 'starttls', 'mail', 'rcpt', 'guard']),
  reply: SmtpReply.nullable(),
  message: z.string(),
});
export type SessionFailure = z.infer<typeof SessionFailure>;

/** The outcome for one address: its RCPT reply, or the failure that kept it from getting one. */
export const AddressOutcome = z.object({
  email: z.string(),
  reply: SmtpReply.nullable(),
  failure: SessionFailure.nullable(),
  /** The session that gave this outcome, masked for this address; only when the probe asked for it. */
  evidence: Evidence.optional(),
});
export type AddressOutcome = z.infer<typeof AddressOutcome>;

export const SessionFacts = z.object({
  mxHost: z.string().nullable(),
  mxIp: z.string().nullable(),
  tls: z.boolean(),
  tlsError: z.string().nullable(),
  smtputf8: z.boolean(),
  durationMs: z.number().int().min(0),
  transcript: z.array(z.string()).optional(),
});
export type SessionFacts = z.infer<typeof SessionFacts>;

/** What a probe found: per-address outcomes, the catch-all test, and the session's facts. */
export const ProbeReport = z.object({
  perAddress: z.array(AddressOutcome),
  /** The RCPT reply to a random address of the domain; null when not tested or not reached. */
  catchAllReply: SmtpReply.nullable(),
  session: SessionFacts,
  /**
   * Every egress of the prober refused the client at this domain's MX (a block-list listing,
   * docs/operations.md "Egress addresses"): another prober, from other addresses, may be
   * answered. Absent from probers that predate egresses.
   */
  egressesRefused: z.boolean().optional(),
});
export type ProbeReport = z.infer<typeof ProbeReport>;

export const ProbeRequest = z.object({
  emails: z.array(z.string().min(3).max(320)).min(1).max(MAX_EMAILS_PER_PROBE),
  domain: z.string().min(1).max(253),
  mx: z.array(MxTarget).min(1).max(MAX_MX_PER_PROBE),
  mailFrom: z.string().max(320),
  helo: z.string().min(1).max(253),
  timeoutMs: z.number().int().min(100).max(300_000),
  transcript: z.boolean().default(false),
  /** Each address's outcome carries its evidence (docs/verdicts.md, "Evidence"). */
  evidence: z.boolean().optional(),
});
export type ProbeRequest = z.infer<typeof ProbeRequest>;

// Edge → prober
export const ProbeMessage = ProbeRequest.extend({ type: z.literal('probe'), id: MessageId });
export const PingMessage = z.object({ type: z.literal('ping'), id: MessageId, ts: z.number() });
export type ProbeMessage = z.infer<typeof ProbeMessage>;

// Prober → edge
/** Most egresses one prober announces. */
export const MAX_EGRESSES = 256;
/** Most blocks (or budget rows) one egress-state message carries; the oldest are left out. */
export const MAX_EGRESS_BLOCKS = 500;

/** One egress: a local source address, the system's choice, or a SOCKS5 proxy (never its credentials). */
export const EgressInfo = z.object({
  id: z.string().min(1).max(300),
  kind: z.enum(['direct', 'socks5']),
  helo: z.string().max(253).nullable(),
  /** What customers see of it in evidence (`eu-3fa91c`); absent from probers that predate labels. */
  label: z.string().min(1).max(64).optional(),
});
export type EgressInfo = z.infer<typeof EgressInfo>;

export const HelloMessage = z.object({
  type: z.literal('hello'),
  id: MessageId,
  version: z.number().int(),
  region: z.string().min(1).max(64),
  capacity: z.number().int().min(1).max(10_000),
  /** Sessions the prober opens at once to one MX host: the hub never has more probes of one host out. */
  perMxConcurrency: z.number().int().min(1).max(10_000).optional(),
  /** Where its SMTP sessions go out from; absent from probers that predate egresses. */
  egresses: z.array(EgressInfo).max(MAX_EGRESSES).optional(),
});

/** A block of one egress at one MX host or provider, the reply that caused it masked. */
export const EgressBlockInfo = z.object({
  egress: z.string().min(1).max(300),
  scope: z.object({ kind: z.enum(['provider', 'mx_host']), name: z.string().min(1).max(253) }),
  since: z.number().int(),
  until: z.number().int(),
  reply: SmtpReply,
  level: z.number().int().min(1),
});
export type EgressBlockInfo = z.infer<typeof EgressBlockInfo>;

/** One egress's hour at one provider: recipients asked against its budget. */
export const EgressUseInfo = z.object({
  egress: z.string().min(1).max(300),
  provider: z.string().min(1).max(253),
  used: z.number().int().min(0),
  budget: z.number().int().min(0),
});

/** When an egress was first used: its warm-up runs from here (ms since the epoch). */
export const EgressWarmUpInfo = z.object({
  egress: z.string().min(1).max(300),
  since: z.number().int(),
});
export type EgressWarmUpInfo = z.infer<typeof EgressWarmUpInfo>;

/**
 * One egress's health check (docs/operations.md, "Egress addresses"): its public address, its
 * PTR name, forward-confirmed reverse DNS, whether its HELO name is that PTR name, its DNSBL
 * listings, and whether port 25 got through. `address` is null when the prober does not know it.
 */
export const EgressHealthInfo = z.object({
  egress: z.string().min(1).max(300),
  address: z.string().max(64).nullable(),
  ptr: z.string().max(253).nullable(),
  fcrdns: z.enum(['pass', 'fail', 'unknown']),
  heloMatches: z.boolean().nullable(),
  listings: z
    .array(
      z.object({
        zone: z.string().min(1).max(253),
        codes: z.array(z.string().max(64)).max(32),
        meaning: z.string().max(1_000),
      }),
    )
    .max(32),
  unchecked: z.array(z.object({ zone: z.string().min(1).max(253), why: z.string().max(500) })).max(32),
  port25: z.enum(['ok', 'blocked', 'unknown']),
  checkedAt: z.number().int(),
});
export type EgressHealthInfo = z.infer<typeof EgressHealthInfo>;

/**
 * The prober's egresses as they stand: sent on linking, whenever a block begins or ends and
 * whenever a health check's result changes,
 * so that the operator's view shows a block within seconds of the reply that caused it.
 */
export const EgressStateMessage = z.object({
  type: z.literal('egress_state'),
  id: MessageId,
  blocks: z.array(EgressBlockInfo).max(MAX_EGRESS_BLOCKS),
  uses: z.array(EgressUseInfo).max(MAX_EGRESS_BLOCKS),
  /** When each egress began warming up; absent from probers that predate the hub's memory. */
  warmUps: z.array(EgressWarmUpInfo).max(MAX_EGRESSES).optional(),
  /** Each egress's newest health check; absent from probers that predate the check. */
  health: z.array(EgressHealthInfo).max(MAX_EGRESSES).optional(),
  /** Sessions open now. */
  sessions: z.number().int().min(0),
});
export type EgressStateMessage = z.infer<typeof EgressStateMessage>;

/**
 * What the region's hub remembers of the egresses a prober named in its hello, sent right after
 * it (docs/operations.md, "Egress addresses"): the blocks still in force, when each egress began
 * warming up, and each (egress, provider) hour as last reported, with when. A prober that
 * restarted — or whose hub did — so neither asks again from a listed address nor starts a warmed
 * egress from zero. Probers that predate it ignore it.
 */
// Edge → prober, after the hello
export const EgressMemoryMessage = z.object({
  type: z.literal('egress_memory'),
  id: MessageId,
  blocks: z.array(EgressBlockInfo).max(MAX_EGRESS_BLOCKS),
  warmUps: z.array(EgressWarmUpInfo).max(MAX_EGRESSES),
  uses: z.array(EgressUseInfo.extend({ at: z.number().int() })).max(MAX_EGRESS_BLOCKS),
});
export type EgressMemoryMessage = z.infer<typeof EgressMemoryMessage>;

export const EdgeMessage = z.discriminatedUnion('type', [ProbeMessage, PingMessage, EgressMemoryMessage]);
export type EdgeMessage = z.infer<typeof EdgeMessage>;

export const ResultMessage = ProbeReport.extend({ type: z.literal('result'), id: MessageId });
export const ProbeErrorMessage = z.object({ type: z.literal('error'), id: MessageId, message: z.string() });
export const PongMessage = z.object({ type: z.literal('pong'), id: MessageId, ts: z.number() });
export const DrainMessage = z.object({ type: z.literal('drain'), id: MessageId });
export const ProberMessage = z.discriminatedUnion('type', [
  HelloMessage,
  ResultMessage,
  ProbeErrorMessage,
  PongMessage,
  DrainMessage,
  EgressStateMessage,
]);
export type ProberMessage = z.infer<typeof ProberMessage>;
export type ResultMessage = z.infer<typeof ResultMessage>;

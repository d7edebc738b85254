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
});
export type ProbeRequest = z.infer<typeof ProbeRequest>;

// Edge → prober
export const ProbeMessage = ProbeRequest.extend({ type: z.literal('probe'), id: MessageId });
export const PingMessage = z.object({ type: z.literal('ping'), id: MessageId, ts: z.number() });
export const EdgeMessage = z.discriminatedUnion('type', [ProbeMessage, PingMessage]);
export type EdgeMessage = z.infer<typeof EdgeMessage>;
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

/**
 * The prober's egresses as they stand: sent on linking and whenever a block begins or ends,
 * so that the operator's view shows a block within seconds of the reply that caused it.
 */
export const EgressStateMessage = z.object({
  type: z.literal('egress_state'),
  id: MessageId,
  blocks: z.array(EgressBlockInfo).max(MAX_EGRESS_BLOCKS),
  uses: z.array(EgressUseInfo).max(MAX_EGRESS_BLOCKS),
  /** Sessions open now. */
  sessions: z.number().int().min(0),
});
export type EgressStateMessage = z.infer<typeof EgressStateMessage>;
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

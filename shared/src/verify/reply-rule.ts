// The shape of a row of the SMTP reply table (smtp-reply.ts), its own module so that the table and
// the providers' rows it takes in (providers.ts) both use it without importing each other.
import type { SubStatus } from '../contract/api.ts';
import type { RetryPace } from '../contract/sub-statuses.ts';

/** The SMTP step a reply answered. */
export type ReplyStage = 'banner' | 'ehlo' | 'mail' | 'rcpt';

export type CodeMatch = number | readonly [min: number, max: number];

export interface ReplyRule {
  readonly id: string;
  readonly code?: CodeMatch;
  /** RFC 3463 `class.subject.detail`, any part may be `*`: `5.1.1`, `*.2.2`, `5.7.*`. */
  readonly enhanced?: string;
  /** Tested against the reply text with whitespace (and line breaks) collapsed to one space. */
  readonly text?: RegExp;
  readonly stage?: readonly ReplyStage[];
  readonly subStatus: SubStatus;
  /** The retry schedule when the reply knows better than its subStatus's row (throttling). */
  readonly retry?: RetryPace;
  /** For greylisting when the text names no delay. */
  readonly retryAfterSeconds?: number;
  /**
   * Whom a refusal is aimed at, when the row knows: `client` (the sending address: a block list,
   * the client host), `sender` (our MAIL FROM or its domain's authentication), or `rate` (how
   * much we send), or `allowlist` (the domain takes mail from its own gateways or senders only:
   * no egress of ours is on it). Unset: the client when the text names it (`NAMES_CLIENT`).
   */
  readonly blames?: 'client' | 'sender' | 'rate' | 'allowlist';
}

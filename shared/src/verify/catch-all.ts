// How long a domain's catch-all answer holds, and which answers are worth keeping: one rule for
// the prober's per-process memory and the edge's domain facts, so both agree on when a domain's
// setting is asked again (docs/architecture.md, "Domain facts").
//
// Whether a domain accepts every local part is a setting of its mail server that changes
// rarely; an hour covers a whole batch job and its follow-ups, and bounds how long a changed
// setting goes unnoticed.
import type { SmtpReply } from '../contract/prober.ts';
import { classifyReply } from './smtp-reply.ts';

export const CATCH_ALL_TTL_MS = 60 * 60_000;

/** What the reply to a made-up address says of the domain: true, it accepts every address; false, it refuses unknown mailboxes; null: it does not tell. */
export function catchAllReading(reply: SmtpReply): boolean | null {
  const classified = classifyReply(reply, 'rcpt');
  if (classified.accepted) return true;
  if (classified.rejectsMailbox) return false;
  return null;
}

/**
 * Whether the reply to a made-up address says something lasting about the domain: 2xx (it
 * accepts every address) or a 5xx mailbox code (it does not). A 4xx (greylisting, a full queue)
 * is about the moment, not the domain's setting (RFC 5321 §4.2.1), and a policy refusal
 * (5.7.x, a block list) is about the client, not the mailbox.
 */
export function isLastingCatchAllReply(reply: SmtpReply): boolean {
  return (reply.code < 400 || reply.code >= 500) && catchAllReading(reply) !== null;
}

// A bounce's diagnostic — the remote server's reply that the sending service passes on — read
// with the same reply table that reads rcpt's own probes (smtp-reply.ts), so that an outcome
// means what the reply means: "550 5.1.1 user unknown" is the mailbox, "550 5.7.1 blocked" a
// policy refusal of the sender, which says nothing about whether the mailbox exists
// (docs/verdicts.md, "Outcomes").
import type { BounceKind, SubStatus } from '../contract/api.ts';
import type { SmtpReply } from '../contract/prober.ts';
import { classifyReply, parseReplyLines } from './smtp-reply.ts';

export interface BounceReading {
  kind: BounceKind;
  /** The subStatus of the reply table's row; null when the diagnostic holds no SMTP reply. */
  subStatus: SubStatus | null;
}

// RFC 3464 §2.3.6: `Diagnostic-Code: diagnostic-type; diagnostic`, the type being `smtp` for a
// remote server's reply; sending services pass the field on with or without its type.
const DIAGNOSTIC_TYPE = /^\s*(?:smtp|x-[a-z0-9-]+)\s*;\s*/i;
const REPLY_START = /(?:^|\s)([245]\d\d)(?=[ -]|$)/;

/** The SMTP reply inside a diagnostic, or null when there is none. */
export function replyOfDiagnostic(diagnostic: string): SmtpReply | null {
  const text = diagnostic.replace(DIAGNOSTIC_TYPE, '').trim();
  const lines = text
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== '');
  const whole = parseReplyLines(lines);
  if (whole) return whole;
  // Services that flatten the reply into one line, or put words before it ("host said: 550 …").
  const start = REPLY_START.exec(text);
  if (!start) return null;
  return parseReplyLines([text.slice(start.index).trim().replace(/\s+/g, ' ')]);
}

/**
 * Reads a bounce's diagnostic as a reply to RCPT TO: `mailbox` when the table's row says the
 * mailbox is bad (unknown, disabled), `policy` when it is a refusal of the sender (block lists,
 * reputation, 5.7.x), `other` for anything else or no reply at all.
 */
export function readBounceDiagnostic(diagnostic: string | null | undefined): BounceReading {
  const reply = diagnostic ? replyOfDiagnostic(diagnostic) : null;
  if (!reply || reply.code < 400) return { kind: 'other', subStatus: null };
  const read = classifyReply(reply, 'rcpt');
  const kind: BounceKind = read.rejectsMailbox
    ? 'mailbox'
    : read.subStatus === 'antispam_blocked'
      ? 'policy'
      : 'other';
  return { kind, subStatus: read.subStatus };
}

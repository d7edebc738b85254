// The evidence behind an SMTP answer (docs/verdicts.md, "Evidence"): one recorded session, seen
// from one address. A session asks several addresses (a batch's, the catch-all test's made-up
// one) from rcpt's MAIL FROM, so each address's evidence shows its own RCPT in clear and every
// other address masked — in the commands, where rcpt knows exactly what it sent, and in the
// replies, where a server may echo any of them (Postfix: "<bob@example.com>: Recipient address
// rejected"; sendmail: "bob... User unknown"). It is bounded to MAX_EVIDENCE_BYTES: the steps
// that say least about this address go first.
import {
  type Evidence,
  type EvidenceStep,
  type EvidenceTls,
  MASKED_LOCAL_PART,
  MAX_EVIDENCE_BYTES,
  MAX_EVIDENCE_STEPS,
  MAX_EVIDENCE_TEXT,
  type SmtpReply,
} from '../contract/prober.ts';
import { replaceAddresses } from './smtp-reply.ts';

/** One SMTP session as the prober recorded it, every address in clear. */
export interface SessionDialogue {
  mxHost: string;
  mxIp: string;
  egress: string | null;
  region: string | null;
  tls: EvidenceTls | null;
  /** When the connection began, ms since the epoch. */
  startedAt: number;
  durationMs: number;
  steps: DialogueStep[];
  /** Why the session ended before QUIT; null when it did not. */
  ended: string | null;
}

export interface DialogueStep {
  /** ms after `startedAt` */
  atMs: number;
  command: string | null;
  /** The path of a MAIL FROM or RCPT TO command, exactly as sent. */
  path?: string;
  reply: SmtpReply | null;
  tookMs: number | null;
}

// How much a step says about the address whose evidence it is: the least telling go first when
// the evidence is over its bound.
const OTHER_RECIPIENT = 0;
const ROUTINE = 1;
const CONTEXT = 2;
const OWN = 3;
// The last resort of the bound: every text this short (at most 3 UTF-8 bytes a character, so
// the fields and the address's own step fit in MAX_EVIDENCE_BYTES whatever they hold).
const LAST_RESORT_TEXT = 100;

/**
 * The evidence of `dialogue` for the address asked as `own` (its RCPT TO path): every other
 * address masked, within MAX_EVIDENCE_BYTES. `catchAllPaths` are the made-up addresses of the
 * catch-all test: masked like the rest, but their steps are kept before other recipients'.
 */
export function evidenceFor(
  dialogue: SessionDialogue,
  own: string,
  catchAllPaths: ReadonlySet<string> = new Set(),
): Evidence {
  return sessionEvidence(dialogue, catchAllPaths)(own);
}

/**
 * `evidenceFor` for each address of one session: the session's texts are masked once with every
 * address in them masked, and only the steps that mention an address are masked again for it
 * (a session of 50 recipients is masked once, not 50 times).
 */
export function sessionEvidence(
  dialogue: SessionDialogue,
  catchAllPaths: ReadonlySet<string> = new Set(),
): (own: string) => Evidence {
  const paths = [...new Set(dialogue.steps.flatMap((step) => (step.path ? [step.path] : [])))];
  const maskedStep = (step: DialogueStep, masker: Masker, own: string | null): EvidenceStep => {
    // A server's echo of a bare local part is masked in the reply to that address's RCPT.
    const echoed =
      step.path !== undefined && (own === null || !isOwn(step.path, own)) ? localPartOf(step.path) : null;
    return {
      atMs: wholeMs(step.atMs),
      command: step.command === null ? null : masker(step.command),
      reply: step.reply ? { ...step.reply, text: masker(step.reply.text, echoed) } : null,
      tookMs: step.tookMs === null ? null : wholeMs(step.tookMs),
    };
  };
  const everyoneMasker = addressMasker(null, paths);
  const everyoneMasked = dialogue.steps.map((step) => maskedStep(step, everyoneMasker, null));
  const endedMasked = dialogue.ended === null ? null : everyoneMasker(dialogue.ended);
  return (own) => {
    const lower = own.toLowerCase();
    const mentions = (text: string | null | undefined) => text?.toLowerCase().includes(lower) === true;
    let ownMasker: Masker | null = null;
    const masker = () => {
      ownMasker ??= addressMasker(
        own,
        paths.filter((path) => !isOwn(path, own)),
      );
      return ownMasker;
    };
    const steps = dialogue.steps.map((step, index) =>
      (step.path !== undefined && isOwn(step.path, own)) ||
      mentions(step.command) ||
      mentions(step.reply?.text)
        ? maskedStep(step, masker(), own)
        : (everyoneMasked[index] as EvidenceStep),
    );
    const lastOwn = dialogue.steps.findLastIndex((step) => step.path !== undefined && isOwn(step.path, own));
    const lastMailBeforeOwn = dialogue.steps.findLastIndex(
      (step, index) => index < lastOwn && step.command?.startsWith('MAIL FROM:') === true,
    );
    const priorities = dialogue.steps.map((step, index): number => {
      if (index === 0 && step.command === null) return OWN; // the greeting
      if (step.path !== undefined && isOwn(step.path, own)) return OWN;
      if (index === lastMailBeforeOwn || (step.path !== undefined && catchAllPaths.has(step.path)))
        return CONTEXT;
      if (step.command?.startsWith('RCPT TO:')) return OTHER_RECIPIENT;
      if (/^(EHLO|HELO|STARTTLS)\b/.test(step.command ?? '')) return CONTEXT;
      return ROUTINE;
    });
    return boundEvidence(
      {
        mxHost: dialogue.mxHost,
        mxIp: dialogue.mxIp,
        egress: dialogue.egress,
        region: dialogue.region,
        tls: dialogue.tls,
        startedAt: new Date(dialogue.startedAt).toISOString(),
        durationMs: wholeMs(dialogue.durationMs),
        dialogue: steps,
        ended:
          dialogue.ended === null ? null : mentions(dialogue.ended) ? masker()(dialogue.ended) : endedMasked,
        omittedSteps: 0,
      },
      priorities,
      lastOwn,
    );
  };
}

/**
 * Evidence as the edge keeps it for the result of `own` (the address as verified): every address
 * that is not `own` masked again and the whole bounded again, whatever a prober sent — what is
 * stored and counted never exceeds MAX_EVIDENCE_BYTES and never shows another address.
 */
export function sealEvidence(evidence: Evidence, own: string): Evidence {
  const masker = addressMasker(own, []);
  const steps = evidence.dialogue.map(
    (step): EvidenceStep => ({
      ...step,
      command: step.command === null ? null : masker(step.command),
      reply: step.reply ? { ...step.reply, text: masker(step.reply.text) } : null,
    }),
  );
  const ownCommand = `RCPT TO:<${own}>`.toLowerCase();
  const priorities = steps.map((step, index) => {
    if ((index === 0 && step.command === null) || step.command?.toLowerCase() === ownCommand) return OWN;
    return step.command?.startsWith('RCPT TO:') ? OTHER_RECIPIENT : ROUTINE;
  });
  return boundEvidence(
    {
      ...evidence,
      dialogue: steps,
      ended: evidence.ended === null ? null : masker(evidence.ended),
    },
    priorities,
    priorities.lastIndexOf(OWN),
  );
}

/** The UTF-8 bytes of `evidence` as JSON: what storing it costs. */
export function evidenceBytes(evidence: Evidence): number {
  return utf8Length(JSON.stringify(evidence));
}

/** The reply to the address's own RCPT in `evidence` (its last, when it was asked twice), or null. */
export function ownReplyOf(evidence: Evidence, own: string): SmtpReply | null {
  const ownCommand = `RCPT TO:<${own}>`.toLowerCase();
  return evidence.dialogue.findLast((step) => step.command?.toLowerCase() === ownCommand)?.reply ?? null;
}

/** A reply on one line, `550 5.1.1 text` (a multi-line reply's lines joined by spaces). */
export function replyLine(reply: SmtpReply): string {
  return [reply.code, reply.enhanced, reply.text.replace(/\s*\n\s*/g, ' ')].filter(Boolean).join(' ');
}

/** `address` with its local part masked; the domain stays (it is the verified address's own, or rcpt's). */
export function maskAddress(address: string): string {
  const at = address.lastIndexOf('@');
  return at < 0 ? MASKED_LOCAL_PART : `${MASKED_LOCAL_PART}@${address.slice(at + 1)}`;
}

/**
 * A function masking every address in a text but `own`: first the addresses known to have been
 * sent (`foreign`, matched exactly but for case, however unusual their form), then anything that
 * reads as an address, then, when given, a bare local part the server echoed.
 */
type Masker = (text: string, echoed?: string | null) => string;

function addressMasker(own: string | null, foreign: readonly string[]): Masker {
  const known = [...foreign]
    .filter((address) => address.length > 0)
    .sort((a, b) => b.length - a.length)
    .map((address) => ({ pattern: new RegExp(escapeRegExp(address), 'giu'), masked: maskAddress(address) }));
  return (text, echoed = null) => {
    let masked = printable(text);
    for (const { pattern, masked: replacement } of known) masked = masked.replace(pattern, () => replacement);
    masked = replaceAddresses(masked, (address) =>
      own !== null && isOwn(address.replace(/\.+$/, ''), own) ? address : maskAddress(address),
    );
    if (echoed) {
      // Only as a whole word: delimiters are what ends an address in a reply.
      const word = new RegExp(
        `(?<![^\\s<>()[\\]"',;:])${escapeRegExp(echoed)}(?![^\\s<>()[\\]"',;:.])`,
        'giu',
      );
      masked = masked.replace(word, MASKED_LOCAL_PART);
    }
    return clip(masked, MAX_EVIDENCE_TEXT);
  };
}

/**
 * `evidence` within MAX_EVIDENCE_BYTES and MAX_EVIDENCE_STEPS: steps go, least telling first and
 * farthest from the address's own step (`anchor`) first within a level; then the texts are cut
 * short; at last only the address's own steps stay.
 */
function boundEvidence(evidence: Evidence, priorities: readonly number[], anchor: number): Evidence {
  const entries = evidence.dialogue.map((step, index) => ({
    step,
    index,
    priority: priorities[index] ?? ROUTINE,
    bytes: utf8Length(JSON.stringify(step)) + 1,
  }));
  let omitted = evidence.omittedSteps;
  const shell = utf8Length(JSON.stringify({ ...evidence, dialogue: [], omittedSteps: 99_999 }));
  let total = shell + entries.reduce((sum, entry) => sum + entry.bytes, 0);
  const fits = () => total <= MAX_EVIDENCE_BYTES && entries.length <= MAX_EVIDENCE_STEPS;
  const center = anchor >= 0 ? anchor : 0;
  for (const level of [OTHER_RECIPIENT, ROUTINE, CONTEXT]) {
    while (!fits()) {
      let farthest = -1;
      for (const [position, entry] of entries.entries()) {
        if (entry.priority !== level) continue;
        const best = entries[farthest];
        if (!best || Math.abs(entry.index - center) > Math.abs(best.index - center)) farthest = position;
      }
      if (farthest < 0) break;
      const [removed] = entries.splice(farthest, 1);
      total -= removed?.bytes ?? 0;
      omitted++;
    }
  }
  const kept = { ...evidence, dialogue: entries.map((entry) => entry.step), omittedSteps: omitted };
  if (fits()) return kept;
  // Only the greeting and the address's own steps are left, and their texts are long.
  const short = shortened(kept);
  if (evidenceBytes(short) <= MAX_EVIDENCE_BYTES) return short;
  const ownOnly = short.dialogue.filter((step) => step.command !== null);
  return {
    ...short,
    dialogue: ownOnly,
    omittedSteps: short.omittedSteps + short.dialogue.length - ownOnly.length,
  };
}

/** Every text of `evidence` cut to LAST_RESORT_TEXT characters, the steps to MAX_EVIDENCE_STEPS. */
function shortened(evidence: Evidence): Evidence {
  const cut = (text: string | null) => (text === null ? null : clip(text, LAST_RESORT_TEXT));
  const steps = evidence.dialogue.slice(-MAX_EVIDENCE_STEPS);
  return {
    ...evidence,
    mxHost: cut(evidence.mxHost),
    mxIp: cut(evidence.mxIp),
    egress: cut(evidence.egress),
    region: cut(evidence.region),
    tls: evidence.tls
      ? { ...evidence.tls, version: cut(evidence.tls.version), cipher: cut(evidence.tls.cipher) }
      : null,
    ended: cut(evidence.ended),
    dialogue: steps.map((step) => ({
      ...step,
      command: cut(step.command),
      reply: step.reply ? { ...step.reply, text: clip(step.reply.text, LAST_RESORT_TEXT) } : null,
    })),
    omittedSteps: evidence.omittedSteps + evidence.dialogue.length - steps.length,
  };
}

// RFC 5321 §2.4: the domain is case-insensitive; a server that echoes the local part in another
// case still names this address, and showing it names nothing else.
function isOwn(address: string, own: string): boolean {
  return address.toLowerCase() === own.toLowerCase();
}

function localPartOf(address: string): string | null {
  const at = address.lastIndexOf('@');
  const localPart = (at < 0 ? address : address.slice(0, at)).replace(/^"(.*)"$/, '$1');
  return localPart.length > 0 ? localPart : null;
}

/** Control characters (but the line breaks of a multi-line reply) shown as U+FFFD. */
function printable(text: string): string {
  return text.replace(/[^\P{Cc}\n]/gu, '\uFFFD');
}

function clip(text: string, length: number): string {
  return text.length > length ? `${text.slice(0, length - 1)}…` : text;
}

function wholeMs(value: number): number {
  return Math.max(0, Math.round(value));
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

const encoder = new TextEncoder();
function utf8Length(text: string): number {
  return encoder.encode(text).length;
}

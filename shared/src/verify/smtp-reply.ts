// SMTP replies: parsing (RFC 5321 §4.2, multi-line) and enhanced status codes (RFC 3463).
import { SUB_STATUSES, type SubStatus } from '../contract/api.ts';
import type { SessionFailure, SmtpReply } from '../contract/prober.ts';
import { type OutcomePolicy, policyOf } from '../contract/sub-statuses.ts';
import { providerReplyRules } from './providers.ts';
import type { CodeMatch, ReplyRule, ReplyStage } from './reply-rule.ts';

const REPLY_LINE = /^([2-5]\d\d)([ -])(.*)$/s;
const ENHANCED_CODE = /^([245])\.(\d{1,3})\.(\d{1,3})(?=\s|$)/;

/** Whether `line` is the last line of a reply ("250 ok" rather than "250-…"). */
export function isFinalReplyLine(line: string): boolean {
  return line.length >= 3 && line[3] !== '-';
}

/**
 * Parses the lines of one reply (without CRLF) into code, enhanced code and text.
 * Returns null when the lines are not a well-formed reply: no lines, a line without a
 * 3-digit code, or lines whose codes disagree (RFC 5321 §4.2.1 requires the same code).
 */
export function parseReplyLines(lines: readonly string[]): SmtpReply | null {
  if (lines.length === 0) return null;
  let code: number | null = null;
  const texts: string[] = [];
  for (const line of lines) {
    // RFC 5321 §4.2: a bare code with no text is allowed ("250").
    const match = REPLY_LINE.exec(line.length === 3 ? `${line} ` : line);
    if (!match) return null;
    const lineCode = Number(match[1]);
    if (code !== null && lineCode !== code) return null;
    code = lineCode;
    texts.push(match[3] ?? '');
  }
  if (code === null) return null;
  // RFC 3463 / RFC 2034: the enhanced code leads the text of each line; the first one counts,
  // and its class must agree with the basic code's.
  const enhancedMatch = ENHANCED_CODE.exec(texts[0] ?? '');
  const enhanced = enhancedMatch && enhancedMatch[1] === String(code)[0] ? enhancedMatch[0] : null;
  const text = texts
    .map((line) => (enhanced && line.startsWith(enhanced) ? line.slice(enhanced.length).trimStart() : line))
    .join('\n')
    .trim();
  return { code, enhanced, text };
}

// ---------------------------------------------------------------------------------------------
// Classification: what a reply means for the address being verified.
//
// The table below is data, read top to bottom, first match wins. Its order is the policy:
//   1. 2xx accepts; codes that have no business at these stages are protocol errors.
//   2. Provider replies whose meaning is documented and not a mailbox verdict (providers.ts).
//   3. Policy vocabulary, on any failure code and at any stage. It precedes every mailbox row
//      so that a reply naming a block list is `antispam_blocked` even when its code is 550 or
//      5.1.1 (docs/verdicts.md: a policy rejection is never undeliverable).
//   4. Refusals of the session, of relaying, of our own sender or client identity, and any
//      permanent 5.7.x (policy) code.
//   5. Greylisting and throttling (temporary; a batch asks again on the row's `retry` schedule).
//   6. Mailbox state, only at RCPT: full, disabled, unknown (with the providers' own mailbox
//      rows from providers.ts). Only these rows make an address undeliverable, and only with
//      a 5xx code.
//   7. RFC 3463 enhanced-code subjects, then RFC 5321 §4.2.1 basic code classes; the last row
//      matches everything, so classification is total.
// ---------------------------------------------------------------------------------------------

/** What one reply means for the address being verified. */
export interface ReplyClass {
  subStatus: SubStatus;
  /** The step succeeded (2xx). */
  accepted: boolean;
  /** The server said the mailbox is bad (unknown, disabled, malformed): the address is undeliverable. */
  rejectsMailbox: boolean;
  /** What a batch does with this answer: the subStatus's row, refined by the reply. */
  policy: OutcomePolicy;
  /** Id of the table row that matched, for transcripts and tests. */
  rule: string;
  /**
   * What the reply asks of rcpt's client, apart from the verdict: `slow_down` (leave the host
   * alone for a while: a 421, a rate limit, a temporary policy refusal) or `another_egress` (the
   * refusal names the client — its address on a block list, its host or IP refused — so another
   * of the prober's sending addresses may be answered); null when it asks nothing.
   */
  clientAction: ClientAction | null;
}

/** What a reply asks of the client that sent the command (see `ReplyClass.clientAction`). */
export type ClientAction = 'slow_down' | 'another_egress';

// A refusal before MAIL (connect, STARTTLS, the guard) is read like one at the nearest SMTP
// step, so that mailbox rows, which are RCPT-only, never apply to it.
const REPLY_STAGES: Record<SessionFailure['stage'], ReplyStage> = {
  connect: 'banner',
  banner: 'banner',
  guard: 'banner',
  ehlo: 'ehlo',
  starttls: 'ehlo',
  mail: 'mail',
  rcpt: 'rcpt',
};

/** The step whose rows read a reply that ended a session at `stage`. */
export function replyStageOf(stage: SessionFailure['stage']): ReplyStage {
  return REPLY_STAGES[stage];
}

const FAILURE: CodeMatch = [400, 599];
const TEMPORARY: CodeMatch = [400, 499];
const PERMANENT: CodeMatch = [500, 599];
const RCPT: readonly ReplyStage[] = ['rcpt'];
const SESSION: readonly ReplyStage[] = ['banner', 'ehlo', 'mail'];

/**
 * Words that mark a reply as a policy decision about the client (block lists, reputation,
 * spam filtering, sender authentication), not about the mailbox. Matched case-insensitively
 * at the start of a word, so `blacklist` also matches `blacklisted`.
 */
const POLICY_VOCABULARY = {
  'policy-spamhaus': ['spamhaus', 'sbl', 'xbl', 'pbl'],
  'policy-spamcop': ['spamcop'],
  'policy-sorbs': ['sorbs'],
  'policy-barracuda': ['barracudacentral', 'barracuda reputation'],
  'policy-dnsbl': ['dnsbl', 'rbl', 'cbl', 'uceprotect', 'listed at', 'listed in', 'listed on', 'listed by'],
  'policy-blacklist': ['blacklist', 'black list', 'blocklist', 'block list', 'denylist', 'deny list'],
  'policy-blocked': ['blocked', 'banned'],
  'policy-reputation': ['reputation', 'complaint'],
  'policy-spam': ['spam', 'antispam', 'anti-spam', 'unsolicited', 'junk'],
  'policy-authentication': ['dmarc', 'spf', 'dkim', 'spoof', 'unauthenticated'],
  'policy-statement': [
    'policy',
    'policies',
    'administrative prohibition',
    'abuse',
    'dynamic ip',
    'residential',
  ],
} as const;

export const POLICY_WORDS: readonly string[] = Object.values(POLICY_VOCABULARY).flat();

function wordsPattern(words: readonly string[]): RegExp {
  const alternatives = words.map((word) => word.replace(/[.*+?^${}()|[\]\\-]/g, '\\$&'));
  return new RegExp(`(?<![a-z0-9])(?:${alternatives.join('|')})`, 'i');
}

// Block lists list client addresses (Spamhaus ZEN, SpamCop, SORBS, Barracuda, UCEPROTECT: DNS
// lists keyed by the connecting IP, RFC 5782); authentication words are about our sender.
const POLICY_BLAMES: Partial<Record<keyof typeof POLICY_VOCABULARY, ReplyRule['blames']>> = {
  'policy-spamhaus': 'client',
  'policy-spamcop': 'client',
  'policy-sorbs': 'client',
  'policy-barracuda': 'client',
  'policy-dnsbl': 'client',
  'policy-blacklist': 'client',
  'policy-authentication': 'sender',
};

const POLICY_RULES: readonly ReplyRule[] = Object.entries(POLICY_VOCABULARY).map(([id, words]) => {
  const blames = POLICY_BLAMES[id as keyof typeof POLICY_VOCABULARY];
  return {
    id,
    code: FAILURE,
    text: wordsPattern(words),
    subStatus: 'antispam_blocked',
    ...(blames ? { blames } : {}),
  };
});

/**
 * A refusal whose row does not say whom it blames names the client when its text speaks of the
 * client host or IP, or quotes an IP address (Microsoft: "banned sending IP [198.51.100.7]";
 * Gmail: "unsolicited mail originating from your IP address"; Postfix: "Client host
 * [192.0.2.7] blocked using …").
 */
const NAMES_CLIENT =
  /\b(client|your|sending|source|connecting) (host|ip|server)\b|\bip( address)?\b|(^|[^\d.])\d{1,3}(\.\d{1,3}){3}(?![\d.]*\d)|\[[0-9a-f]*:[0-9a-f:.]+\]/i;

// "User unknown" as servers phrase it: Postfix, sendmail, Exim ("Unrouteable address"), qmail
// ("no mailbox here by that name"), Exchange (RecipNotFound), Gmail, Yahoo ("doesn't have a
// yahoo.com account"), Outlook.com and GMX ("mailbox unavailable"), Mimecast ("Invalid Recipient"),
// Web.de ("Unknown local part"), AT&T ("Addressee unknown"), Comcast ("Not our Customer").
// "Does not exist" counts only with a mailbox word before it: "<domain> does not exist" is
// about a domain, often our sender's.
const USER_UNKNOWN =
  /user unknown|unknown user|unknown recipient|recipient unknown|no such (user|mailbox|recipient|address|account)|(user|mailbox|account|address|recipient)( \S+){0,6} (does not|doesn't|did not|not) exist|doesn't have an? \S+ account|no mailbox here|mailbox (not found|unavailable|does not exist|is unknown)|(recipient|user)( address)? not found|recip(ient)?notfound|invalid (recipient|mailbox|user|address)|not a valid (mailbox|recipient|user|address)|unrouteable address|address(ee)? unknown|unknown (address|mailbox|local part)|not our (user|customer)/i;

const MAILBOX_DISABLED =
  /(account|mailbox|user|address)\b[^.;]{0,40}\b(disabled|deactivated|suspended|inactive|no longer (active|in use|available))|(disabled|deactivated|suspended|inactive) (account|mailbox|user)/i;

const MAILBOX_FULL =
  /mailbox (is )?full|inbox is full|over ?quota|quota (exceeded|full)|exceeded (its |the |their )?(storage|quota|mailbox size)|out of storage space|exhausted (the |its )?(allowed )?storage|too many messages on the server|mailbox size limit/i;

// The recipient's own account state. The words overlap the policy vocabulary ("The recipient
// account is blocked", Orange; "Mailbox is frozen", i.ua; "User account disabled"), so the
// row runs before the policy rows, and only for replies that name no sender, client, IP or
// spam, which would make the state ours.
const RECIPIENT_STATE =
  /^(?!.*\b(sender|client|your|sending|ip|spam|host)\b).*(\b(recipient|mailbox|account|user|addressee)\b('s)?( (account|address|mailbox))?( \S+){0,2}? (temporar\w* )?(disabled|deactivated|suspended|frozen|archived|locked|closed|banned|blocked)\b|\b(disabled|deactivated|suspended|frozen|archived|banned|blocked) (recipient|mailbox|account|user)\b)/i;

// Sending rates and volumes, whatever the code: a refusal of our traffic, never a mailbox
// verdict, even when a server sends it with a mailbox code ("550 5.1.1 … has sent to too many
// recipients this hour"; Gmail's "550 5.2.1 … receiving mail at a rate that prevents
// additional messages").
const RATE_WORDS =
  /too many recipients|rate.?limit|receiving mail (at a rate|too quickly)|relay quota|has sent to too many|throttl|sending (rate|quota)/i;

function withoutWords(words: readonly string[]): RegExp {
  return new RegExp(`^(?!.*${wordsPattern(words).source})`, 'i');
}

/** The classification table. Order matters: see the comment at the top of this section. */
export const REPLY_RULES: readonly ReplyRule[] = [
  // 1. Success and codes out of place.
  { id: 'accepted', code: [200, 299], subStatus: 'accepted_email' },
  // RFC 5321 §4.2.1: 1yz is unused and 3yz only follows DATA or AUTH; neither answers these steps.
  { id: 'code-out-of-place', code: [100, 399], subStatus: 'invalid_smtp_response' },

  // 2. Documented provider replies that are not mailbox verdicts (the provider registry's rows).
  ...providerReplyRules('provider'),

  // The recipient's account state in policy words, and rates under mailbox codes: both must
  // win over the policy rows (3) and the mailbox codes (6) respectively.
  {
    id: 'recipient-account-state',
    code: PERMANENT,
    text: RECIPIENT_STATE,
    stage: RCPT,
    subStatus: 'mailbox_disabled',
  },
  // IANA SMTP enhanced status codes: X.7.13 "User Account Disabled" (a 5.7 code about the
  // mailbox, unless the text speaks of policy).
  {
    id: 'recipient-disabled-5.7.13',
    code: PERMANENT,
    enhanced: '5.7.13',
    text: withoutWords(POLICY_WORDS),
    stage: RCPT,
    subStatus: 'mailbox_disabled',
  },
  // A gateway's list of recipients it found invalid (Proofpoint-style SMTP discovery, 5.7.1).
  {
    id: 'recipient-marked-invalid',
    code: PERMANENT,
    text: /address is marked as invalid/i,
    stage: RCPT,
    subStatus: 'mailbox_not_found',
  },
  { id: 'rate-refused', code: PERMANENT, text: RATE_WORDS, subStatus: 'antispam_blocked', blames: 'rate' },

  // 3. Policy vocabulary: block lists, reputation, spam filters, sender authentication.
  ...POLICY_RULES,

  // 4. Refusals that say nothing about the mailbox.
  // RFC 5321 §3.1: a 554 greeting ("No SMTP service here") refuses the client outright.
  {
    id: 'banner-refused',
    code: PERMANENT,
    stage: ['banner'],
    subStatus: 'antispam_blocked',
    blames: 'client',
  },
  // Relay denial: this host will not take mail for the domain from us — it is no (longer a)
  // working MX for it, or it takes mail only from the domain's gateway (Microsoft 365 answers
  // "Relay Access Denied" to clients that bypass the tenant's gateway). Nothing about the
  // mailbox: `provider_unverifiable`, which a batch refunds and does not ask again.
  {
    id: 'relay-access-denied',
    code: FAILURE,
    text: /relay access denied/i,
    subStatus: 'provider_unverifiable',
  },
  {
    id: 'relaying-denied',
    code: FAILURE,
    text: /relaying denied|unable to relay/i,
    subStatus: 'provider_unverifiable',
  },
  {
    id: 'relay-not-permitted',
    code: FAILURE,
    text: /relay not permitted/i,
    subStatus: 'provider_unverifiable',
  },
  // qmail: "553 sorry, that domain isn't in my list of allowed rcpthosts (#5.7.1)".
  { id: 'qmail-rcpthosts', code: FAILURE, text: /allowed rcpthosts/i, subStatus: 'provider_unverifiable' },
  {
    id: 'relay-refused',
    code: FAILURE,
    text: /\brelay(ing)?\b.{0,30}\b(not (allowed|permitted)|denied|prohibited|refused)|\bwe do not relay\b/i,
    subStatus: 'provider_unverifiable',
  },
  // Postfix's smtpd_delay_reject reports sender, client and HELO restrictions at RCPT time,
  // after our RCPT; they refuse the prober, not the recipient.
  {
    id: 'sender-rejected',
    code: FAILURE,
    text: /sender address rejected|sender rejected|unroutable sender|provide a valid from|sender verify failed|sender (address )?verification failed|verification failed for/i,
    subStatus: 'antispam_blocked',
    blames: 'sender',
  },
  {
    id: 'client-rejected',
    code: FAILURE,
    text: /client host rejected|helo command rejected|cannot find your (reverse )?hostname|reverse dns|\brdns\b|\bptr\b|ip name lookup failed/i,
    subStatus: 'antispam_blocked',
    blames: 'client',
  },
  // Gateways that take mail only from known networks, or from the domain's own senders:
  // Google ("IP not in whitelist for RCPT domain"), Mimecast ("Host network not allowed"),
  // Yahoo ("INVALID IP FOR SENDING MAIL OF DOMAIN"), and client-IP mismatches. No egress of
  // ours is on such a list, so asking from another one is no use.
  {
    id: 'client-not-allowlisted',
    code: FAILURE,
    text: /ip not in whitelist|not (allowed|authorized|permitted) to send|network not allowed|mismatch(es)? client ip|client ip mismatch|invalid ip for sending|tls required/i,
    subStatus: 'antispam_blocked',
    blames: 'allowlist',
  },
  // Refusals of this client: Microsoft ("traffic not accepted from this IP"; "messages from …
  // weren't sent"), Apple ("not accepting connections"), Orange ("Service refused"), "IP not
  // allowed", and unverified sending IPs.
  {
    id: 'client-refused',
    code: FAILURE,
    text: /traffic not accepted from this ip|not accepting connections|no smtp service|service refused|unverif\w* sending ips?|messages from \S+ weren't sent|\bip (address )?not allowed\b/i,
    subStatus: 'antispam_blocked',
    blames: 'client',
  },
  // RFC 3463 X.1.7 / X.1.8: our sender's address or domain was refused.
  {
    id: 'sender-address-enhanced',
    code: FAILURE,
    enhanced: '*.1.7',
    subStatus: 'antispam_blocked',
    blames: 'sender',
  },
  {
    id: 'sender-domain-enhanced',
    code: FAILURE,
    enhanced: '*.1.8',
    subStatus: 'antispam_blocked',
    blames: 'sender',
  },
  // RFC 3463 X.7 "security or policy status": a permanent one is a policy rejection whatever
  // the text says, so it must precede the mailbox rows (after relay, which is not a block).
  { id: 'enhanced-5.7', code: PERMANENT, enhanced: '5.7.*', subStatus: 'antispam_blocked' },

  // 5. Greylisting (RFC 6647) and throttling.
  // Postgrey and most greylisters say so ("Greylisted, see http://postgrey.schweikert.ch/…").
  { id: 'greylisted-text', code: TEMPORARY, text: /gr[ae]y[- ]?list/i, subStatus: 'greylisted' },
  // Postgrey's code is 450 4.2.0; others answer 451 4.2.0 without the word.
  { id: 'greylisted-4.2.0', code: [450, 451], enhanced: '4.2.0', subStatus: 'greylisted' },
  // RFC 5321 §3.8: 421 closes the channel; servers send it to clients that connect too often.
  {
    id: 'throttled-connections',
    code: 421,
    text: /too many (concurrent |simultaneous )?(smtp )?connections|connection (rate|limit)/i,
    subStatus: 'mail_server_temporary_error',
    retry: 'throttle',
  },
  { id: 'throttled-421', code: 421, subStatus: 'mail_server_temporary_error', retry: 'throttle' },
  {
    id: 'throttled-rate',
    code: TEMPORARY,
    text: /rate.?limit|throttl|too many (messages|mails|requests|recipients|commands|rcpts?|probes|connections)|slow down/i,
    subStatus: 'mail_server_temporary_error',
    retry: 'throttle',
  },
  // "451 4.7.1 Please try again later" with no word of a rate: how Exim's greylistd and many
  // greylisters defer a new triplet. After the rate rows, so "try again later, too many …"
  // reads as throttling.
  {
    id: 'greylisted-4.7.1-try-later',
    code: [450, 451],
    enhanced: '4.7.1',
    text: /try (again )?later|come back later|retry later|try again in/i,
    subStatus: 'greylisted',
  },

  // 6. Mailbox state, answered to our RCPT.
  { id: 'mailbox-full-enhanced', code: FAILURE, enhanced: '*.2.2', stage: RCPT, subStatus: 'mailbox_full' },
  { id: 'mailbox-full-text', code: FAILURE, text: MAILBOX_FULL, stage: RCPT, subStatus: 'mailbox_full' },
  // RFC 3463 X.2.1: "Mailbox disabled, not accepting messages".
  {
    id: 'mailbox-disabled-enhanced',
    code: PERMANENT,
    enhanced: '5.2.1',
    stage: RCPT,
    subStatus: 'mailbox_disabled',
  },
  {
    id: 'mailbox-disabled-text',
    code: [550, 559],
    text: MAILBOX_DISABLED,
    stage: RCPT,
    subStatus: 'mailbox_disabled',
  },
  // A provider's own wording or code for a mailbox state (the provider registry's rows).
  ...providerReplyRules('mailbox'),
  // RFC 3463 X.1.1 "Bad destination mailbox address".
  {
    id: 'mailbox-unknown-5.1.1',
    code: PERMANENT,
    enhanced: '5.1.1',
    stage: RCPT,
    subStatus: 'mailbox_not_found',
  },
  // RFC 3463 X.1.0 "Other address status": servers use it for unknown recipients, and for
  // refused senders; only with user-unknown words is it about the mailbox.
  {
    id: 'mailbox-unknown-5.1.0',
    code: PERMANENT,
    enhanced: '5.1.0',
    text: USER_UNKNOWN,
    stage: RCPT,
    subStatus: 'mailbox_not_found',
  },
  // RFC 3463 X.1.6 "Destination mailbox has moved, No forwarding address".
  {
    id: 'mailbox-moved-5.1.6',
    code: PERMANENT,
    enhanced: '5.1.6',
    stage: RCPT,
    subStatus: 'mailbox_not_found',
  },
  // RFC 3463 X.1.3 "Bad destination mailbox address syntax": the server will not take it.
  {
    id: 'mailbox-syntax-5.1.3',
    code: PERMANENT,
    enhanced: '5.1.3',
    stage: RCPT,
    subStatus: 'invalid_syntax',
  },
  {
    id: 'mailbox-unknown-text',
    code: [550, 559],
    text: USER_UNKNOWN,
    stage: RCPT,
    subStatus: 'mailbox_not_found',
  },
  // RFC 3463 X.1.2 "Bad destination system address": this host does not take the domain.
  { id: 'domain-not-here-5.1.2', code: PERMANENT, enhanced: '5.1.2', subStatus: 'provider_unverifiable' },

  // RFC 5321 §4.2.2: 500/502/503/504 mean the server did not understand or expect the command;
  // 501 at RCPT is about the address and falls through to the rows below.
  { id: 'command-not-understood', code: [500, 500], subStatus: 'invalid_smtp_response' },
  { id: 'command-out-of-sequence', code: [502, 504], subStatus: 'invalid_smtp_response' },
  { id: 'command-syntax', code: 501, stage: SESSION, subStatus: 'invalid_smtp_response' },

  // 7. RFC 3463 subjects when nothing more specific matched.
  { id: 'enhanced-4.1', code: TEMPORARY, enhanced: '4.1.*', subStatus: 'mail_server_temporary_error' },
  { id: 'enhanced-4.2', code: TEMPORARY, enhanced: '4.2.*', subStatus: 'mail_server_temporary_error' },
  { id: 'enhanced-4.3', code: TEMPORARY, enhanced: '4.3.*', subStatus: 'mail_server_temporary_error' },
  { id: 'enhanced-4.4', code: TEMPORARY, enhanced: '4.4.*', subStatus: 'mail_server_temporary_error' },
  { id: 'enhanced-4.5', code: TEMPORARY, enhanced: '4.5.*', subStatus: 'mail_server_temporary_error' },
  // A temporary X.7 ("security or policy status") is how Gmail and Microsoft throttle.
  {
    id: 'enhanced-4.7',
    code: TEMPORARY,
    enhanced: '4.7.*',
    subStatus: 'mail_server_temporary_error',
    retry: 'throttle',
  },
  // X.3 mail system and X.4 network/routing: the server cannot route onward; the mailbox is
  // neither confirmed nor denied.
  { id: 'enhanced-5.3', code: PERMANENT, enhanced: '5.3.*', subStatus: 'provider_unverifiable' },
  { id: 'enhanced-5.4', code: PERMANENT, enhanced: '5.4.*', subStatus: 'provider_unverifiable' },
  { id: 'enhanced-5.5', code: PERMANENT, enhanced: '5.5.*', subStatus: 'invalid_smtp_response' },

  // A refusal in general words after every mailbox row had its chance: our traffic was refused
  // ("Mail rejected", Orange; "Access denied").
  {
    id: 'refused-generic',
    code: PERMANENT,
    text: /\b(mail|message) (rejete|rejected|refused)\b|access denied/i,
    subStatus: 'antispam_blocked',
  },

  // RFC 5321 §4.2.1 basic code classes. 552 ("exceeded storage allocation") is not read as a
  // full mailbox without the words: servers send it at RCPT for message size and for too many
  // recipients as well.
  { id: 'code-4xx', code: TEMPORARY, subStatus: 'mail_server_temporary_error' },
  // A permanent refusal before RCPT: the server will not talk to us; the mailbox is untouched.
  { id: 'code-5xx-session', code: PERMANENT, stage: SESSION, subStatus: 'antispam_blocked' },
  // A permanent RCPT refusal that gives no mailbox reason: only mailbox codes and texts make an
  // address undeliverable (docs/verdicts.md), so this stays unknown.
  { id: 'code-5xx-rcpt', code: PERMANENT, stage: RCPT, subStatus: 'provider_unverifiable' },
  { id: 'unclassifiable', subStatus: 'invalid_smtp_response' },
];

/** Postgrey's default delay; most greylisters accept a retry after a few minutes (RFC 6647 §2.1). */
const DEFAULT_GREYLIST_SECONDS = 300;
const MAX_RETRY_AFTER_SECONDS = 86_400;
const RETRY_DELAY = /\b(?:in|after|for|wait)\s+(\d{1,6})\s*(seconds?|secs?|s|minutes?|mins?|m)\b/i;
// milter-greylist's "please come back in 00:04:59" (greylist.conf(5): %R is the time left).
const RETRY_CLOCK = /\b(?:in|after|for|wait)\s+(\d{1,2}):([0-5]\d):([0-5]\d)\b/i;
// qmail puts the enhanced code at the end: "550 sorry, no mailbox here by that name. (#5.1.1)";
// others lead with it: "550 #5.1.0 Address rejected.".
const TRAILING_ENHANCED = /#([245]\.\d{1,3}\.\d{1,3})\b/;

interface CompiledRule {
  rule: ReplyRule;
  enhanced: RegExp | null;
}

function compileEnhanced(pattern: string): RegExp {
  const parts = pattern.split('.').map((part) => (part === '*' ? '\\d{1,3}' : part));
  return new RegExp(`^${parts.join('\\.')}$`);
}

const COMPILED_RULES: readonly CompiledRule[] = REPLY_RULES.map((rule) => ({
  rule,
  enhanced: rule.enhanced ? compileEnhanced(rule.enhanced) : null,
}));

function codeMatches(match: CodeMatch | undefined, code: number): boolean {
  if (match === undefined) return true;
  if (typeof match === 'number') return code === match;
  return code >= match[0] && code <= match[1];
}

function enhancedCodeOf(reply: SmtpReply): string | null {
  if (reply.enhanced) return reply.enhanced;
  const trailing = TRAILING_ENHANCED.exec(reply.text)?.[1];
  return trailing && trailing[0] === String(reply.code)[0] ? trailing : null;
}

function statedDelaySeconds(text: string): number | undefined {
  const clock = RETRY_CLOCK.exec(text);
  if (clock) {
    const [hours, minutes, seconds] = clock.slice(1).map(Number) as [number, number, number];
    return Math.min(Math.max(1, hours * 3600 + minutes * 60 + seconds), MAX_RETRY_AFTER_SECONDS);
  }
  const match = RETRY_DELAY.exec(text);
  if (!match) return undefined;
  const amount = Number(match[1]);
  const seconds = (match[2] ?? '').toLowerCase().startsWith('m') ? amount * 60 : amount;
  return Math.min(seconds, MAX_RETRY_AFTER_SECONDS);
}

// The address a reply names ("<jane@example.com>: Recipient address rejected") says nothing
// about the reply's meaning, and its words must not match a rule (a mailbox called spam@ or
// user.disabled@): rules read the text with every address in it replaced by an empty `<>`.
const ADDRESS_IN_TEXT = /<?([^\s<>()[\]"',;:]+@[^\s<>()[\]"',;:]+)>?/g;
const ADDRESS_TOKEN = '<>';

/** `text` with every email address in it replaced by `<>`: a reply fit for logs and operator views. */
export function withoutAddresses(text: string): string {
  return text.includes('@') ? text.replace(ADDRESS_IN_TEXT, ADDRESS_TOKEN) : text;
}

/**
 * `text` with each email address in it (without its angle brackets, which stay) replaced by
 * what `replace` makes of it: the same reading of "an address in a reply" as `withoutAddresses`.
 */
export function replaceAddresses(text: string, replace: (address: string) => string): string {
  if (!text.includes('@')) return text;
  return text.replace(ADDRESS_IN_TEXT, (match: string, address: string) =>
    match.replace(address, () => replace(address)),
  );
}

/**
 * Classes of replies already read. A batch reads the same replies thousands of times (each
 * probe's catch-all reply once per address, the same "user unknown" for each address), and a
 * reply's class depends only on its stage, code and text with the addresses masked. Bounded:
 * the oldest entry is dropped when it is full.
 */
const CLASSIFIED = new Map<string, ReplyClass>();
const CLASSIFIED_LIMIT = 2_048;

/** Classifies one reply to the given step with the first matching row of `REPLY_RULES`. */
export function classifyReply(reply: SmtpReply, stage: ReplyStage): ReplyClass {
  const named = withoutAddresses(reply.text);
  const text = named.replace(/\s+/g, ' ').trim();
  const enhanced = enhancedCodeOf(reply);
  const key = `${stage}\n${reply.code}\n${enhanced ?? ''}\n${text}`;
  const known = CLASSIFIED.get(key);
  if (known) return known;
  const classified = classifyText(reply.code, enhanced, text, stage);
  if (CLASSIFIED.size >= CLASSIFIED_LIMIT) CLASSIFIED.delete(CLASSIFIED.keys().next().value as string);
  CLASSIFIED.set(key, classified);
  return classified;
}

function classifyText(code: number, enhanced: string | null, text: string, stage: ReplyStage): ReplyClass {
  const matched = COMPILED_RULES.find(
    ({ rule, enhanced: enhancedPattern }) =>
      codeMatches(rule.code, code) &&
      (!rule.stage || rule.stage.includes(stage)) &&
      (!enhancedPattern || (enhanced !== null && enhancedPattern.test(enhanced))) &&
      (!rule.text || rule.text.test(text)),
  );
  // The last row has no condition, so `matched` is always found; the fallback keeps types honest.
  const rule: ReplyRule = matched?.rule ?? { id: 'unclassifiable', subStatus: 'invalid_smtp_response' };
  const table = policyOf(rule.subStatus);
  // RFC 5321 §4.2.1: only a 4yz reply is transient; a 5yz one is the server's final answer.
  const temporary = code >= 400 && code < 500;
  const policy: OutcomePolicy = {
    retry: temporary ? (rule.retry ?? table.retry) : 'none',
    refundable: table.refundable,
  };
  if (policy.retry !== 'none') {
    const named = statedDelaySeconds(text) ?? rule.retryAfterSeconds;
    if (named !== undefined) policy.retryAfterSeconds = named;
    else if (policy.retry === 'greylist') {
      policy.retryAfterSeconds = DEFAULT_GREYLIST_SECONDS;
      policy.retryAfterGuessed = true;
    }
  }
  // Shared by every caller that reads the same reply: frozen, so none can change it for the others.
  return Object.freeze({
    subStatus: rule.subStatus,
    accepted: rule.subStatus === 'accepted_email',
    rejectsMailbox: SUB_STATUSES[rule.subStatus] === 'undeliverable',
    policy: Object.freeze(policy),
    rule: rule.id,
    clientAction: clientActionOf(rule, text, policy),
  });
}

/**
 * A refusal that blames the client is about the sending address, so another egress may be
 * answered (docs/operations.md, "Egress addresses"); one that speaks of rates is about how much
 * we send from any address, so it asks for less instead.
 */
function clientActionOf(rule: ReplyRule, text: string, policy: OutcomePolicy): ClientAction | null {
  const blamesClient =
    rule.subStatus === 'antispam_blocked' &&
    (rule.blames === 'client' || (rule.blames === undefined && NAMES_CLIENT.test(text))) &&
    !RATE_WORDS.test(text);
  if (blamesClient) return 'another_egress';
  return policy.retry === 'throttle' ? 'slow_down' : null;
}

/**
 * Whether a reply asks rcpt's client to send less (its retry schedule is `throttle`: a 421, a
 * rate limit, a temporary policy refusal), so that the prober leaves the host alone for a
 * while. The table decides it, like every other meaning of a reply: greylisting (RFC 6647)
 * defers one sender/recipient triplet, not the client, and is not a reason to back off.
 */
export function asksClientToSlowDown(reply: SmtpReply, stage: ReplyStage): boolean {
  return classifyReply(reply, stage).clientAction === 'slow_down';
}

/**
 * Whether a reply refuses rcpt's client itself — its sending address is on a block list, or
 * its host or IP is refused — so that the prober asks again from another egress and keeps this
 * one away from the host (or the provider) for a while. Such a refusal never says anything of
 * the mailbox.
 */
export function refusesClient(reply: SmtpReply, stage: ReplyStage): boolean {
  return classifyReply(reply, stage).clientAction === 'another_egress';
}

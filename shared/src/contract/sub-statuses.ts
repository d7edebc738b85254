// The subStatus vocabulary, one row per subStatus: the status it belongs to, the sentence a
// result gives as its `reason`, and what a batch does with it — ask again (and on which
// schedule) and refund it when it is the final answer. Every caller reads this table: the
// verdict, the batch consumer, the single call, the OpenAPI description and the README's
// subStatus table (a test compares the README with `subStatusMarkdown()`), and docs/money.md's
// table of every charge, refund and recheck rule (compared with `moneyMarkdown()`).
//
// Memory (docs/verdicts.md, "Cached answers"): `remembered` says how long a single call's answer
// is answered again from the account's verdict cache; rcpt's own failures are never kept.
//
// Follow-up (docs/architecture.md, "Greylist follow-up"): a job uploaded with `recheck` asks
// again, over the next hours, the addresses whose final answer is `recheckable` — only when
// that answer was temporary (a 4xx or no answer), never a permanent (5xx) reply.
//
// Sending (docs/verdicts.md, "What to send to"): `send` says whether mail to an address with
// this answer should go out — `send`, `do_not_send`, or `decide` (rcpt cannot tell, or the
// answer is a judgement only the sender can make) — and `sendWhy` says why. The README's
// subStatus table shows it, docs/verdicts.md prints `sendAdviceMarkdown()`, and the results
// filter `advice` (`rcpt clean --only safe`) keeps exactly the rows it marks `send`.
//
// Money (docs/money.md): a single call costs one credit whatever it answers. In a batch, an
// address is refunded when rcpt got no answer about the mailbox because the provider blocked
// or deferred verification, refuses verification traffic, or rcpt itself could not run the
// check (its resolver, its probers). A mailbox answer, a DNS fact about the domain and a
// local finding are never refunded.

/** How long a single call's answer is answered again (`remembered`), in milliseconds. */
export const VERDICT_LIFETIME_MS = 24 * 60 * 60_000;
export const UNKNOWN_VERDICT_LIFETIME_MS = 10 * 60_000;

/** The four statuses of a result, best first. */
export const VERIFICATION_STATUSES = ['deliverable', 'undeliverable', 'risky', 'unknown'] as const;
type Status = (typeof VERIFICATION_STATUSES)[number];

/**
 * How fast a batch asks again for an answer that is temporary: each pace is its delays in
 * seconds before the 1st, 2nd … retry (past the last one the answer is final, as it is when a
 * retry would not finish before the job's deadline). A reply may name its own delay
 * (`retryAfterSeconds`): a greylisting server that names a shorter wait is asked then. The
 * README's pace table is this one (a test compares them).
 */
export const RETRY_PACES = {
  greylist: {
    usedFor:
      'the server holds unknown senders back for a while (RFC 6647): many let a retry through after 60 s, postgrey after 300 s',
    delays: [30, 60, 60, 120, 120, 300, 300, 600, 600, 600],
  },
  throttle: {
    usedFor: 'the server, or a temporary policy refusal, says slow down: minutes, longer each time',
    delays: [60, 120, 300, 600, 900],
  },
  connection: {
    usedFor:
      'refused connections, cut sessions, temporary server errors, DNS failures: quickly and a few times',
    delays: [2, 5, 10],
  },
  timeout: {
    usedFor: 'a server that never answered in time (a tarpit): once, since each try costs a full timeout',
    delays: [5],
  },
  rcpt: {
    usedFor: "rcpt's own failure (no prober free or connected): until the deadline",
    delays: [2, 5, 5, 10, 10, 15, 15, 30, 30, 30, 30, 60, 60, 60, 60, 60, 60, 60, 60, 60],
  },
} as const satisfies Record<string, { usedFor: string; delays: readonly number[] }>;

/** The pace at which an answer is asked again, or `none`: the answer is final. */
export type RetryPace = keyof typeof RETRY_PACES | 'none';

/**
 * How long a single call's answer is kept — answered again from the account's verdict cache
 * (docs/verdicts.md, "Cached answers"), counted from when it was reached:
 * - `day`: an answer about the mailbox or the domain: what makes repeated calls agree;
 * - `minutes`: the mail server gave no usable answer; the next attempt may well tell, so it
 *   is kept only long enough to absorb a burst of retries;
 * - `until_retry`: the server said when to ask again (greylisting): kept until then — the
 *   delay it named, or the one rcpt knows for it (`retryAfterSeconds`) — so a caller who
 *   retries as told is asked anew;
 * - `never`: rcpt's own failure (no prober, its resolver, an internal error) says nothing about
 *   the address: not kept, a repeat asks again. Nothing from it goes into the domain facts
 *   either (a route whose lookup failed is not kept, an unavailable probe reports nothing).
 */
export const REMEMBERED = ['day', 'minutes', 'until_retry', 'never'] as const;
export type Remembered = (typeof REMEMBERED)[number];

/** Whether mail should go to an address with this answer (docs/verdicts.md, "What to send to"). */
export const SEND_ADVICE = ['send', 'decide', 'do_not_send'] as const;
export type SendAdvice = (typeof SEND_ADVICE)[number];

export interface SubStatusRow {
  status: Status;
  /**
   * The other status this subStatus is answered with, when the verdict finds it so, and the
   * `reason` it then gives.
   */
  otherStatus?: { status: Status; when: string; reason: string };
  /** One plain-English sentence: the result's `reason`. */
  reason: string;
  /** Whether to send to an address with this answer. */
  send: SendAdvice;
  /** Why, in one sentence a list owner can act on. */
  sendWhy: string;
  /** Whether, and how, a batch asks again while this is the answer. */
  retry: RetryPace;
  /** A batch refunds the address when this is its final answer. */
  refundable: boolean;
  /**
   * A job with `recheck` asks again, over the next hours, an address whose final answer this
   * is (when the answer was temporary): the answer may change once the server lets rcpt in.
   */
  recheckable: boolean;
  /** How long a single call's answer is answered again from the account's verdict cache. */
  remembered: Remembered;
}

const FINAL = { retry: 'none', refundable: false, recheckable: false, remembered: 'day' } as const;

/** The advice for every answer that says mail to the address would bounce. */
const BOUNCES = {
  send: 'do_not_send',
  sendWhy: "Mail to it bounces, and every hard bounce costs the sender's reputation.",
} as const;
/** The advice for every answer that did not verify the mailbox. */
const UNVERIFIED = {
  send: 'decide',
  sendWhy:
    'rcpt could not tell: verify it again later, or send only when the address came from a source you trust.',
} as const;

/** The vocabulary (docs/verdicts.md). Keys are the API's `subStatus` values. */
export const SUB_STATUS_TABLE = {
  accepted_email: {
    status: 'deliverable',
    reason: 'The mail server accepted the address.',
    send: 'send',
    sendWhy: 'The mailbox exists and takes mail.',
    ...FINAL,
  },

  invalid_syntax: {
    status: 'undeliverable',
    reason: 'The address is not valid email syntax.',
    ...BOUNCES,
    ...FINAL,
  },
  invalid_domain: { status: 'undeliverable', reason: 'The domain does not exist.', ...BOUNCES, ...FINAL },
  no_mx_record: {
    status: 'undeliverable',
    reason: 'The domain has no mail server (no MX, A or AAAA record).',
    ...BOUNCES,
    ...FINAL,
  },
  does_not_accept_mail: {
    status: 'undeliverable',
    reason: 'The domain publishes a null MX record, so it accepts no email.',
    ...BOUNCES,
    ...FINAL,
  },
  unroutable_ip_address: {
    status: 'undeliverable',
    reason: "The domain's mail server is on a private or reserved address that cannot be reached.",
    ...BOUNCES,
    ...FINAL,
  },
  mailbox_not_found: {
    status: 'undeliverable',
    reason: 'The mail server says this mailbox does not exist.',
    ...BOUNCES,
    ...FINAL,
  },
  mailbox_disabled: {
    status: 'undeliverable',
    reason: 'The mail server says this mailbox is disabled.',
    ...BOUNCES,
    ...FINAL,
  },

  // Undeliverable instead when the typo domain does not exist (the verdict says so).
  possible_typo: {
    status: 'risky',
    otherStatus: {
      status: 'undeliverable',
      when: 'when the domain does not exist',
      reason: 'The domain does not exist and is probably a typo of a common domain.',
    },
    reason: 'The domain exists but is probably a typo of a common domain.',
    send: 'do_not_send',
    sendWhy:
      'Correct the address first (`checks.hasTypo.suggested` is the likely domain): a typo domain that exists belongs to someone else.',
    ...FINAL,
  },
  catch_all: {
    status: 'risky',
    reason: 'The domain accepts mail for any address, so this mailbox cannot be confirmed.',
    send: 'decide',
    sendWhy:
      'The domain takes mail for every address, so this one may still bounce or go unread; send when the address came from a source you trust (a confirmed sign-up, a customer).',
    ...FINAL,
  },
  // Learnt from outcomes (docs/verdicts.md, "Learning from outcomes"): the domain's server
  // accepted addresses at RCPT that bounced afterwards, for several accounts.
  accepts_then_bounces: {
    status: 'risky',
    reason:
      "The domain's mail server accepts addresses it later bounces, so its acceptance does not confirm this mailbox.",
    send: 'decide',
    sendWhy:
      'Mail the domain accepted has bounced afterwards for several senders; send when the address came from a source you trust (a confirmed sign-up, a customer).',
    ...FINAL,
  },
  role_based: {
    status: 'risky',
    reason: 'The mailbox exists but belongs to a role such as info@ or support@, not a person.',
    send: 'decide',
    sendWhy:
      'A real mailbox read by a team: fine for business mail to that team, a source of complaints in marketing.',
    ...FINAL,
  },
  disposable: {
    status: 'risky',
    reason: 'The address belongs to a disposable (temporary) email provider.',
    send: 'do_not_send',
    sendWhy: 'A throwaway inbox: it expires, and nobody reads it for long.',
    ...FINAL,
  },
  mailbox_full: {
    status: 'risky',
    reason: 'The mailbox exists but is full, so new mail bounces for now.',
    send: 'do_not_send',
    sendWhy:
      'Mail bounces while it is full, and a mailbox left full is often abandoned; verify it again in a few weeks.',
    ...FINAL,
  },
  possible_spamtrap: {
    status: 'risky',
    reason: 'The address looks like a spam trap.',
    send: 'do_not_send',
    sendWhy: 'Mail to a spam trap gets the sender listed.',
    ...FINAL,
  },
  toxic: {
    status: 'risky',
    reason: 'The address is likely to produce abuse complaints.',
    send: 'do_not_send',
    sendWhy: 'Complaints cost the sender more than the address is worth.',
    ...FINAL,
  },

  // The provider held the check back: asked again, refunded if it never answered.
  greylisted: {
    status: 'unknown',
    reason: 'The mail server asked to try again later (greylisting).',
    ...UNVERIFIED,
    retry: 'greylist',
    refundable: true,
    recheckable: true,
    remembered: 'until_retry',
  },
  mail_server_temporary_error: {
    status: 'unknown',
    reason: 'The mail server reported a temporary error.',
    ...UNVERIFIED,
    retry: 'connection',
    refundable: true,
    recheckable: true,
    remembered: 'minutes',
  },
  // A temporary block (4xx) is asked again slowly; a permanent one (5xx) never is, since a
  // reply's own class decides that (RFC 5321 §4.2.1).
  antispam_blocked: {
    status: 'unknown',
    reason: 'The mail server refused the check under its anti-spam policy, so the mailbox was not verified.',
    ...UNVERIFIED,
    retry: 'throttle',
    refundable: true,
    recheckable: true,
    remembered: 'minutes',
  },
  provider_unverifiable: {
    status: 'unknown',
    reason: 'The mailbox cannot be verified: its mail server, or the form of the address, does not allow it.',
    send: 'decide',
    sendWhy:
      'Nobody can verify it (its provider accepts every address, as Yahoo and AOL do, or it names an IP address): send when the address came from a source you trust.',
    retry: 'none',
    refundable: true,
    recheckable: false,
    remembered: 'minutes',
  },

  // The server did not answer in time or at all: asked again, charged (an answer may never come).
  smtp_timeout: {
    status: 'unknown',
    reason: 'The mail server did not answer in time.',
    ...UNVERIFIED,
    retry: 'timeout',
    refundable: false,
    recheckable: false,
    remembered: 'minutes',
  },
  smtp_connection_failed: {
    status: 'unknown',
    reason: 'No connection could be made to the mail server.',
    ...UNVERIFIED,
    retry: 'connection',
    refundable: false,
    recheckable: true,
    remembered: 'minutes',
  },
  forcible_disconnect: {
    status: 'unknown',
    reason: 'The mail server closed the connection before answering.',
    ...UNVERIFIED,
    retry: 'connection',
    refundable: false,
    recheckable: true,
    remembered: 'minutes',
  },
  invalid_smtp_response: {
    status: 'unknown',
    reason: 'The mail server answered outside the SMTP protocol.',
    ...UNVERIFIED,
    ...FINAL,
    remembered: 'minutes',
  },

  // rcpt's own failures: never the customer's cost in a batch, and never remembered.
  smtp_unavailable: {
    status: 'unknown',
    reason:
      'rcpt could not run the SMTP check in time (no prober was free, or none answered), so the mailbox was not verified.',
    ...UNVERIFIED,
    retry: 'rcpt',
    refundable: true,
    recheckable: true,
    remembered: 'never',
  },
  dns_error: {
    status: 'unknown',
    reason:
      "rcpt could not run the check: the domain's DNS did not answer (the resolver or the domain's name servers failed).",
    ...UNVERIFIED,
    retry: 'connection',
    refundable: true,
    recheckable: true,
    remembered: 'never',
  },
  internal_error: {
    status: 'unknown',
    reason: 'rcpt could not run the check because of an internal error.',
    ...UNVERIFIED,
    retry: 'none',
    refundable: true,
    recheckable: false,
    remembered: 'never',
  },
  // The caller's own budget (`timeoutMs`) ended the wait, not the mail server: the check goes
  // on and its verdict is kept for the next call, which is charged for it (docs/verdicts.md,
  // "A time budget per call"). A batch never answers it.
  timeout_exceeded: {
    status: 'unknown',
    reason:
      "The call's time budget (timeoutMs) ran out before the mail server answered; the check goes on, and the next call for this address gets its verdict.",
    send: 'decide',
    sendWhy: 'Not verified yet: the next call for the address gets the verdict the check reaches.',
    retry: 'none',
    refundable: true,
    recheckable: false,
    remembered: 'never',
  },
} as const satisfies Record<string, SubStatusRow>;

export type SubStatus = keyof typeof SUB_STATUS_TABLE;

/** Every subStatus and the status it belongs to. */
export const SUB_STATUSES = Object.fromEntries(
  Object.entries(SUB_STATUS_TABLE).map(([subStatus, row]) => [subStatus, row.status]),
) as { readonly [K in SubStatus]: (typeof SUB_STATUS_TABLE)[K]['status'] };

/** What a batch does with one address's answer: ask again (how, and when), refund if final. */
export interface OutcomePolicy {
  retry: RetryPace;
  /** The server's stated delay, or the known one (greylisting), when a retry is due. */
  retryAfterSeconds?: number;
  /**
   * true: neither the reply nor its table row named the delay, so `retryAfterSeconds` is the
   * usual greylisting delay; what rcpt has measured of the server replaces it.
   */
  retryAfterGuessed?: boolean;
  refundable: boolean;
}

/**
 * Whether a job with `recheck` asks this final answer again later: the table says the
 * subStatus is worth it and the answer was temporary (`retry` was not `none`: a 4xx reply, or
 * no answer). A permanent (5xx) reply is never asked again (RFC 5321 §4.2.1).
 */
export function isRecheckable(subStatus: SubStatus, policy: OutcomePolicy): boolean {
  const row: SubStatusRow = SUB_STATUS_TABLE[subStatus];
  return row.recheckable && policy.retry !== 'none';
}

/** The policy of a subStatus as the table gives it, before anything a reply adds. */
export function policyOf(subStatus: SubStatus): OutcomePolicy {
  const row: SubStatusRow = SUB_STATUS_TABLE[subStatus];
  return { retry: row.retry, refundable: row.refundable };
}

/** The subStatuses whose advice is one of `advice`: what the results filter `advice` keeps. */
export function subStatusesAdvised(advice: readonly SendAdvice[]): SubStatus[] {
  return (Object.entries(SUB_STATUS_TABLE) as [SubStatus, SubStatusRow][])
    .filter(([, row]) => advice.includes(row.send))
    .map(([subStatus]) => subStatus);
}

function yesNo(value: boolean): string {
  return value ? 'yes' : 'no';
}

const REMEMBERED_TEXT: Record<Remembered, string> = {
  day: `${VERDICT_LIFETIME_MS / 3_600_000} h`,
  minutes: `${UNKNOWN_VERDICT_LIFETIME_MS / 60_000} min`,
  until_retry: `until its \`retryAfterSeconds\` (at most ${UNKNOWN_VERDICT_LIFETIME_MS / 60_000} min)`,
  never: 'not kept: a repeat asks again',
};

const SEND_TEXT: Record<SendAdvice, string> = { send: 'send', decide: 'decide', do_not_send: "don't send" };

/** A row's status as the tables print it: both statuses of a subStatus that has two. */
function statusText(row: SubStatusRow): string {
  return row.otherStatus ? `${row.status}; ${row.otherStatus.status} ${row.otherStatus.when}` : row.status;
}

/**
 * Every charge, refund and recheck rule per subStatus, as Markdown: docs/money.md prints it
 * (a test compares the two).
 */
export function moneyMarkdown(): string {
  const lines = [
    '| subStatus | status | single call: charged | single call: answered again from the verdict cache | batch: charged at upload | batch: refunded when final | batch: asked again after completion (`recheck`) | a follow-up round answers a refunded address with it |',
    '| --- | --- | --- | --- | --- | --- | --- | --- |',
  ];
  for (const [subStatus, row] of Object.entries(SUB_STATUS_TABLE) as [SubStatus, SubStatusRow][]) {
    const roundAnswer =
      row.status === 'unknown'
        ? 'free; still refunded'
        : '1 credit (`recheck_charge`), if the balance covers it; else left for the next round';
    // An invalid row is answered at upload and is not among the unique valid addresses charged.
    const atUpload = subStatus === 'invalid_syntax' ? 'free' : '1 credit';
    lines.push(
      `| \`${subStatus}\` | ${statusText(row)} | 1 credit | ${REMEMBERED_TEXT[row.remembered]} | ${atUpload} | ${yesNo(row.refundable)} | ${yesNo(row.recheckable)} | ${roundAnswer} |`,
    );
  }
  return lines.join('\n');
}

/** The retry paces as Markdown: the README's pace table, with the subStatuses on each. */
export function retryPaceMarkdown(): string {
  const lines = [
    '| pace | subStatuses (a reply may choose another) | for | retries after (s) |',
    '| --- | --- | --- | --- |',
  ];
  for (const [pace, { usedFor, delays }] of Object.entries(RETRY_PACES)) {
    const subStatuses = (Object.entries(SUB_STATUS_TABLE) as [SubStatus, SubStatusRow][])
      .filter(([, row]) => row.retry === pace)
      .map(([subStatus]) => `\`${subStatus}\``);
    lines.push(`| ${pace} | ${subStatuses.join(', ') || '—'} | ${usedFor} | ${delays.join(', ')} |`);
  }
  return lines.join('\n');
}

/** The table as Markdown: the README's subStatus section and the OpenAPI description. */
export function subStatusMarkdown(): string {
  const lines = [
    '| subStatus | status | meaning | send to it? | single call: answered again from the cache | batch: asked again (pace) | batch: refunded when final | batch: rechecked later (`recheck`) |',
    '| --- | --- | --- | --- | --- | --- | --- | --- |',
  ];
  for (const [subStatus, row] of Object.entries(SUB_STATUS_TABLE) as [SubStatus, SubStatusRow][]) {
    const retry = row.retry === 'none' ? 'no' : row.retry;
    lines.push(
      `| \`${subStatus}\` | ${statusText(row)} | ${row.reason} | ${SEND_TEXT[row.send]} | ${REMEMBERED_TEXT[row.remembered]} | ${retry} | ${yesNo(row.refundable)} | ${yesNo(row.recheckable)} |`,
    );
  }
  return lines.join('\n');
}

/** What to send to, per subStatus, and why: docs/verdicts.md's table (a test compares the two). */
export function sendAdviceMarkdown(): string {
  const lines = ['| subStatus | status | send to it? | why |', '| --- | --- | --- | --- |'];
  for (const [subStatus, row] of Object.entries(SUB_STATUS_TABLE) as [SubStatus, SubStatusRow][])
    lines.push(`| \`${subStatus}\` | ${statusText(row)} | **${SEND_TEXT[row.send]}** | ${row.sendWhy} |`);
  return lines.join('\n');
}

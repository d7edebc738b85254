// The anti-harvest defences of the MTAs that run most of the internet, as the fast fake MX
// applies them. Each default is the documented one, never a gentler value: a prober that is
// polite to these is polite to the real servers.
//
// Postfix: postconf(5), https://www.postfix.org/postconf.5.html, and the anvil(8) server that
// keeps the per-client counts, https://www.postfix.org/anvil.8.html.
// Exchange: "Recipient filtering / tarpitting" and Set-ReceiveConnector -TarpitInterval,
// https://learn.microsoft.com/powershell/module/exchange/set-receiveconnector.
// postgrey: postgrey(8), https://postgrey.schweikert.ch/ (--delay).

/** What one defended MX does to a client that asks too much. Every field off when absent. */
export interface MxDefences {
  /**
   * Postfix smtpd_soft_error_limit (default 10): once a client has made this many errors in
   * a session without delivering mail, every reply is sent `errorSleepMs` late.
   */
  softErrorLimit?: number;
  /** Postfix smtpd_error_sleep_time (default 1s): the delay of each reply past the soft limit. */
  errorSleepMs?: number;
  /**
   * Postfix smtpd_hard_error_limit (default 20): at this many errors the server says
   * `421 4.7.0 <host> Error: too many errors` and disconnects (logged "too many errors after RCPT").
   */
  hardErrorLimit?: number;
  /**
   * Postfix smtpd_client_connection_count_limit (default 50, counted by anvil(8) per client
   * address): the connection over the limit gets `421 4.7.0 <host> Error: too many connections
   * from <ip>` instead of the greeting, and is closed.
   */
  connectionCountLimit?: number;
  /**
   * Postfix smtpd_client_connection_rate_limit (default 0, off): connection attempts per client
   * per `rateWindowMs`; over it, the same 421 as the count limit.
   */
  connectionRateLimit?: number;
  /**
   * Postfix smtpd_client_recipient_rate_limit (default 0, off): RCPTs per client per
   * `rateWindowMs`, accepted or not; over it, `450 4.7.1 Error: too many recipients from <ip>`.
   */
  recipientRateLimit?: number;
  /** Postfix anvil_rate_time_unit (default 60s): the window of the rate limits. */
  rateWindowMs?: number;
  /**
   * Exchange TarpitInterval (default 00:00:05 on Receive connectors): each 5xx answer to RCPT
   * (an unknown recipient) is sent this much later, to make directory harvesting slow.
   */
  tarpitMs?: number;
  /**
   * Recipients one mail transaction takes; the next RCPT gets `452 4.5.3 Error: too many
   * recipients` (Postfix's smtpd_recipient_limit text). Postfix counts such overshoots as
   * errors only past smtpd_recipient_overshoot_limit (default 1000), so they are not errors here.
   */
  recipientsPerTransaction?: number;
  /**
   * postgrey --delay (default 300 s): the first RCPT of a (client, sender, recipient) triplet
   * gets `450 4.2.0 … Greylisted`, and so does every retry until this much time has passed.
   */
  greylistDelayMs?: number;
  /**
   * Postfix `smtpd_client_restrictions = reject_rbl_client zen.spamhaus.org` with these client
   * addresses listed: every RCPT from them (smtpd_delay_reject = yes, the default, reports client
   * restrictions at RCPT) gets `blocklistReply` — Postfix's default_rbl_reply, "$rbl_code Service
   * unavailable; $rbl_class [$rbl_what] blocked using $rbl_domain${rbl_reason?; $rbl_reason}",
   * with maps_rbl_reject_code = 554 (postconf(5)) and the reason Spamhaus publishes in its TXT
   * record, a link to its lookup page. Other clients are served as usual.
   */
  blocklistedClients?: readonly string[];
}

/** The DNS block list the world's MX hosts consult: Spamhaus's combined zone. */
export const BLOCKLIST_ZONE = 'zen.spamhaus.org';

/** Postfix's reply to a listed client (postconf(5): default_rbl_reply, maps_rbl_reject_code = 554). */
export function blocklistReply(client: string): string {
  return `554 5.7.1 Service unavailable; Client host [${client}] blocked using ${BLOCKLIST_ZONE}; https://www.spamhaus.org/query/ip/${client}`;
}

/** Postfix's defaults (postconf(5)); the rate limits stay off, as they are in Postfix. */
export const POSTFIX_DEFAULTS = Object.freeze({
  softErrorLimit: 10,
  errorSleepMs: 1_000,
  hardErrorLimit: 20,
  connectionCountLimit: 50,
  rateWindowMs: 60_000,
} satisfies MxDefences);

/** Exchange's recipient tarpit at its default TarpitInterval of 5 seconds. */
export const EXCHANGE_TARPIT = Object.freeze({ tarpitMs: 5_000 } satisfies MxDefences);

/** postgrey's default greylisting delay. */
export const POSTGREY_DELAY_MS = 300_000;

/** What a defended fake MX saw since it started or since resetStats(). */
export interface MxStats {
  /** Connections that got the 220 greeting. */
  sessionsOpened: number;
  /** The most sessions open at once (refused connections not counted). */
  maxConcurrentSessions: number;
  rcpts: number;
  /** RCPTs answered 4xx or 5xx, 452 "too many recipients" included. */
  rejectedRcpts: number;
  /** Replies sent `errorSleepMs` late because the session was past the soft error limit. */
  errorSleeps: number;
  /** Sessions ended with "421 4.7.0 … Error: too many errors". */
  hardLimitHangups: number;
  /** Connections refused with "421 4.7.0 … Error: too many connections from …" (count limit). */
  connectionCapRefusals: number;
  /** Connections refused by the connection rate limit. */
  connectionRateRefusals: number;
  /** RCPTs answered "450 4.7.1 Error: too many recipients from …" (recipient rate limit). */
  recipientRateRefusals: number;
  /** RCPTs answered "452 4.5.3 Error: too many recipients". */
  tooManyRecipients: number;
  /** RCPTs answered 450 4.2.0 by the greylist. */
  greylisted: number;
  /** RCPT replies held back by the tarpit. */
  tarpitted: number;
  /** RCPTs refused because the client is on the block list. */
  blocklisted: number;
}

export function emptyStats(): MxStats {
  return {
    sessionsOpened: 0,
    maxConcurrentSessions: 0,
    rcpts: 0,
    rejectedRcpts: 0,
    errorSleeps: 0,
    hardLimitHangups: 0,
    connectionCapRefusals: 0,
    connectionRateRefusals: 0,
    recipientRateRefusals: 0,
    tooManyRecipients: 0,
    greylisted: 0,
    tarpitted: 0,
    blocklisted: 0,
  };
}

/** Events per key within a sliding window, as anvil(8) counts rates per client. */
export class RateWindow {
  readonly #windowMs: number;
  readonly #events = new Map<string, number[]>();

  constructor(windowMs: number) {
    this.#windowMs = windowMs;
  }

  /** Records one event for `key` at `now` and returns how many fall in the window, this one included. */
  hit(key: string, now: number): number {
    const recent = (this.#events.get(key) ?? []).filter((at) => now - at < this.#windowMs);
    recent.push(now);
    this.#events.set(key, recent);
    return recent.length;
  }
}

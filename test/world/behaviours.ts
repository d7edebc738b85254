// What each fake MX answers. The reply texts are the ones real servers send (Postfix, postgrey,
// Gmail, Spamhaus-listed hosts), because rcpt's classifier is tested against real texts and the
// world must not be easier than the internet.
import type { SMTPServerError, SMTPServerSession } from 'smtp-server';

/** Local parts that exist on the servers that check mailboxes (besides any starting with `user`). */
export const MAILBOXES = ['alice', 'bob', 'carol', 'info', 'support', 'sales'] as const;

const mailboxSet: ReadonlySet<string> = new Set(MAILBOXES);

/** Whether the local part of `address` is a mailbox: one of MAILBOXES or `user…`, case-insensitively like Postfix. */
export function mailboxExists(address: string): boolean {
  const localPart = address.slice(0, address.lastIndexOf('@')).toLowerCase();
  return mailboxSet.has(localPart) || localPart.startsWith('user');
}

/** A reply to send instead of the default; `text` starts with the enhanced status code. */
export function smtpReply(code: number, text: string): SMTPServerError {
  return Object.assign(new Error(text), { responseCode: code });
}

/** How one fake MX behaves. Servers judge the local part only: any domain routed to them is theirs. */
export interface MxBehaviour {
  /** STARTTLS not offered, offered, or required before MAIL and RCPT. */
  tls: 'none' | 'offered' | 'required';
  /** Whether SMTPUTF8 (RFC 6531) is advertised and accepted. */
  smtputf8: boolean;
  /** Sessions served at once; the next one is refused at the banner. */
  maxSessions?: number;
  /** Sent instead of the 220 greeting, after which the server closes the connection. */
  greetingRefusal?: SMTPServerError;
  /** The answer to RCPT TO: null accepts (250). */
  rcpt(address: string, session: SMTPServerSession): SMTPServerError | null;
}

export type SmtpBehaviourName =
  | 'accept'
  | 'catchall'
  | 'greylist'
  | 'greylistMilter'
  | 'full'
  | 'disabled'
  | 'rbl'
  | 'policy'
  | 'banner421'
  | 'starttls'
  | 'tlsrequired'
  | 'connlimit'
  | 'fallbackSecondary'
  | 'utf8'
  | 'gateway'
  | 'tenant'
  | 'tenantRelayDenied'
  | 'relayGateway';

/** Postfix's answer (after the 550) for a local part it does not know. */
export function userUnknownText(address: string): string {
  return `5.1.1 <${address}>: Recipient address rejected: User unknown in local recipient table`;
}

function userUnknown(address: string): SMTPServerError {
  return smtpReply(550, userUnknownText(address));
}

/** The answer of a server that knows its mailboxes: 250 for those, 550 5.1.1 for the rest. */
function mailboxRule(address: string): SMTPServerError | null {
  return mailboxExists(address) ? null : userUnknown(address);
}

const checksMailboxes = { tls: 'none', smtputf8: false, rcpt: mailboxRule } as const satisfies MxBehaviour;

/** The behaviours of every SMTP-speaking fake MX. Each call gets fresh state (greylist triplets). */
export function createBehaviours(options: {
  greylistDelayMs: number;
}): Record<SmtpBehaviourName, MxBehaviour> {
  return {
    accept: checksMailboxes,
    catchall: { tls: 'none', smtputf8: false, rcpt: () => null },
    greylist: greylisting(options.greylistDelayMs, postgreyDeferral),
    greylistMilter: greylisting(options.greylistDelayMs, milterGreylistDeferral),
    full: {
      tls: 'none',
      smtputf8: false,
      rcpt: (address) =>
        mailboxExists(address) ? smtpReply(552, `5.2.2 <${address}>: Mailbox full`) : userUnknown(address),
    },
    // Gmail's text for a suspended account.
    disabled: {
      tls: 'none',
      smtputf8: false,
      rcpt: () => smtpReply(550, '5.2.1 The email account that you tried to reach is disabled'),
    },
    // Postfix with reject_rbl_client: the client is refused, the mailbox is never looked at.
    rbl: {
      tls: 'none',
      smtputf8: false,
      rcpt: (_address, session) =>
        smtpReply(
          554,
          `5.7.1 Service unavailable; Client host [${session.remoteAddress}] blocked using zen.spamhaus.org`,
        ),
    },
    policy: {
      tls: 'none',
      smtputf8: false,
      rcpt: () => smtpReply(550, '5.7.1 Message rejected due to local policy'),
    },
    banner421: {
      ...checksMailboxes,
      greetingRefusal: smtpReply(421, '4.7.0 Service not available, closing transmission channel'),
    },
    starttls: { ...checksMailboxes, tls: 'offered' },
    tlsrequired: { ...checksMailboxes, tls: 'required' },
    connlimit: { ...checksMailboxes, maxSessions: 3 },
    fallbackSecondary: checksMailboxes,
    utf8: { tls: 'none', smtputf8: true, rcpt: () => null },
    // A security gateway takes every recipient of its customers' domains and sorts them out
    // after it has the message (docs/verdicts.md, "Catch-alls behind security gateways").
    gateway: { tls: 'offered', smtputf8: false, rcpt: () => null },
    // A company's own Postfix relay in front of its tenant: relay_domains lists the domain and
    // relay_recipient_maps is left at its default (empty), with which Postfix accepts every
    // recipient of a relay domain (postfix.org/postconf.5.html#relay_recipient_maps).
    relayGateway: { tls: 'offered', smtputf8: false, rcpt: () => null },
    // Exchange Online's answer for a recipient that is not in the tenant's directory.
    tenant: {
      tls: 'offered',
      smtputf8: false,
      rcpt: (address) =>
        mailboxExists(address)
          ? null
          : smtpReply(
              550,
              '5.1.10 RESOLVER.ADR.RecipientNotFound; Recipient not found by SMTP address lookup',
            ),
    },
    // Exchange Online with a connector that takes the domain's mail from its gateway only
    // ("Relay Access Denied" to anyone else, learn.microsoft.com, NDR 5.7.64).
    tenantRelayDenied: {
      tls: 'offered',
      smtputf8: false,
      rcpt: () =>
        smtpReply(
          550,
          '5.7.64 TenantAttribution; Relay Access Denied [SN1NAM02FT012.eop-nam02.prod.protection.outlook.com]',
        ),
    },
  };
}

/**
 * A greylister: the first attempt of a (client IP, sender, recipient) triplet is deferred, and
 * retries are deferred until `delayMs` have passed since it; after that the triplet is let
 * through (and stays so) and the mailbox rule answers. `deferral` words the refusal as the
 * greylister stands for does, given the address and the time left.
 */
function greylisting(
  delayMs: number,
  deferral: (address: string, remainingMs: number) => SMTPServerError,
): MxBehaviour {
  const greylist = new Greylist(delayMs);
  return {
    tls: 'none',
    smtputf8: false,
    rcpt(address, session) {
      const mailFrom = session.envelope.mailFrom;
      const sender = mailFrom ? mailFrom.address : '';
      const remainingMs = greylist.remainingMs(session.remoteAddress, sender, address);
      return remainingMs === null ? mailboxRule(address) : deferral(address, remainingMs);
    },
  };
}

/** postgrey behind Postfix: 450 4.2.0 and its help URL. */
function postgreyDeferral(address: string): SMTPServerError {
  return smtpReply(450, postgreyText(address));
}

/**
 * milter-greylist in front of Sendmail, with its documented defaults (greylist.conf(5): reply
 * code "451", extended code "4.7.1", message "Greylisting in action, please come back in %R",
 * %R being the time left as HH:MM:SS).
 */
function milterGreylistDeferral(_address: string, remainingMs: number): SMTPServerError {
  return smtpReply(451, `4.7.1 Greylisting in action, please come back in ${clockTime(remainingMs)}`);
}

/** postgrey's refusal, after the 450. */
function postgreyText(address: string): string {
  const domain = address.slice(address.lastIndexOf('@') + 1).toLowerCase();
  return `4.2.0 <${address}>: Recipient address rejected: Greylisted, see http://postgrey.example/help/${domain}.html`;
}

/** A duration as HH:MM:SS, rounded up to the second. */
function clockTime(ms: number): string {
  const total = Math.ceil(ms / 1000);
  const parts = [Math.floor(total / 3600), Math.floor((total % 3600) / 60), total % 60];
  return parts.map((part) => String(part).padStart(2, '0')).join(':');
}

/** postgrey's triplet memory: who was first seen when. */
export class Greylist {
  readonly #delayMs: number;
  readonly #firstSeen = new Map<string, number>();

  constructor(delayMs: number) {
    this.#delayMs = delayMs;
  }

  /**
   * How long the triplet is still held back (its first attempt starts the clock), or null
   * once the delay has passed: from then on it is let through.
   */
  remainingMs(client: string, sender: string, address: string): number | null {
    const triplet = `${client}\n${sender.toLowerCase()}\n${address.toLowerCase()}`;
    const now = performance.now();
    const seen = this.#firstSeen.get(triplet);
    if (seen === undefined) {
      this.#firstSeen.set(triplet, now);
      return this.#delayMs;
    }
    const waited = now - seen;
    return waited >= this.#delayMs ? null : this.#delayMs - waited;
  }

  /** postgrey's 450 text (after the code) while the triplet is still greylisted, or null once it passes. */
  check(client: string, sender: string, address: string): string | null {
    return this.remainingMs(client, sender, address) === null ? null : postgreyText(address);
  }
}

// One SMTP client session (RFC 5321) to one MX address: greeting, EHLO, STARTTLS (RFC 3207),
// PIPELINING (RFC 2920), MAIL FROM with SMTPUTF8 (RFC 6531), RCPT TO, RSET and QUIT. It never
// sends DATA: a verifier asks about mailboxes and leaves before a message exists.
//
// Every way the peer can misbehave ends in a SessionFailure, never in a thrown socket error or
// an unhandled rejection: a hostile server decides what arrives on this socket, so every input
// is bounded (line length, reply size, line count, queued replies) and every wait has a timer.
import { isIP, type Socket, connect as tcpConnect } from 'node:net';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { type TLSSocket, connect as tlsConnect } from 'node:tls';
import type { SessionFailure, SmtpReply } from '@rcpt/shared/contract/prober';
import { isFinalReplyLine, parseReplyLines } from '@rcpt/shared/verify/smtp-reply';
import type { Egress } from '../egress/egress.ts';
import { socks5Connect } from '../egress/socks5.ts';
import { DialogueRecorder } from './dialogue-recorder.ts';
import { wireTextRefusal } from './guards.ts';

export type SessionStage = SessionFailure['stage'];

/** Deadlines of the single steps, in milliseconds. */
export interface SessionTimeouts {
  /** TCP connect. */
  connectMs: number;
  /** From connected to the whole 220 greeting. */
  bannerMs: number;
  /** From a command written to its whole reply (and a TLS handshake). */
  commandMs: number;
}

/**
 * RFC 5321 §4.5.3.2 asks a mail client to wait 5 minutes for the greeting and for MAIL and RCPT
 * replies, because a message must not be lost to impatience. A verifier loses nothing by giving
 * up: its caller answers "unknown" within seconds, and a host that makes it wait minutes is a
 * tarpit aimed at address harvesters. So the defaults are shorter, and all are configurable.
 */
export const DEFAULT_SESSION_TIMEOUTS: Readonly<SessionTimeouts> = Object.freeze({
  connectMs: 10_000,
  bannerMs: 30_000,
  commandMs: 30_000,
});

/**
 * How STARTTLS is used. `opportunistic`: when offered (a bad certificate is only recorded: MX
 * certificates are routinely self-signed or for another name, and RFC 3207 §4.1 leaves the
 * decision to the client). `required`: no session without TLS. `off`: plaintext even when
 * offered, for the retry after a failed handshake (what MTAs at TLS security level "may" do).
 */
export type StartTlsPolicy = 'opportunistic' | 'required' | 'off';

export interface SmtpSessionOptions {
  /** The MX host name: the TLS server name (SNI) and what the transcript calls the host. */
  host: string;
  ip: string;
  port: number;
  /** Our EHLO/HELO name (RFC 5321 §4.1.1.1). */
  helo: string;
  /** Budget of the whole session, from open() to the end; steps share it. */
  sessionTimeoutMs: number;
  timeouts?: Partial<SessionTimeouts>;
  startTls?: StartTlsPolicy;
  /** Where to record the dialogue; none when not asked for. */
  transcript?: Transcript | null;
  /** Record the dialogue step by step for the evidence (`dialogue`). */
  recordDialogue?: boolean;
  /** Called once the TCP connection is up (the server counts the session from here). */
  onConnected?: () => void;
  /** Called when QUIT is written, with every command before it written too. */
  onQuitWritten?: () => void;
  /** Where the session goes out from: a local source address or a SOCKS5 proxy; default the system's choice. */
  egress?: Egress;
}

/** Thrown by the session's steps: the reason the session cannot go on (or the step was refused). */
export class SmtpSessionError extends Error {
  readonly failure: SessionFailure;

  constructor(failure: SessionFailure) {
    super(failure.message);
    this.name = 'SmtpSessionError';
    this.failure = failure;
  }
}

/** The RCPT replies one mail transaction got, and why it stopped early if it did. */
export interface TransactionOutcome {
  /** One per recipient, in order; fewer than the recipients when `failure` stopped it. */
  replies: SmtpReply[];
  failure: SessionFailure | null;
  /**
   * When each reply arrived (performance.now()): `mailAt` for MAIL's, `replyAt[i]` for
   * `replies[i]`, and `sentAt` when the commands were written. A server that sleeps before
   * its replies (Postfix past its soft error limit, a tarpit) shows here as a gap.
   */
  timing: { sentAt: number; mailAt: number; replyAt: number[] };
}

// RFC 5321 §4.5.3.1.5 caps a reply line at 512 octets; real servers overshoot a little, so we
// allow eight times that and treat anything longer as hostile.
const MAX_LINE_BYTES = 4096;
const MAX_REPLY_BYTES = 64 * 1024;
const MAX_REPLY_LINES = 100;
// Pipelined replies wait here until read: MAIL plus the most RCPTs one transaction sends, with
// room to spare. More means the server talks without being asked.
const MAX_QUEUED_REPLIES = 256;
// A QUIT reply is a courtesy (RFC 5321 §4.1.1.10): never wait long for it.
const QUIT_WAIT_MS = 2_000;
const REPLY_LINE_START = /^[2-5]\d\d(?:[ -]|$)/;

interface ReceivedReply {
  reply: SmtpReply;
  /** The reply's raw lines, for the EHLO keywords (RFC 5321 §4.1.1.1). */
  lines: string[];
  /** performance.now() when its last line arrived. */
  at: number;
}

interface PendingStep {
  reject: (error: SmtpSessionError) => void;
  timer: NodeJS.Timeout;
}

export class SmtpSession {
  readonly host: string;
  readonly ip: string;
  readonly port: number;
  /** Whether the dialogue runs over TLS now. */
  tls = false;
  /** Why TLS was not verified or not used (certificate problem, refused STARTTLS, failed handshake). */
  tlsError: string | null = null;
  /** The negotiated TLS version and cipher, once TLS is up. */
  tlsVersion: string | null = null;
  tlsCipher: string | null = null;
  /** The local address of a direct connection, once it is up (null through a proxy). */
  localAddress: string | null = null;
  /** The dialogue step by step, when asked for with `recordDialogue`. */
  readonly dialogue: DialogueRecorder | null;
  /** The EHLO keywords (upper case) and their parameters; empty after a HELO fallback. */
  extensions: ReadonlyMap<string, string> = new Map();

  readonly #helo: string;
  readonly #timeouts: SessionTimeouts;
  readonly #sessionTimeoutMs: number;
  readonly #startTls: StartTlsPolicy;
  readonly #transcript: Transcript | null;
  readonly #onConnected: (() => void) | undefined;
  readonly #onQuitWritten: (() => void) | undefined;
  readonly #egress: Egress | undefined;
  #roundTripMs: number | null = null;

  #socket: Socket | TLSSocket | null = null;
  /** Resolves when the TCP connection is closed (at once when there never was one). */
  #closed: Promise<void> = Promise.resolve();
  #stage: SessionStage = 'connect';
  #failure: SessionFailure | null = null;
  /** A 421 the server sent: RFC 5321 §3.8, it closes the channel after it, so nothing else is coming. */
  #closingReply: SmtpReply | null = null;
  #finished = false;
  /** QUIT went out with the last transaction: the server closes once it has answered everything. */
  #quitSent = false;
  /** When QUIT was written, and when the last reply arrived (performance.now()). */
  #quitWrittenAt: number | null = null;
  #lastReplyAt = 0;
  #quitReplyWaitMs: number | null = null;
  #handshaking = false;
  #sessionTimer: NodeJS.Timeout | null = null;
  #pending: PendingStep | null = null;
  #replyWaiter: ((received: ReceivedReply) => void) | null = null;
  readonly #queuedReplies: ReceivedReply[] = [];
  /** Replies the server owes: one per command written, one for the greeting. */
  #repliesOwed = 0;
  #lineParts: Buffer[] = [];
  #lineBytes = 0;
  #replyLines: string[] = [];
  #replyBytes = 0;

  constructor(options: SmtpSessionOptions) {
    this.host = options.host;
    this.ip = options.ip;
    this.port = options.port;
    this.#helo = options.helo;
    this.#timeouts = { ...DEFAULT_SESSION_TIMEOUTS, ...options.timeouts };
    this.#sessionTimeoutMs = options.sessionTimeoutMs;
    this.#startTls = options.startTls ?? 'opportunistic';
    this.#transcript = options.transcript ?? null;
    this.dialogue = options.recordDialogue ? new DialogueRecorder() : null;
    this.#onConnected = options.onConnected;
    this.#onQuitWritten = options.onQuitWritten;
    this.#egress = options.egress;
  }

  /**
   * The round-trip time to the server as the EHLO exchange measured it (EHLO makes the server
   * do no more than answer), or null before one.
   */
  get roundTripMs(): number | null {
    return this.#roundTripMs;
  }

  /**
   * How long the QUIT's reply took from the moment the server could give it (QUIT written, or
   * the reply before it arrived, whichever was later), or null without one. More than a round
   * trip is a server holding its replies back: Postfix's error sleep delays the 221 too.
   */
  get quitReplyWaitMs(): number | null {
    return this.#quitReplyWaitMs;
  }

  /** Whether the server takes internationalised addresses (RFC 6531 §3.1). */
  get smtputf8(): boolean {
    return this.extensions.has('SMTPUTF8');
  }

  /** Whether commands may be sent in groups (RFC 2920 §3.1). */
  get pipelining(): boolean {
    return this.extensions.has('PIPELINING');
  }

  /**
   * Connects, reads the greeting, says EHLO (HELO when EHLO is not understood), and upgrades
   * to TLS per the policy. Throws SmtpSessionError; call quit() afterwards in any case.
   */
  async open(): Promise<void> {
    this.#sessionTimer = setTimeout(() => {
      this.#fail({
        kind: 'timeout',
        stage: this.#stage,
        reply: null,
        message: `the session exceeded its ${this.#sessionTimeoutMs} ms budget`,
      });
    }, this.#sessionTimeoutMs);
    this.#record('*', `connecting to ${this.host} [${this.ip}]:${this.port}`);
    await this.#connect();
    const greeting = await this.#readReply('banner', this.#timeouts.bannerMs);
    // RFC 5321 §3.1: 220 opens the session; 554 (or a 421 before closing) refuses it.
    if (greeting.reply.code !== 220)
      throw refusal('banner', greeting.reply, 'the server refused the session');
    await this.#greet();
    if (this.#startTls !== 'off') {
      if (this.extensions.has('STARTTLS')) await this.#upgradeToTls();
      else if (this.#startTls === 'required') throw tlsFailure('the server does not offer STARTTLS');
    }
    // A reply arriving after the last one read (a 421, or garbage) has already ended the session.
    this.#throwIfUnusable(this.#stage);
  }

  /**
   * One mail transaction: MAIL FROM, then RCPT TO for each recipient, all in one write when the
   * server offers PIPELINING (RFC 2920 §3.1 lets MAIL and RCPT go anywhere in a group). With
   * `quit`, the session's last transaction: QUIT ends the same group (RFC 2920 §3.1 lets it be
   * the last command of one), so leaving costs no round trip of its own; quit() then reads its
   * reply. Never throws: replies received before a failure are kept.
   */
  async transaction(
    reversePath: string,
    recipients: readonly string[],
    options: { smtputf8: boolean; reset?: boolean; quit?: boolean },
  ): Promise<TransactionOutcome> {
    const replies: SmtpReply[] = [];
    const timing = { sentAt: performance.now(), mailAt: 0, replyAt: [] as number[] };
    if (options.smtputf8 && !this.smtputf8) {
      const failure: SessionFailure = {
        kind: 'smtputf8_unsupported',
        stage: 'mail',
        reply: null,
        message: 'the server does not advertise SMTPUTF8',
      };
      return { replies, failure, timing };
    }
    // RFC 6531 §3.4: the SMTPUTF8 parameter declares that the envelope carries UTF-8.
    const mailCommand = `MAIL FROM:<${reversePath}>${options.smtputf8 ? ' SMTPUTF8' : ''}`;
    const rcptCommands = recipients.map((recipient) => `RCPT TO:<${recipient}>`);
    const rcpt = (received: ReceivedReply) => {
      replies.push(received.reply);
      timing.replyAt.push(received.at);
    };
    try {
      if (this.pipelining) {
        // RFC 2920 §3.1: RSET may open the group too, so a new transaction costs no extra round trip.
        this.#write(
          [
            ...(options.reset ? ['RSET'] : []),
            mailCommand,
            ...rcptCommands,
            ...(options.quit ? ['QUIT'] : []),
          ],
          'mail',
          [...(options.reset ? [undefined] : []), reversePath, ...recipients],
        );
        // Its reply waits in the queue for quit(), after whatever this transaction leaves unread.
        if (options.quit) this.#quitSent = true;
        if (options.reset) {
          const reset = await this.#readReply('mail', this.#timeouts.commandMs);
          if (reset.reply.code !== 250) {
            await this.#discardReplies(1 + rcptCommands.length);
            return {
              replies,
              failure: refusal('mail', reset.reply, 'the server refused RSET').failure,
              timing,
            };
          }
        }
        const mail = await this.#readReply('mail', this.#timeouts.commandMs);
        timing.mailAt = mail.at;
        if (!isPositive(mail.reply)) {
          // The RCPT replies after a refused MAIL are 503s about the missing MAIL, not about the
          // mailboxes: read them (to stay in step with the server) and drop them.
          await this.#discardReplies(rcptCommands.length);
          return { replies, failure: mailRefusal(mail.reply), timing };
        }
        for (let index = 0; index < rcptCommands.length; index++) {
          rcpt(await this.#readReply('rcpt', this.#timeouts.commandMs));
        }
        return { replies, failure: null, timing };
      }
      if (options.reset) await this.reset();
      timing.sentAt = performance.now();
      const mail = await this.#command(mailCommand, 'mail', this.#timeouts.commandMs, reversePath);
      timing.mailAt = mail.at;
      if (!isPositive(mail.reply)) return { replies, failure: mailRefusal(mail.reply), timing };
      for (const [index, command] of rcptCommands.entries()) {
        rcpt(await this.#command(command, 'rcpt', this.#timeouts.commandMs, recipients[index]));
      }
      return { replies, failure: null, timing };
    } catch (error) {
      return { replies, failure: failureOf(error), timing };
    }
  }

  /** One more RCPT TO in the open transaction. Throws SmtpSessionError. */
  async recipient(address: string): Promise<SmtpReply> {
    return (await this.#command(`RCPT TO:<${address}>`, 'rcpt', this.#timeouts.commandMs, address)).reply;
  }

  /** RSET: ends the transaction so the next can start (RFC 5321 §4.1.1.5). Throws SmtpSessionError. */
  async reset(): Promise<void> {
    const { reply } = await this.#command('RSET', 'mail');
    if (reply.code !== 250) throw refusal('mail', reply, 'the server refused RSET');
  }

  /**
   * Says QUIT (when the session is still usable), lets the server close first (RFC 5321
   * §4.1.1.10: it closes after its 221), and resolves once the connection is closed. Never throws.
   */
  async quit(): Promise<void> {
    if (this.#usable()) {
      try {
        const quitWaitMs = Math.min(this.#timeouts.commandMs, QUIT_WAIT_MS);
        if (this.#quitSent) await this.#readReply(this.#stage, quitWaitMs);
        else await this.#command('QUIT', this.#stage, quitWaitMs);
        this.#finished = true;
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([
          this.#closed,
          new Promise<void>((resolve) => {
            timer = setTimeout(resolve, QUIT_WAIT_MS);
          }),
        ]);
        clearTimeout(timer);
      } catch {
        // The server is gone or silent: we were leaving anyway.
      }
    }
    this.close();
    await this.#closed;
    // The server counts this session until it has read our FIN. An event-loop server that reads
    // the FIN and our next connection in the same turn counts both for a moment, so whoever
    // opens the next session to this host (the throttle's next waiter) starts a turn later.
    await nextTurn();
  }

  /** Drops the connection at once. Idempotent. */
  close(): void {
    this.#finished = true;
    this.dialogue?.finish();
    if (this.#sessionTimer) clearTimeout(this.#sessionTimer);
    this.#sessionTimer = null;
    if (this.#pending) {
      clearTimeout(this.#pending.timer);
      this.#pending = null;
    }
    this.#replyWaiter = null;
    this.#socket?.destroy();
  }

  #usable(): boolean {
    return this.#socket !== null && !this.#finished && this.#failure === null && this.#closingReply === null;
  }

  #connect(): Promise<void> {
    return this.#step('connect', this.#timeouts.connectMs, (done) => {
      const connected = () => {
        this.#repliesOwed = 1; // the greeting (RFC 5321 §4.3.1)
        this.dialogue?.connected();
        this.#onConnected?.();
        done(undefined);
      };
      const egress = this.#egress;
      if (egress?.kind === 'socks5') {
        const { socket, ready } = socks5Connect(
          egress.proxy,
          { host: this.ip, port: this.port },
          this.#timeouts.connectMs,
        );
        this.#socket = socket;
        this.#closed = new Promise((resolve) => socket.once('close', () => resolve()));
        ready.then(
          () => {
            if (this.#finished || this.#failure) return;
            // Listening now, in the turn `ready` resolved in, reads what the server already said.
            this.#listen(socket);
            connected();
          },
          (error: Error) =>
            this.#fail({
              kind: 'connection_failed',
              stage: 'connect',
              reply: null,
              message: `through ${egress.id}: ${error.message}`,
            }),
        );
        return;
      }
      const localAddress = egress?.kind === 'direct' ? egress.localAddress : null;
      const socket = tcpConnect({
        host: this.ip,
        port: this.port,
        noDelay: true,
        ...(localAddress ? { localAddress } : {}),
      });
      this.#socket = socket;
      this.#closed = new Promise((resolve) => socket.once('close', () => resolve()));
      this.#listen(socket);
      socket.once('connect', () => {
        this.localAddress = socket.localAddress ?? null;
        connected();
      });
    });
  }

  /** EHLO, or HELO for a server that does not know EHLO (RFC 5321 §3.2: 500 or 502). */
  async #greet(): Promise<void> {
    const sentAt = performance.now();
    const ehlo = await this.#command(`EHLO ${this.#helo}`, 'ehlo');
    this.#roundTripMs = Math.min(this.#roundTripMs ?? Number.POSITIVE_INFINITY, ehlo.at - sentAt);
    if (ehlo.reply.code === 250) {
      this.extensions = ehloKeywords(ehlo.lines);
      return;
    }
    if (ehlo.reply.code !== 500 && ehlo.reply.code !== 502) {
      throw refusal('ehlo', ehlo.reply, 'the server refused EHLO');
    }
    const helo = await this.#command(`HELO ${this.#helo}`, 'ehlo');
    if (helo.reply.code !== 250) throw refusal('ehlo', helo.reply, 'the server refused EHLO and HELO');
    this.extensions = new Map();
  }

  async #upgradeToTls(): Promise<void> {
    const { reply } = await this.#command('STARTTLS', 'starttls');
    if (reply.code !== 220) {
      // RFC 3207 §4: 454 "TLS not available" lets the client go on in plaintext if it will.
      if (this.#startTls === 'required') throw tlsFailure('the server refused STARTTLS', reply);
      this.tlsError = `STARTTLS refused: ${reply.code} ${reply.text}`.slice(0, 200);
      return;
    }
    // RFC 3207 §4.2: nothing received before the handshake may be trusted or kept. Bytes the
    // server sent after its 220 are an injection attempt (CVE-2011-0411 in reverse): drop them.
    this.#queuedReplies.length = 0;
    this.#lineParts = [];
    this.#lineBytes = 0;
    this.#replyLines = [];
    this.#replyBytes = 0;
    const plain = this.#socket;
    if (plain === null) throw tlsFailure('no connection to secure');
    plain.removeAllListeners('data');
    this.#handshaking = true;
    const secure = await this.#step<TLSSocket>('starttls', this.#timeouts.commandMs, (done) => {
      // SNI carries a host name only, without the final dot (RFC 6066 §3: "Literal IPv4 and
      // IPv6 addresses are not permitted"). The certificate is checked, but a failure is
      // recorded, not fatal.
      const serverName = this.host.replace(/\.$/, '');
      const socket = tlsConnect({
        socket: plain,
        ...(isIP(serverName) === 0 ? { servername: serverName } : {}),
        rejectUnauthorized: false,
      });
      this.#socket = socket;
      this.#listen(socket);
      socket.once('secureConnect', () => done(socket));
    });
    this.#handshaking = false;
    this.tls = true;
    this.tlsError = secure.authorized
      ? null
      : String(secure.authorizationError ?? 'certificate not verified');
    const cipher = secure.getCipher();
    this.tlsVersion = secure.getProtocol();
    this.tlsCipher = cipher.name;
    this.#record(
      '*',
      `TLS established: ${secure.getProtocol() ?? 'unknown protocol'} ${cipher.name}` +
        (this.tlsError ? `, certificate not verified (${this.tlsError})` : ''),
    );
    // RFC 3207 §4.2: forget the pre-TLS EHLO answer and ask again.
    this.extensions = new Map();
    await this.#greet();
  }

  #listen(socket: Socket | TLSSocket): void {
    socket.on('data', (chunk: Buffer) => this.#onData(chunk));
    socket.on('error', (error: NodeJS.ErrnoException) => this.#onSocketError(error));
    socket.on('close', () => this.#onSocketClose());
  }

  #onSocketError(error: NodeJS.ErrnoException): void {
    if (this.#finished) return;
    const detail = error.code ? `${error.code}: ${error.message}` : error.message;
    if (this.#stage === 'connect') {
      this.#fail({ kind: 'connection_failed', stage: 'connect', reply: null, message: detail });
    } else if (this.#handshaking) {
      this.#fail({
        kind: 'tls_failed',
        stage: 'starttls',
        reply: null,
        message: `TLS handshake failed: ${detail}`,
      });
    } else {
      this.#fail({ kind: 'disconnected', stage: this.#stage, reply: null, message: detail });
    }
  }

  #onSocketClose(): void {
    if (this.#finished) return;
    // RFC 5321 §4.1.1.10: after its 221 to our QUIT the server closes; nothing is lost.
    if (this.#quitSent && this.#repliesOwed === 0) {
      this.#finished = true;
      this.dialogue?.finish();
      return;
    }
    this.#fail(
      this.#handshaking
        ? {
            kind: 'tls_failed',
            stage: 'starttls',
            reply: null,
            message: 'the server closed the connection during the TLS handshake',
          }
        : {
            kind: 'disconnected',
            stage: this.#stage,
            reply: null,
            message: 'the server closed the connection',
          },
    );
  }

  #onData(chunk: Buffer): void {
    let start = 0;
    while (start < chunk.length && this.#failure === null && !this.#finished) {
      const newline = chunk.indexOf(0x0a, start);
      const end = newline === -1 ? chunk.length : newline;
      this.#lineBytes += end - start;
      if (this.#lineBytes > MAX_LINE_BYTES) {
        this.#fail(invalidResponse(this.#stage, `a reply line longer than ${MAX_LINE_BYTES} bytes`));
        return;
      }
      // A copy: a slice would keep the whole socket chunk alive for one short line.
      this.#lineParts.push(Buffer.from(chunk.subarray(start, end)));
      if (newline === -1) return;
      const line = Buffer.concat(this.#lineParts, this.#lineBytes).toString('utf8');
      this.#lineParts = [];
      this.#replyBytes += this.#lineBytes;
      this.#lineBytes = 0;
      // RFC 5321 §2.3.8 ends lines with CRLF; a bare LF is tolerated, as most clients do.
      this.#onLine(line.endsWith('\r') ? line.slice(0, -1) : line);
      start = newline + 1;
    }
  }

  #onLine(line: string): void {
    this.#record('S', line);
    if (!REPLY_LINE_START.test(line)) {
      this.#fail(
        invalidResponse(this.#stage, `not an SMTP reply line: ${JSON.stringify(line.slice(0, 80))}`),
      );
      return;
    }
    this.#replyLines.push(line);
    if (this.#replyLines.length > MAX_REPLY_LINES || this.#replyBytes > MAX_REPLY_BYTES) {
      this.#fail(
        invalidResponse(this.#stage, `a reply over ${MAX_REPLY_LINES} lines or ${MAX_REPLY_BYTES} bytes`),
      );
      return;
    }
    if (!isFinalReplyLine(line)) return;
    const lines = this.#replyLines;
    this.#replyLines = [];
    this.#replyBytes = 0;
    const reply = parseReplyLines(lines);
    if (reply === null) {
      // RFC 5321 §4.2.1: every line of a multi-line reply carries the same code.
      this.#fail(invalidResponse(this.#stage, 'a multi-line reply whose lines disagree on the code'));
      return;
    }
    this.#onReply({ reply, lines, at: performance.now() });
  }

  #onReply(received: ReceivedReply): void {
    const { reply } = received;
    if (this.#repliesOwed === 0) {
      // RFC 5321 §3.8: a server may announce its shutdown with 421 at any time. Any other reply
      // nobody asked for would shift every later reply onto the wrong command.
      if (reply.code !== 421) {
        this.#fail(
          invalidResponse(this.#stage, `a reply to no command: ${reply.code} ${reply.text.slice(0, 80)}`),
        );
        return;
      }
    } else {
      this.#repliesOwed--;
    }
    if (reply.code === 421) this.#closingReply = reply;
    // The reply that leaves nothing owed after QUIT is QUIT's: how long it took once the server
    // could give it (QUIT read, every reply before it sent).
    if (this.#quitWrittenAt !== null && this.#repliesOwed === 0 && this.#quitReplyWaitMs === null) {
      this.#quitReplyWaitMs = received.at - Math.max(this.#quitWrittenAt, this.#lastReplyAt);
    }
    this.#lastReplyAt = received.at;
    this.dialogue?.replied(reply, received.at);
    const waiter = this.#replyWaiter;
    if (waiter) {
      this.#replyWaiter = null;
      waiter(received);
      return;
    }
    this.#queuedReplies.push(received);
    if (this.#queuedReplies.length > MAX_QUEUED_REPLIES) {
      this.#fail(invalidResponse(this.#stage, `more than ${MAX_QUEUED_REPLIES} replies not asked for yet`));
    }
  }

  async #discardReplies(count: number): Promise<void> {
    try {
      for (let index = 0; index < count; index++) await this.#readReply('rcpt', this.#timeouts.commandMs);
    } catch {
      // The refusal that came first is the news; what the session did next is not.
    }
  }

  /** Writes `line` and reads its reply. */
  async #command(
    line: string,
    stage: SessionStage,
    timeoutMs = this.#timeouts.commandMs,
    path?: string,
  ): Promise<ReceivedReply> {
    this.#write([line], stage, [path]);
    return this.#readReply(stage, timeoutMs);
  }

  /** Writes `commands`; `paths[i]` is the MAIL FROM or RCPT TO path of `commands[i]`, for the dialogue. */
  #write(
    commands: readonly string[],
    stage: SessionStage,
    paths: readonly (string | undefined)[] = [],
  ): void {
    this.#stage = stage;
    this.#throwIfUnusable(stage);
    for (const command of commands) {
      // The probe's guard has already refused such input; this keeps the session safe on its own.
      const refusal = wireTextRefusal(command, 'an SMTP command');
      if (refusal)
        throw new SmtpSessionError({ kind: 'target_refused', stage: 'guard', reply: null, message: refusal });
    }
    for (const [index, command] of commands.entries()) {
      this.#record('C', command);
      this.dialogue?.sent(command, paths[index]);
    }
    this.#repliesOwed += commands.length;
    this.#socket?.write(commands.map((command) => `${command}\r\n`).join(''));
    if (commands.at(-1) === 'QUIT') {
      this.#quitWrittenAt = performance.now();
      this.#onQuitWritten?.();
    }
  }

  #readReply(stage: SessionStage, timeoutMs: number): Promise<ReceivedReply> {
    this.#stage = stage;
    const queued = this.#queuedReplies.shift();
    if (queued) return Promise.resolve(queued);
    return this.#step(stage, timeoutMs, (done) => {
      this.#replyWaiter = done;
    });
  }

  /** Waits for what `start` sets going, failing the session when `timeoutMs` pass first. */
  #step<T>(stage: SessionStage, timeoutMs: number, start: (done: (value: T) => void) => void): Promise<T> {
    this.#stage = stage;
    try {
      this.#throwIfUnusable(stage);
    } catch (error) {
      return Promise.reject(error);
    }
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#fail({
          kind: 'timeout',
          stage,
          reply: null,
          message: `no ${describeWait(stage)} within ${timeoutMs} ms`,
        });
      }, timeoutMs);
      this.#pending = { reject, timer };
      try {
        start((value) => {
          clearTimeout(timer);
          this.#pending = null;
          resolve(value);
        });
      } catch (error) {
        // net.connect and tls.connect throw on arguments they refuse (a port out of range).
        const message = error instanceof Error ? error.message : String(error);
        this.#fail({
          kind: stage === 'connect' ? 'connection_failed' : 'disconnected',
          stage,
          reply: null,
          message,
        });
      }
    });
  }

  #throwIfUnusable(stage: SessionStage): void {
    const error = this.#unusableError(stage);
    if (error) throw error;
  }

  /** Why no step can run any more, or null while the session is usable. */
  #unusableError(stage: SessionStage): SmtpSessionError | null {
    if (this.#closingReply) {
      return new SmtpSessionError({
        kind: 'rejected',
        stage,
        reply: this.#closingReply,
        message: 'the server is closing the connection (421)',
      });
    }
    if (this.#failure) return new SmtpSessionError({ ...this.#failure });
    if (this.#finished) {
      return new SmtpSessionError({
        kind: 'disconnected',
        stage,
        reply: null,
        message: 'the session is closed',
      });
    }
    return null;
  }

  /** Ends the session for `failure`: rejects the step waiting, drops the connection. */
  #fail(failure: SessionFailure): void {
    if (this.#failure !== null || this.#finished) return;
    this.#failure = failure;
    this.#record('*', `${failure.kind} at ${failure.stage}: ${failure.message}`);
    this.dialogue?.failed(`${failure.kind} at ${failure.stage}: ${failure.message}`);
    const pending = this.#pending;
    this.#pending = null;
    this.#replyWaiter = null;
    if (this.#sessionTimer) clearTimeout(this.#sessionTimer);
    this.#sessionTimer = null;
    this.#socket?.destroy();
    if (pending) {
      clearTimeout(pending.timer);
      pending.reject(this.#unusableError(failure.stage) ?? new SmtpSessionError(failure));
    }
  }

  #record(direction: 'S' | 'C' | '*', text: string): void {
    this.#transcript?.record(direction, text);
  }
}

/** The SMTP dialogue as lines `S: …` (server), `C: …` (client) and `* …` (what happened), bounded. */
export class Transcript {
  readonly lines: string[] = [];
  readonly #maxLines: number;
  readonly #maxLineLength: number;

  constructor(limits: { maxLines?: number; maxLineLength?: number } = {}) {
    this.#maxLines = limits.maxLines ?? 1_000;
    this.#maxLineLength = limits.maxLineLength ?? 512;
  }

  record(direction: 'S' | 'C' | '*', text: string): void {
    if (this.lines.length > this.#maxLines) return;
    if (this.lines.length === this.#maxLines) {
      this.lines.push('* transcript truncated');
      return;
    }
    // Control characters from the server would reach an operator's terminal: show them escaped.
    const printable = text.replace(
      /\p{Cc}/gu,
      (character) => `\\x${(character.codePointAt(0) ?? 0).toString(16).padStart(2, '0')}`,
    );
    const shown =
      printable.length > this.#maxLineLength ? `${printable.slice(0, this.#maxLineLength)}…` : printable;
    this.lines.push(direction === '*' ? `* ${shown}` : `${direction}: ${shown}`);
  }
}

/** The SessionFailure an error stands for; anything unexpected is reported, not thrown on. */
export function failureOf(error: unknown, stage: SessionStage = 'connect'): SessionFailure {
  if (error instanceof SmtpSessionError) return error.failure;
  return {
    kind: 'disconnected',
    stage,
    reply: null,
    message: error instanceof Error ? error.message : String(error),
  };
}

/** RFC 5321 §4.1.1.1: the EHLO reply's lines after the first are "keyword [params]". */
function ehloKeywords(lines: readonly string[]): Map<string, string> {
  const keywords = new Map<string, string>();
  for (const line of lines.slice(1)) {
    const [keyword, ...params] = line.slice(4).trim().split(/\s+/);
    if (keyword) keywords.set(keyword.toUpperCase(), params.join(' '));
  }
  return keywords;
}

function isPositive(reply: SmtpReply): boolean {
  return reply.code >= 200 && reply.code < 300;
}

function refusal(stage: SessionStage, reply: SmtpReply, message: string): SmtpSessionError {
  return new SmtpSessionError({ kind: 'rejected', stage, reply, message: `${message} (${reply.code})` });
}

function mailRefusal(reply: SmtpReply): SessionFailure {
  return { kind: 'rejected', stage: 'mail', reply, message: `the server refused MAIL FROM (${reply.code})` };
}

function tlsFailure(message: string, reply: SmtpReply | null = null): SmtpSessionError {
  return new SmtpSessionError({ kind: 'tls_failed', stage: 'starttls', reply, message });
}

function invalidResponse(stage: SessionStage, message: string): SessionFailure {
  return { kind: 'invalid_response', stage, reply: null, message };
}

function describeWait(stage: SessionStage): string {
  if (stage === 'connect') return 'TCP connection';
  if (stage === 'banner') return 'greeting';
  if (stage === 'starttls') return 'STARTTLS answer or TLS handshake';
  return `reply at ${stage}`;
}

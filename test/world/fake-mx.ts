// One fake MX: an smtp-server instance (or, for the tarpit, a bare TCP listener) on its own
// loopback address, counting what tests want to assert on: connections and RCPTs.
import { createServer, type Server, type Socket } from 'node:net';
import {
  SMTPServer,
  type SMTPServerError,
  type SMTPServerOptions,
  type SMTPServerSession,
} from 'smtp-server';
import type { MxBehaviour } from './behaviours.ts';
import { smtpReply } from './behaviours.ts';
import { emptyStats, type MxStats } from './defences.ts';
import { listenOnLoopback } from './loopback.ts';
import type { TlsCredentials } from './self-signed-certificate.ts';

export interface FakeMx {
  name: string;
  ip: string;
  port: number;
  /** Connections open now. */
  connections(): number;
  /** The most connections that were open at once since the start or the last resetStats(). */
  maxConcurrent(): number;
  /** RCPT TO addresses seen, in order, whatever the answer. */
  received(): readonly string[];
  /** The counters since the start or the last resetStats() (the defence ones stay 0 where there are none). */
  stats(): MxStats;
  /** Sessions opened from the client address `client` since the start or the last resetStats(). */
  sessionsFrom(client: string): number;
  resetStats(): void;
}

export interface RunningMx extends FakeMx {
  /** Stops listening and drops every open connection at once. */
  close(): Promise<void>;
}

// Big enough for any probe; advertised because real MX hosts do (RFC 1870).
const MAX_MESSAGE_SIZE = 35 * 1024 * 1024;

/** Open TCP connections of one listener, their high-water mark, and the sockets to drop on close. */
class ConnectionTally {
  readonly sockets = new Set<Socket>();
  highWater = 0;
  opened = 0;
  readonly byClient = new Map<string, number>();

  watch(listener: Server): void {
    listener.on('connection', (socket: Socket) => {
      this.sockets.add(socket);
      this.opened++;
      const client = socket.remoteAddress ?? 'unknown';
      this.byClient.set(client, (this.byClient.get(client) ?? 0) + 1);
      this.highWater = Math.max(this.highWater, this.sockets.size);
      socket.once('close', () => this.sockets.delete(socket));
    });
  }
}

export interface FakeMxSpec {
  name: string;
  host: string;
  ip: string;
}

/** Starts an SMTP fake MX behaving as `behaviour` on `ip`:`port` (0 = a free port). */
export async function startSmtpMx(
  spec: FakeMxSpec,
  behaviour: MxBehaviour,
  port: number,
  certificate: TlsCredentials,
): Promise<RunningMx> {
  const received: string[] = [];
  let rejected = 0;
  const tally = new ConnectionTally();
  const sessionsServed = new Set<string>();
  // RFC 6531 §3.5: a non-ASCII address needs SMTPUTF8, advertised and declared on MAIL FROM.
  const refuseNonAscii = (address: string, session: SMTPServerSession): SMTPServerError | null =>
    isAscii(address) || (behaviour.smtputf8 && session.envelope.smtpUtf8 === true)
      ? null
      : smtpReply(553, `5.6.7 <${address}>: non-ASCII address requires SMTPUTF8`);

  const options: SMTPServerOptions = {
    name: spec.host,
    banner: 'rcpt fake MX',
    heloResponse: '%s',
    secure: false,
    size: MAX_MESSAGE_SIZE,
    logger: false,
    // The default looks up the client's PTR record through the system resolver: off the loopback.
    disableReverseLookup: true,
    hideSMTPUTF8: !behaviour.smtputf8,
    ...(behaviour.tls === 'none' ? {} : certificate),
    ...(behaviour.tls === 'required'
      ? {
          // smtp-server has no "TLS required" switch, but it answers MAIL, RCPT and DATA with
          // authRequiredMessage while a session has no user, before any other check; onSecure
          // gives the session a user once TLS is up. So every one of them gets Postfix's 530.
          authOptional: false,
          authRequiredMessage: '5.7.0 Must issue a STARTTLS command first',
          maxAllowedUnauthenticatedCommands: Number.POSITIVE_INFINITY,
          disabledCommands: [],
        }
      : { authOptional: true, disabledCommands: behaviour.tls === 'none' ? ['AUTH', 'STARTTLS'] : ['AUTH'] }),

    onConnect(session, callback) {
      if (behaviour.greetingRefusal) return callback(behaviour.greetingRefusal);
      if (behaviour.maxSessions !== undefined && sessionsServed.size >= behaviour.maxSessions) {
        return callback(smtpReply(421, '4.7.0 Too many concurrent connections'));
      }
      sessionsServed.add(session.id);
      callback();
    },
    onClose(session) {
      sessionsServed.delete(session.id);
    },
    onSecure(_socket, session, callback) {
      if (behaviour.tls === 'required') session.user = 'tls';
      callback();
    },
    onMailFrom(address, session, callback) {
      const declaresSmtputf8 = address.args !== false && address.args.SMTPUTF8 === true;
      if (declaresSmtputf8 && !behaviour.smtputf8) {
        // What Postfix says with smtputf8_enable = no.
        return callback(smtpReply(555, '5.5.4 Unsupported option: SMTPUTF8'));
      }
      callback(refuseNonAscii(address.address, session) ?? undefined);
    },
    onRcptTo(address, session, callback) {
      received.push(address.address);
      const refusal = refuseNonAscii(address.address, session) ?? behaviour.rcpt(address.address, session);
      if (refusal) rejected++;
      callback(refusal ?? undefined);
    },
  };
  const server = new SMTPServer(options);
  // Clients of the world hang up mid-session on purpose (timeouts, tests); those socket errors
  // reach the server's 'error' event and must not crash the process. Listen errors are
  // reported by listenOnLoopback.
  server.on('error', () => {});
  tally.watch(server.server);
  const boundPort = await listenOnLoopback(server.server, spec.ip, port);

  return {
    name: spec.name,
    ip: spec.ip,
    port: boundPort,
    connections: () => tally.sockets.size,
    maxConcurrent: () => tally.highWater,
    received: () => [...received],
    stats: () => ({
      ...emptyStats(),
      sessionsOpened: tally.opened,
      maxConcurrentSessions: tally.highWater,
      rcpts: received.length,
      rejectedRcpts: rejected,
    }),
    sessionsFrom: (client) => tally.byClient.get(client) ?? 0,
    resetStats() {
      received.length = 0;
      rejected = 0;
      tally.opened = 0;
      tally.byClient.clear();
      tally.highWater = tally.sockets.size;
    },
    close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // Destroy from the top: after STARTTLS that is the TLS socket, not the TCP one under it.
      for (const connection of server.connections) connection._socket.destroy();
      for (const socket of tally.sockets) socket.destroy();
      return closed;
    },
  };
}

/** A tarpit: accepts TCP connections, reads and discards what comes, never sends a byte. */
export async function startTarpitMx(spec: FakeMxSpec, port: number): Promise<RunningMx> {
  const tally = new ConnectionTally();
  const server = createServer((socket) => {
    socket.resume();
    socket.on('error', () => {});
  });
  tally.watch(server);
  const boundPort = await listenOnLoopback(server, spec.ip, port);

  return {
    name: spec.name,
    ip: spec.ip,
    port: boundPort,
    connections: () => tally.sockets.size,
    maxConcurrent: () => tally.highWater,
    received: () => [],
    stats: () => ({ ...emptyStats(), sessionsOpened: tally.opened, maxConcurrentSessions: tally.highWater }),
    sessionsFrom: (client) => tally.byClient.get(client) ?? 0,
    resetStats() {
      tally.opened = 0;
      tally.byClient.clear();
      tally.highWater = tally.sockets.size;
    },
    close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of tally.sockets) socket.destroy();
      return closed;
    },
  };
}

function isAscii(text: string): boolean {
  return /^\p{ASCII}*$/u.test(text);
}

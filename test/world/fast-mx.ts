// The scale MX: the mailbox rule over a bare socket, answering as soon as a command arrives
// (smtp-server holds every greeting 100 ms to catch early talkers, which would be most of what
// a benchmark measured). With `defences` it behaves as a Postfix, Exchange or postgrey server
// with their documented defaults does (see defences.ts): errors counted per connection, every
// reply late past the soft limit, a hang-up at the hard limit, a cap on the connections of one
// client address, rate limits, a tarpit, one recipient per transaction and greylisting. The
// distance to it is the world's network path (network-path.ts).
import { createServer, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { Greylist, mailboxExists, userUnknownText } from './behaviours.ts';
import { blocklistReply, emptyStats, type MxDefences, RateWindow } from './defences.ts';
import type { FakeMxSpec, RunningMx } from './fake-mx.ts';
import { listenOnLoopback } from './loopback.ts';

/** RFC 5321 §4.5.3.1.4: a command line is at most 512 octets; leave room for extensions. */
const MAX_LINE = 4096;

interface Reply {
  text: string;
  /** Postfix counts it in the session's error count (a 4xx or 5xx to a command). */
  error: boolean;
  /** Held back this long before it is sent (the tarpit). */
  delayMs?: number;
  quit?: boolean;
}

/** One client connection: the state Postfix's smtpd keeps per session. */
interface Connection {
  socket: Socket;
  client: string;
  errors: number;
  mailFrom: string | null;
  recipientsInTransaction: number;
  /** Commands are answered one after another, each after the previous reply (and its delays). */
  queue: Promise<void>;
  /** Replies not written yet: pipelined replies go out together, as Postfix flushes its output once the input is drained. */
  out: string[];
  ended: boolean;
}

function flush(connection: Connection): void {
  if (connection.out.length === 0) return;
  if (!connection.socket.destroyed) connection.socket.write(`${connection.out.join('\r\n')}\r\n`);
  connection.out = [];
}

export async function startFastMx(
  spec: FakeMxSpec,
  port: number,
  defences: MxDefences = {},
): Promise<RunningMx> {
  const sockets = new Set<Socket>();
  const sessionsByClient = new Map<string, number>();
  // Sessions each client opened (for tests), kept apart from the open ones the limit counts.
  const openedByClient = new Map<string, number>();
  let sessionsOpen = 0;
  let stats = emptyStats();
  let received: string[] = [];
  const rateWindowMs = defences.rateWindowMs ?? 60_000;
  const connectionRate = new RateWindow(rateWindowMs);
  const recipientRate = new RateWindow(rateWindowMs);
  const greylist = defences.greylistDelayMs === undefined ? null : new Greylist(defences.greylistDelayMs);

  const rcpt = (connection: Connection, line: string): Reply => {
    const address = /<([^>]*)>/.exec(line)?.[1] ?? '';
    received.push(address);
    stats.rcpts++;
    const reject = (text: string): Reply => {
      stats.rejectedRcpts++;
      return { text, error: true };
    };
    if (connection.mailFrom === null) return reject('503 5.5.1 Error: need MAIL command');
    if (defences.blocklistedClients?.includes(connection.client)) {
      stats.blocklisted++;
      return reject(blocklistReply(connection.client));
    }
    const perTransaction = defences.recipientsPerTransaction;
    if (perTransaction !== undefined && connection.recipientsInTransaction >= perTransaction) {
      stats.rejectedRcpts++;
      stats.tooManyRecipients++;
      return { text: '452 4.5.3 Error: too many recipients', error: false };
    }
    if (
      defences.recipientRateLimit !== undefined &&
      recipientRate.hit(connection.client, performance.now()) > defences.recipientRateLimit
    ) {
      stats.recipientRateRefusals++;
      return reject(`450 4.7.1 Error: too many recipients from ${connection.client}`);
    }
    const deferral = greylist?.check(connection.client, connection.mailFrom, address) ?? null;
    if (deferral !== null) {
      stats.greylisted++;
      return reject(`450 ${deferral}`);
    }
    if (mailboxExists(address)) {
      connection.recipientsInTransaction++;
      return { text: '250 Accepted', error: false };
    }
    const refusal = reject(`550 ${userUnknownText(address)}`);
    if (defences.tarpitMs !== undefined) {
      stats.tarpitted++;
      refusal.delayMs = defences.tarpitMs;
    }
    return refusal;
  };

  const answer = (connection: Connection, line: string): Reply => {
    const verb = line.slice(0, 4).toUpperCase();
    switch (verb) {
      case 'EHLO':
        return {
          text: `250-${spec.host}\r\n250-PIPELINING\r\n250-8BITMIME\r\n250 SIZE 36700160`,
          error: false,
        };
      case 'HELO':
        return { text: `250 ${spec.host}`, error: false };
      // The same success texts as the smtp-server-based servers of the world.
      case 'MAIL':
        connection.mailFrom = /<([^>]*)>/.exec(line)?.[1] ?? '';
        connection.recipientsInTransaction = 0;
        return { text: '250 Accepted', error: false };
      case 'RCPT':
        return rcpt(connection, line);
      case 'RSET':
        connection.mailFrom = null;
        connection.recipientsInTransaction = 0;
        return { text: '250 2.0.0 Ok', error: false };
      case 'NOOP':
        return { text: '250 2.0.0 Ok', error: false };
      case 'QUIT':
        return { text: '221 2.0.0 Bye', error: false, quit: true };
      default:
        return { text: '502 5.5.2 Error: command not recognized', error: true };
    }
  };

  /** The session is over for the server: it no longer counts against the client's limit. */
  const endSession = (connection: Connection) => {
    if (connection.ended) return;
    connection.ended = true;
    sessionsOpen--;
    const open = (sessionsByClient.get(connection.client) ?? 1) - 1;
    if (open > 0) sessionsByClient.set(connection.client, open);
    else sessionsByClient.delete(connection.client);
  };

  /** Sends `text`, first sleeping as Postfix does for a client past the soft error limit. */
  const send = async (connection: Connection, text: string, extraDelayMs = 0): Promise<void> => {
    let delayMs = extraDelayMs;
    // Postfix smtpd_chat_reply(): once the error count has reached smtpd_soft_error_limit,
    // every reply waits smtpd_error_sleep_time, whatever the command.
    if (defences.softErrorLimit !== undefined && connection.errors >= defences.softErrorLimit) {
      delayMs += defences.errorSleepMs ?? 0;
      stats.errorSleeps++;
    }
    if (delayMs > 0) {
      // What was answered before the pause is on its way; this reply comes after it.
      flush(connection);
      await sleep(delayMs);
    }
    connection.out.push(text);
  };

  const handle = async (connection: Connection, line: string): Promise<void> => {
    if (connection.ended) return;
    const reply = answer(connection, line);
    await send(connection, reply.text, reply.delayMs);
    if (reply.quit) {
      endSession(connection);
      flush(connection);
      connection.socket.end();
      return;
    }
    if (reply.error) connection.errors++;
    // Postfix checks the hard limit before reading the next command: the 421 follows the reply
    // that reached it, unasked, and the session ends. The log says "too many errors after RCPT".
    if (defences.hardErrorLimit !== undefined && connection.errors >= defences.hardErrorLimit) {
      stats.hardLimitHangups++;
      await send(connection, `421 4.7.0 ${spec.host} Error: too many errors`);
      endSession(connection);
      flush(connection);
      connection.socket.end();
    }
  };

  const refuse = (socket: Socket, text: string) => {
    socket.end(`421 4.7.0 ${spec.host} Error: ${text}\r\n`);
  };

  const server = createServer((socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
    socket.setEncoding('latin1');
    const client = socket.remoteAddress ?? 'unknown';
    // anvil(8): the connection is counted first, then compared with the limits.
    if (
      defences.connectionRateLimit !== undefined &&
      connectionRate.hit(client, performance.now()) > defences.connectionRateLimit
    ) {
      stats.connectionRateRefusals++;
      refuse(socket, `too many connections from ${client}`);
      return;
    }
    const fromClient = (sessionsByClient.get(client) ?? 0) + 1;
    if (defences.connectionCountLimit !== undefined && fromClient > defences.connectionCountLimit) {
      stats.connectionCapRefusals++;
      refuse(socket, `too many connections from ${client}`);
      return;
    }
    sessionsByClient.set(client, fromClient);
    openedByClient.set(client, (openedByClient.get(client) ?? 0) + 1);
    sessionsOpen++;
    stats.sessionsOpened++;
    stats.maxConcurrentSessions = Math.max(stats.maxConcurrentSessions, sessionsOpen);

    const connection: Connection = {
      socket,
      client,
      errors: 0,
      mailFrom: null,
      recipientsInTransaction: 0,
      queue: Promise.resolve(),
      out: [],
      ended: false,
    };
    socket.setNoDelay(true);
    socket.once('close', () => endSession(connection));
    socket.write(`220 ${spec.host} ESMTP rcpt fake MX\r\n`);
    let buffered = '';
    socket.on('data', (chunk: string) => {
      buffered += chunk;
      if (buffered.length > MAX_LINE && !buffered.includes('\n')) {
        socket.destroy();
        return;
      }
      // Pipelined commands (RFC 2920) are answered in order.
      const lines = buffered.split('\r\n');
      buffered = lines.pop() ?? '';
      if (lines.length === 0) return;
      for (const line of lines) {
        connection.queue = connection.queue.then(() => handle(connection, line));
      }
      connection.queue = connection.queue.then(() => flush(connection));
    });
  });
  server.maxConnections = 10_000;
  const boundPort = await listenOnLoopback(server, spec.ip, port);
  return {
    name: spec.name,
    ip: spec.ip,
    port: boundPort,
    connections: () => sessionsOpen,
    maxConcurrent: () => stats.maxConcurrentSessions,
    received: () => [...received],
    stats: () => ({ ...stats }),
    sessionsFrom: (client) => openedByClient.get(client) ?? 0,
    resetStats() {
      stats = emptyStats();
      openedByClient.clear();
      stats.maxConcurrentSessions = sessionsOpen;
      received = [];
    },
    close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of sockets) socket.destroy();
      return closed;
    },
  };
}

// The benchmark MX: the mailbox rule over a bare socket, answering as soon as a command
// arrives. smtp-server holds every greeting 100 ms to catch early talkers, which would be
// most of what a latency benchmark measured; real servers vary, so the benchmarks use this.
import { createServer, type Socket } from 'node:net';
import { mailboxExists } from './behaviours.ts';
import type { FakeMxSpec, RunningMx } from './fake-mx.ts';
import { listenOnLoopback } from './loopback.ts';

/** RFC 5321 §4.5.3.1.4: a command line is at most 512 octets; leave room for extensions. */
const MAX_LINE = 4096;

export async function startFastMx(spec: FakeMxSpec, port: number): Promise<RunningMx> {
  const sockets = new Set<Socket>();
  let highWater = 0;
  let received: string[] = [];

  const answer = (line: string): { reply: string; quit?: boolean } => {
    const verb = line.slice(0, 4).toUpperCase();
    switch (verb) {
      case 'EHLO':
        return { reply: `250-${spec.host}\r\n250-PIPELINING\r\n250-8BITMIME\r\n250 SIZE 36700160` };
      case 'HELO':
        return { reply: `250 ${spec.host}` };
      // The same success texts as the smtp-server-based servers of the world.
      case 'MAIL':
        return { reply: '250 Accepted' };
      case 'RCPT': {
        const address = /<([^>]*)>/.exec(line)?.[1] ?? '';
        received.push(address);
        return {
          reply: mailboxExists(address)
            ? '250 Accepted'
            : `550 5.1.1 <${address}>: Recipient address rejected: User unknown in local recipient table`,
        };
      }
      case 'RSET':
        return { reply: '250 2.0.0 Ok' };
      case 'NOOP':
        return { reply: '250 2.0.0 Ok' };
      case 'QUIT':
        return { reply: '221 2.0.0 Bye', quit: true };
      default:
        return { reply: '502 5.5.2 Error: command not recognized' };
    }
  };

  const server = createServer((socket) => {
    sockets.add(socket);
    highWater = Math.max(highWater, sockets.size);
    socket.once('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
    socket.setEncoding('latin1');
    socket.write(`220 ${spec.host} ESMTP rcpt fake MX\r\n`);
    let buffered = '';
    socket.on('data', (chunk: string) => {
      buffered += chunk;
      if (buffered.length > MAX_LINE && !buffered.includes('\n')) {
        socket.destroy();
        return;
      }
      // Pipelined commands (RFC 2920) are answered together, in order, in one write.
      const lines = buffered.split('\r\n');
      buffered = lines.pop() ?? '';
      const replies: string[] = [];
      let quit = false;
      for (const line of lines) {
        const { reply, quit: isQuit } = answer(line);
        replies.push(reply);
        if (isQuit) {
          quit = true;
          break;
        }
      }
      if (replies.length === 0) return;
      const payload = `${replies.join('\r\n')}\r\n`;
      if (quit) socket.end(payload);
      else socket.write(payload);
    });
  });
  server.maxConnections = 10_000;
  const boundPort = await listenOnLoopback(server, spec.ip, port);
  return {
    name: spec.name,
    ip: spec.ip,
    port: boundPort,
    connections: () => sockets.size,
    maxConcurrent: () => highWater,
    received: () => [...received],
    resetStats() {
      highWater = sockets.size;
      received = [];
    },
    close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of sockets) socket.destroy();
      return closed;
    },
  };
}

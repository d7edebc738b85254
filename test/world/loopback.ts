// The world only ever listens on loopback: tests must not open anything reachable from outside.
import type { Server } from 'node:net';

// A benchmark opens hundreds of connections at once; past Node's default backlog of 511 the
// kernel drops SYNs and the client retries a second later, which would measure the backlog.
const ACCEPT_BACKLOG = 4096;

/** Starts `server` on `ip`:`port` (0 = any free port) and resolves with the port it got. */
export function listenOnLoopback(server: Server, ip: string, port: number): Promise<number> {
  if (!ip.startsWith('127.')) throw new Error(`the mail world listens on 127.0.0.0/8 only, not ${ip}`);
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host: ip, port, backlog: ACCEPT_BACKLOG }, () => {
      server.off('error', reject);
      const address = server.address();
      if (address === null || typeof address === 'string') reject(new Error(`no TCP address for ${ip}`));
      else resolve(address.port);
    });
  });
}

/** Whether `error` says the port is taken on that address. */
export function isAddressInUse(error: unknown): boolean {
  return error instanceof Error && (error as NodeJS.ErrnoException).code === 'EADDRINUSE';
}

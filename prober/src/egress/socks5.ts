// A SOCKS5 client (RFC 1928) with username/password authentication (RFC 1929), for operators
// who rent proxy addresses to send SMTP from. The protocol is the `socks` package's; this file
// only gives the session a socket at once (so it can destroy it on its own deadline) and errors
// that never carry the proxy's credentials. What flows over the stream afterwards (SMTP,
// STARTTLS) is the session's business.
import { type Socket, connect as tcpConnect } from 'node:net';
import { SocksClient } from 'socks';
import type { Socks5Proxy } from './egress.ts';

export class Socks5Error extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'Socks5Error';
  }
}

/**
 * Dials `proxy` and asks it to CONNECT to `target`. The socket is returned at once, for the
 * caller to destroy on its deadline of `deadlineMs`; `socks`'s own timer (30 s unless told) is
 * set a second past it, so the caller's deadline is the one that ends a slow handshake and the
 * library's timer, which outlives the connection, holds it no longer. `ready` resolves once
 * the proxy has connected. Attach the `data` listener when it resolves: bytes the
 * target sent along with the proxy's reply come as the first `data` event, on the next turn of
 * the event loop, when `socks` resumes the socket.
 */
export function socks5Connect(
  proxy: Socks5Proxy,
  target: { host: string; port: number },
  deadlineMs: number,
): { socket: Socket; ready: Promise<void> } {
  const socket = tcpConnect({ host: proxy.host, port: proxy.port, noDelay: true });
  const ready = new Promise<void>((resolve, reject) => {
    const onError = (error: Error) => reject(new Socks5Error(`proxy connection failed: ${error.message}`));
    const onClose = () => reject(new Socks5Error('the proxy closed the connection'));
    socket.once('error', onError);
    socket.once('close', onClose);
    socket.once('connect', () => {
      socket.off('error', onError);
      socket.off('close', onClose);
      SocksClient.createConnection({
        proxy: {
          host: proxy.host,
          port: proxy.port,
          type: 5,
          ...(proxy.username === null ? {} : { userId: proxy.username, password: proxy.password ?? '' }),
        },
        command: 'connect',
        destination: target,
        existing_socket: socket,
        timeout: deadlineMs + 1_000,
      }).then(
        () => resolve(),
        // A SocksClientError holds the options it was given, password included: keep its message only.
        (error: Error) => reject(new Socks5Error(error.message)),
      );
    });
  });
  return { socket, ready };
}

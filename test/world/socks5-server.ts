// A SOCKS5 proxy (RFC 1928) with username/password authentication (RFC 1929), as operators
// rent them: the prober's SMTP sessions go out through it and the mail server sees the proxy's
// outgoing address (`exitAddress`), not the prober's. It serves CONNECT only (RFC 1928 §4: BIND
// and UDP ASSOCIATE answer "command not supported", as most rented proxies do) and, like every
// server of the fake world, reaches only loopback addresses.
import { createServer, isIP, type Server, type Socket, connect as tcpConnect } from 'node:net';
import { listenOnLoopback } from './loopback.ts';

export interface Socks5ServerOptions {
  /** Where it listens; default 127.0.0.1. */
  host?: string;
  port?: number;
  /** Required credentials; none: clients are taken without authentication (method 0x00). */
  credentials?: { username: string; password: string };
  /** The local address its outgoing connections bind to: the address mail servers see. */
  exitAddress?: string;
}

export interface Socks5Server {
  host: string;
  port: number;
  /** `socks5://user:pass@host:port` for SOCKS5_PROXIES. */
  url: string;
  stats(): { connects: number; authFailures: number };
  close(): Promise<void>;
}

const VERSION = 0x05;
const NO_AUTHENTICATION = 0x00;
const USERNAME_PASSWORD = 0x02;
const NO_ACCEPTABLE_METHOD = 0xff;

export async function startSocks5Server(options: Socks5ServerOptions = {}): Promise<Socks5Server> {
  const host = options.host ?? '127.0.0.1';
  const sockets = new Set<Socket>();
  const counts = { connects: 0, authFailures: 0 };
  const server: Server = createServer((client) => {
    sockets.add(client);
    client.once('close', () => sockets.delete(client));
    client.on('error', () => client.destroy());
    void serve(client, options, counts, sockets).catch(() => client.destroy());
  });
  const port = await listenOnLoopback(server, host, options.port ?? 0);
  const credentials = options.credentials
    ? `${encodeURIComponent(options.credentials.username)}:${encodeURIComponent(options.credentials.password)}@`
    : '';
  return {
    host,
    port,
    url: `socks5://${credentials}${host}:${port}`,
    stats: () => ({ ...counts }),
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/** Reads exactly what each step of the handshake needs, in order. */
class Reader {
  #buffer = Buffer.alloc(0);
  #waiter: (() => void) | null = null;
  #ended = false;

  constructor(socket: Socket) {
    socket.on('data', (chunk: Buffer) => {
      this.#buffer = Buffer.concat([this.#buffer, chunk]);
      this.#waiter?.();
    });
    socket.on('close', () => {
      this.#ended = true;
      this.#waiter?.();
    });
  }

  async bytes(count: number): Promise<Buffer> {
    while (this.#buffer.length < count) {
      if (this.#ended) throw new Error('client went away');
      await new Promise<void>((resolve) => {
        this.#waiter = resolve;
      });
      this.#waiter = null;
    }
    const taken = this.#buffer.subarray(0, count);
    this.#buffer = this.#buffer.subarray(count);
    return taken;
  }

  /** What arrived past the handshake (the client may pipeline its first bytes). */
  rest(): Buffer {
    return this.#buffer;
  }
}

async function serve(
  client: Socket,
  options: Socks5ServerOptions,
  counts: { connects: number; authFailures: number },
  sockets: Set<Socket>,
): Promise<void> {
  const reader = new Reader(client);
  // RFC 1928 §3: VER NMETHODS METHODS.
  const [version = 0, methodCount = 0] = await reader.bytes(2);
  if (version !== VERSION) return void client.destroy();
  const methods = [...(await reader.bytes(methodCount))];
  const wanted = options.credentials ? USERNAME_PASSWORD : NO_AUTHENTICATION;
  if (!methods.includes(wanted)) return void client.end(Buffer.from([VERSION, NO_ACCEPTABLE_METHOD]));
  client.write(Buffer.from([VERSION, wanted]));
  if (options.credentials) {
    // RFC 1929 §2: VER ULEN UNAME PLEN PASSWD; a failure status must close the connection.
    const [, usernameLength = 0] = await reader.bytes(2);
    const username = (await reader.bytes(usernameLength)).toString();
    const [passwordLength = 0] = await reader.bytes(1);
    const password = (await reader.bytes(passwordLength)).toString();
    if (username !== options.credentials.username || password !== options.credentials.password) {
      counts.authFailures++;
      return void client.end(Buffer.from([0x01, 0x01]));
    }
    client.write(Buffer.from([0x01, 0x00]));
  }
  // RFC 1928 §4: VER CMD RSV ATYP DST.ADDR DST.PORT.
  const [, command = 0, , addressType = 0] = await reader.bytes(4);
  let target: string;
  if (addressType === 0x01) target = [...(await reader.bytes(4))].join('.');
  else if (addressType === 0x04) {
    const bytes = await reader.bytes(16);
    target = Array.from({ length: 8 }, (_, index) => bytes.readUInt16BE(index * 2).toString(16)).join(':');
  } else if (addressType === 0x03) {
    const [length = 0] = await reader.bytes(1);
    target = (await reader.bytes(length)).toString();
  } else return void client.end(reply(0x08));
  const port = (await reader.bytes(2)).readUInt16BE(0);
  if (command !== 0x01) return void client.end(reply(0x07));
  // Only the loopback network: the fake world never reaches past this machine.
  if (!(isIP(target) === 4 && target.startsWith('127.')) && target !== '0:0:0:0:0:0:0:1')
    return void client.end(reply(0x02));
  const upstream = tcpConnect({
    host: target,
    port,
    ...(options.exitAddress ? { localAddress: options.exitAddress } : {}),
  });
  sockets.add(upstream);
  upstream.once('close', () => {
    sockets.delete(upstream);
    client.destroy();
  });
  client.once('close', () => upstream.destroy());
  upstream.once('error', (error: NodeJS.ErrnoException) => {
    // RFC 1928 §6: 0x05 connection refused, 0x04 host unreachable, 0x01 general failure.
    if (!upstream.remoteAddress) client.end(reply(error.code === 'ECONNREFUSED' ? 0x05 : 0x01));
  });
  upstream.once('connect', () => {
    counts.connects++;
    client.removeAllListeners('data');
    client.write(reply(0x00, upstream.localAddress ?? '0.0.0.0', upstream.localPort ?? 0));
    const early = reader.rest();
    if (early.length > 0) upstream.write(early);
    client.pipe(upstream);
    upstream.pipe(client);
  });
}

/** RFC 1928 §6: VER REP RSV ATYP BND.ADDR BND.PORT (an IPv4 bound address). */
function reply(code: number, boundAddress = '0.0.0.0', boundPort = 0): Buffer {
  const address = isIP(boundAddress) === 4 ? boundAddress.split('.').map(Number) : [0, 0, 0, 0];
  const port = Buffer.alloc(2);
  port.writeUInt16BE(boundPort);
  return Buffer.concat([Buffer.from([VERSION, code, 0x00, 0x01, ...address]), port]);
}

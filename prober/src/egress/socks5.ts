// A SOCKS5 client (RFC 1928) with username/password authentication (RFC 1929), for operators
// who rent proxy addresses to send SMTP from. It only opens a TCP stream to the target through
// the proxy: what flows over it afterwards (SMTP, STARTTLS) is the session's business.
import { isIP, type Socket, connect as tcpConnect } from 'node:net';
import type { Socks5Proxy } from './egress.ts';

const VERSION = 0x05;
const NO_AUTHENTICATION = 0x00;
const USERNAME_PASSWORD = 0x02;
const NO_ACCEPTABLE_METHOD = 0xff;
const CONNECT = 0x01;
const IPV4 = 0x01;
const DOMAIN_NAME = 0x03;
const IPV6 = 0x04;
// RFC 1929 §2: the sub-negotiation has its own version, 1.
const AUTH_VERSION = 0x01;

// RFC 1928 §6: the REP field of the proxy's reply.
const REPLIES: Record<number, string> = {
  1: 'general SOCKS server failure',
  2: 'connection not allowed by ruleset',
  3: 'network unreachable',
  4: 'host unreachable',
  5: 'connection refused',
  6: 'TTL expired',
  7: 'command not supported',
  8: 'address type not supported',
};

export class Socks5Error extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'Socks5Error';
  }
}

/**
 * Dials `proxy` and asks it to CONNECT to `target`. The socket is returned at once (so the
 * caller can destroy it on its own deadline); `ready` resolves once the proxy has connected,
 * with the socket paused and any bytes the target already sent put back to be read first.
 */
export function socks5Connect(
  proxy: Socks5Proxy,
  target: { host: string; port: number },
): { socket: Socket; ready: Promise<void> } {
  const socket = tcpConnect({ host: proxy.host, port: proxy.port, noDelay: true });
  const ready = new Promise<void>((resolve, reject) => {
    let buffered = Buffer.alloc(0);
    let step: 'method' | 'auth' | 'connect' | 'connected' = 'method';
    const finish = (error: Error | null) => {
      socket.off('data', onData);
      socket.off('error', onError);
      socket.off('close', onClose);
      socket.off('connect', onConnect);
      if (error) {
        socket.destroy();
        reject(error);
      } else resolve();
    };
    const onError = (error: Error) => finish(new Socks5Error(`proxy connection failed: ${error.message}`));
    const onClose = () => finish(new Socks5Error('the proxy closed the connection'));
    const onConnect = () => {
      const methods = proxy.username === null ? [NO_AUTHENTICATION] : [NO_AUTHENTICATION, USERNAME_PASSWORD];
      socket.write(Buffer.from([VERSION, methods.length, ...methods]));
    };
    const onData = (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      try {
        while (step !== 'connected') {
          const used = advance();
          if (used === 0) return;
          buffered = buffered.subarray(used);
        }
      } catch (error) {
        finish(error instanceof Error ? error : new Socks5Error(String(error)));
        return;
      }
      // Connected: what follows belongs to the target's protocol, read by whoever listens next.
      socket.pause();
      finish(null);
      if (buffered.length > 0) socket.unshift(buffered);
    };
    /** Handles one whole reply at the head of the buffer: the bytes it used, or 0 when incomplete. */
    const advance = (): number => {
      if (step === 'method') {
        if (buffered.length < 2) return 0;
        if (buffered[0] !== VERSION) throw new Socks5Error('the proxy does not speak SOCKS5');
        const method = buffered[1];
        if (method === NO_AUTHENTICATION) sendConnect();
        else if (method === USERNAME_PASSWORD && proxy.username !== null) sendCredentials();
        else if (method === NO_ACCEPTABLE_METHOD)
          throw new Socks5Error('the proxy accepts none of our authentication methods');
        else throw new Socks5Error(`the proxy chose a method we did not offer (${method})`);
        return 2;
      }
      if (step === 'auth') {
        if (buffered.length < 2) return 0;
        // RFC 1929 §2: STATUS 0 is success; anything else must close the connection.
        if (buffered[1] !== 0x00) throw new Socks5Error('the proxy refused the user name and password');
        sendConnect();
        return 2;
      }
      if (buffered.length < 5) return 0;
      if (buffered[0] !== VERSION) throw new Socks5Error('the proxy does not speak SOCKS5');
      const reply = buffered[1] ?? 0;
      if (reply !== 0x00) throw new Socks5Error(REPLIES[reply] ?? `the proxy refused (reply ${reply})`);
      const addressType = buffered[3];
      const addressLength =
        addressType === IPV4
          ? 4
          : addressType === IPV6
            ? 16
            : addressType === DOMAIN_NAME
              ? 1 + (buffered[4] ?? 0)
              : -1;
      if (addressLength < 0) throw new Socks5Error(`the proxy replied with address type ${addressType}`);
      const length = 4 + addressLength + 2;
      if (buffered.length < length) return 0;
      step = 'connected';
      return length;
    };
    const sendCredentials = () => {
      step = 'auth';
      const username = Buffer.from(proxy.username ?? '');
      const password = Buffer.from(proxy.password ?? '');
      socket.write(
        Buffer.concat([
          Buffer.from([AUTH_VERSION, username.length]),
          username,
          Buffer.from([password.length]),
          password,
        ]),
      );
    };
    const sendConnect = () => {
      step = 'connect';
      socket.write(connectRequest(target.host, target.port));
    };
    socket.on('connect', onConnect);
    socket.on('data', onData);
    socket.on('error', onError);
    socket.on('close', onClose);
  });
  return { socket, ready };
}

/** RFC 1928 §4: VER CMD RSV ATYP DST.ADDR DST.PORT. */
function connectRequest(host: string, port: number): Buffer {
  const family = isIP(host);
  let address: Buffer;
  if (family === 4) address = Buffer.from([IPV4, ...host.split('.').map(Number)]);
  else if (family === 6) address = Buffer.concat([Buffer.from([IPV6]), ipv6Bytes(host)]);
  else {
    const name = Buffer.from(host);
    address = Buffer.concat([Buffer.from([DOMAIN_NAME, name.length]), name]);
  }
  const portBytes = Buffer.alloc(2);
  portBytes.writeUInt16BE(port);
  return Buffer.concat([Buffer.from([VERSION, CONNECT, 0x00]), address, portBytes]);
}

/** The 16 bytes of an IPv6 address (with `::` and a dotted IPv4 tail expanded). */
export function ipv6Bytes(address: string): Buffer {
  let text = address;
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted?.[1]) {
    const [a = 0, b = 0, c = 0, d = 0] = dotted[1].split('.').map(Number);
    text = `${text.slice(0, -dotted[1].length)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const headGroups = head === '' ? [] : head.split(':');
  const tailGroups = tail === undefined || tail === '' ? [] : tail.split(':');
  const groups = [
    ...headGroups,
    ...Array(8 - headGroups.length - tailGroups.length).fill('0'),
    ...tailGroups,
  ];
  const bytes = Buffer.alloc(16);
  groups.forEach((group, index) => {
    bytes.writeUInt16BE(Number.parseInt(group, 16), index * 2);
  });
  return bytes;
}

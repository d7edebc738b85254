// Just enough of an SMTP client for the world's own tests: raw SMTP over node:net/node:tls,
// so what a server says is checked byte for byte, without the prober's client in between.
import { connect as connectTcp, type Socket } from 'node:net';
import { connect as connectTls, type TLSSocket } from 'node:tls';
import { expect } from 'vitest';

export interface Reply {
  code: number;
  /** Every line as sent, "250-PIPELINING", …, the last one with a space after the code. */
  lines: string[];
  /** The last line, e.g. "550 5.1.1 <nobody@accept.test>: …". */
  last: string;
}

/**
 * Just enough of an SMTP client to talk to the fake servers: writes command lines and reads
 * replies, a reply being lines up to the one with a space (or nothing) after its code.
 */
export class SmtpTestClient {
  private socket: Socket | TLSSocket;
  private pending = '';
  private readonly lines: string[] = [];
  private wake: (() => void) | undefined;
  private ended = false;
  bytesReceived = 0;
  readonly closed: Promise<void>;

  private constructor(socket: Socket) {
    this.socket = socket;
    this.closed = new Promise((resolve) => socket.once('close', () => resolve()));
    socket.once('close', () => {
      this.ended = true;
      this.wake?.();
    });
    this.listen(socket);
  }

  /** Connects to `ip`:`port`, from the local address `from` when given (a client of the block lists). */
  static open(ip: string, port: number, from?: string): Promise<SmtpTestClient> {
    return new Promise((resolve, reject) => {
      const socket = connectTcp({ host: ip, port, ...(from ? { localAddress: from } : {}) });
      socket.once('error', reject);
      socket.once('connect', () => {
        socket.off('error', reject);
        socket.on('error', () => {}); // a reset shows as 'close', which reply() reports
        resolve(new SmtpTestClient(socket));
      });
    });
  }

  /** Connects and reads the greeting, which must be 220. */
  static async greeted(ip: string, port: number): Promise<SmtpTestClient> {
    const client = await SmtpTestClient.open(ip, port);
    const greeting = await client.reply();
    expect(greeting.code).toBe(220);
    return client;
  }

  private listen(socket: Socket | TLSSocket): void {
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      this.bytesReceived += Buffer.byteLength(chunk);
      const parts = (this.pending + chunk).split('\r\n');
      this.pending = parts.pop() ?? '';
      this.lines.push(...parts);
      this.wake?.();
    });
  }

  /** Reply lines received and not read yet. */
  unreadLines(): number {
    return this.lines.length;
  }

  async reply(): Promise<Reply> {
    const lines: string[] = [];
    for (;;) {
      const line = this.lines.shift();
      if (line === undefined) {
        if (this.ended) throw new Error(`connection closed before a reply (got ${JSON.stringify(lines)})`);
        await new Promise<void>((resolve) => {
          this.wake = resolve;
        });
        this.wake = undefined;
        continue;
      }
      lines.push(line);
      if (/^\d{3}(?: |$)/.test(line)) return { code: Number(line.slice(0, 3)), lines, last: line };
    }
  }

  write(...commandLines: string[]): void {
    this.socket.write(commandLines.map((line) => `${line}\r\n`).join(''));
  }

  async command(line: string): Promise<Reply> {
    this.write(line);
    return this.reply();
  }

  /** STARTTLS and the handshake; the fake servers' certificate is self-signed, so it is not verified. */
  async startTls(servername: string): Promise<TLSSocket> {
    const ready = await this.command('STARTTLS');
    expect(ready.code).toBe(220);
    const raw = this.socket;
    raw.removeAllListeners('data');
    const secure = connectTls({ socket: raw as Socket, servername, rejectUnauthorized: false });
    await new Promise<void>((resolve, reject) => {
      secure.once('secureConnect', resolve);
      secure.once('error', reject);
    });
    secure.on('error', () => {});
    this.socket = secure;
    this.listen(secure);
    return secure;
  }

  async quit(): Promise<void> {
    this.write('QUIT');
    await this.closed;
  }
}

// SmtpSession against hand-driven servers on 127.0.0.1: each test scripts exactly what the
// server says (right or wrong) and asserts the session's reading of it, down to the failure kind
// and stage. Servers never wait on timers; timeouts are the session's, kept small.
import { once } from 'node:events';
import { createServer, type Server, type Socket } from 'node:net';
import { TLSSocket } from 'node:tls';
import { afterEach, describe, expect, test } from 'vitest';
import { createSelfSignedCertificate } from '../../../test/world/self-signed-certificate.ts';
import { SmtpSession, type SmtpSessionOptions, Transcript } from './session.ts';

const STEP_MS = 400;

/** One client connection as the scripted server sees it: the lines it sent, and a way to answer. */
class ScriptedConnection {
  readonly commands: string[] = [];
  /** For each command, how many more complete lines had already arrived with it (pipelining). */
  readonly linesQueuedBehind: number[] = [];
  socket: Socket;
  #buffer = '';
  #lines: string[] = [];
  #wake: (() => void) | null = null;
  #closed = false;

  constructor(socket: Socket) {
    this.socket = socket;
    socket.on('error', () => {});
    socket.once('close', () => {
      this.#closed = true;
      this.#wake?.();
    });
    this.#read(socket);
  }

  #read(stream: Socket): void {
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      const parts = (this.#buffer + chunk).split('\r\n');
      this.#buffer = parts.pop() ?? '';
      this.#lines.push(...parts);
      this.#wake?.();
    });
  }

  /** The next command line, or null once the client has gone. */
  async next(): Promise<string | null> {
    while (this.#lines.length === 0) {
      if (this.#closed) return null;
      await new Promise<void>((resolve) => {
        this.#wake = resolve;
      });
      this.#wake = null;
    }
    const line = this.#lines.shift() ?? '';
    this.commands.push(line);
    this.linesQueuedBehind.push(this.#lines.length);
    return line;
  }

  send(text: string): void {
    if (!this.socket.destroyed) this.socket.write(text);
  }

  /** Switches to TLS as the server side (after the 220 to STARTTLS), and resolves with the SNI name. */
  async upgrade(): Promise<string | false | null> {
    this.socket.removeAllListeners('data');
    const secure = new TLSSocket(this.socket, { isServer: true, ...CERTIFICATE });
    secure.on('error', () => {});
    this.socket = secure;
    this.#read(secure);
    await once(secure, 'secure');
    return secure.servername;
  }
}

const CERTIFICATE = createSelfSignedCertificate(['mx.scripted.test']);

/** A server on 127.0.0.1 that runs `script` for every connection. */
async function scriptedServer(script: (connection: ScriptedConnection) => Promise<void>) {
  const connections: ScriptedConnection[] = [];
  const server: Server = createServer((socket) => {
    const connection = new ScriptedConnection(socket);
    connections.push(connection);
    script(connection).catch(() => {});
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  const close = () => {
    for (const connection of connections) connection.socket.destroy();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  };
  openServers.push(close);
  return { port, connections };
}

const openServers: (() => Promise<void>)[] = [];
const openSessions: SmtpSession[] = [];
afterEach(async () => {
  for (const session of openSessions.splice(0)) session.close();
  await Promise.all(openServers.splice(0).map((close) => close()));
});

/** A well-behaved server: greeting, EHLO with `extensions`, then MAIL/RCPT/RSET/QUIT answered by `rcpt`. */
async function serveSmtp(
  connection: ScriptedConnection,
  options: { greeting?: string; extensions?: string[]; rcpt?: (address: string) => string } = {},
): Promise<void> {
  connection.send(`${options.greeting ?? '220 mx.scripted.test ESMTP'}\r\n`);
  for (let line = await connection.next(); line !== null; line = await connection.next()) {
    const verb = line.slice(0, 4).toUpperCase();
    if (verb === 'EHLO') {
      const keywords = options.extensions ?? ['PIPELINING'];
      const lines = ['mx.scripted.test', ...keywords];
      connection.send(
        lines.map((text, index) => `250${index === lines.length - 1 ? ' ' : '-'}${text}\r\n`).join(''),
      );
    } else if (verb === 'MAIL' || verb === 'RSET') connection.send('250 2.0.0 Ok\r\n');
    else if (verb === 'RCPT') {
      const address = /<(.*)>/.exec(line)?.[1] ?? '';
      connection.send(`${options.rcpt?.(address) ?? '250 2.1.5 Ok'}\r\n`);
    } else if (verb === 'QUIT') {
      connection.send('221 2.0.0 Bye\r\n');
      connection.socket.end();
      return;
    } else connection.send('502 5.5.2 Error: command not recognized\r\n');
  }
}

function session(port: number, options: Partial<SmtpSessionOptions> = {}): SmtpSession {
  const opened = new SmtpSession({
    host: 'mx.scripted.test',
    ip: '127.0.0.1',
    port,
    helo: 'prober.rcpt.test',
    sessionTimeoutMs: 10_000,
    timeouts: { connectMs: STEP_MS, bannerMs: STEP_MS, commandMs: STEP_MS },
    ...options,
  });
  openSessions.push(opened);
  return opened;
}

/** open() must fail; resolves with the failure. */
async function openFailure(opened: SmtpSession) {
  const error = await opened.open().then(
    () => null,
    (caught: unknown) => caught,
  );
  expect(error).toHaveProperty('failure');
  return (error as { failure: unknown }).failure;
}

describe('greeting and EHLO', () => {
  test('reads a multi-line greeting and the EHLO keywords with their parameters', async () => {
    const { port } = await scriptedServer(async (connection) => {
      connection.send('220-mx.scripted.test ESMTP\r\n220-second line\r\n220 third\r\n');
      expect(await connection.next()).toBe('EHLO prober.rcpt.test');
      connection.send(
        '250-mx.scripted.test\r\n250-PIPELINING\r\n250-SIZE 10240000\r\n250-smtputf8\r\n250 8BITMIME\r\n',
      );
      await connection.next();
    });
    const opened = session(port);
    await opened.open();
    expect([...opened.extensions]).toEqual([
      ['PIPELINING', ''],
      ['SIZE', '10240000'],
      ['SMTPUTF8', ''],
      ['8BITMIME', ''],
    ]);
    expect(opened.pipelining).toBe(true);
    expect(opened.smtputf8).toBe(true);
    expect(opened.tls).toBe(false);
  });

  test.each([500, 502])('falls back to HELO when EHLO gets %i (RFC 5321 §3.2)', async (code) => {
    const { port, connections } = await scriptedServer(async (connection) => {
      connection.send('220 old.scripted.test SMTP\r\n');
      await connection.next();
      connection.send(`${code} 5.5.1 command unrecognized\r\n`);
      await connection.next();
      connection.send('250 old.scripted.test\r\n');
      await connection.next();
    });
    const opened = session(port);
    await opened.open();
    expect(connections[0]?.commands).toEqual(['EHLO prober.rcpt.test', 'HELO prober.rcpt.test']);
    expect(opened.extensions.size).toBe(0);
    expect(opened.pipelining).toBe(false);
  });

  test('an EHLO refused with 550 is rejected at ehlo, without trying HELO', async () => {
    const { port, connections } = await scriptedServer(async (connection) => {
      connection.send('220 mx.scripted.test ESMTP\r\n');
      await connection.next();
      connection.send('550 5.7.1 Go away\r\n');
      await connection.next();
    });
    const opened = session(port);
    expect(await openFailure(opened)).toEqual({
      kind: 'rejected',
      stage: 'ehlo',
      reply: { code: 550, enhanced: '5.7.1', text: 'Go away' },
      message: 'the server refused EHLO (550)',
    });
    await opened.quit();
    expect(connections[0]?.commands).toEqual(['EHLO prober.rcpt.test', 'QUIT']);
  });

  test('a 554 greeting is rejected at banner, and quit() still says QUIT (RFC 5321 §3.1)', async () => {
    const { port, connections } = await scriptedServer(async (connection) => {
      connection.send('554 5.7.1 No SMTP service here\r\n');
      await connection.next();
      connection.send('221 Bye\r\n');
    });
    const opened = session(port);
    expect(await openFailure(opened)).toMatchObject({
      kind: 'rejected',
      stage: 'banner',
      reply: { code: 554, enhanced: '5.7.1', text: 'No SMTP service here' },
    });
    await opened.quit();
    expect(connections[0]?.commands).toEqual(['QUIT']);
  });

  test('a 421 greeting is rejected at banner, and no QUIT follows: the server is closing (RFC 5321 §3.8)', async () => {
    const { port, connections } = await scriptedServer(async (connection) => {
      connection.send('421 4.7.0 Too many connections\r\n');
      await connection.next();
    });
    const opened = session(port);
    expect(await openFailure(opened)).toMatchObject({
      kind: 'rejected',
      stage: 'banner',
      reply: { code: 421, enhanced: '4.7.0' },
    });
    await opened.quit();
    expect(connections[0]?.commands).toEqual([]);
  });
});

describe('mail transactions', () => {
  test('with PIPELINING, MAIL FROM and every RCPT TO go out in one write (RFC 2920 §3.1)', async () => {
    const { port, connections } = await scriptedServer(async (connection) => {
      connection.send('220 mx.scripted.test ESMTP\r\n');
      await connection.next();
      connection.send('250-mx.scripted.test\r\n250 PIPELINING\r\n');
      // Answers nothing before all three commands are in: a client waiting for the MAIL reply
      // before sending RCPT would time out here.
      const pipelined = [await connection.next(), await connection.next(), await connection.next()];
      expect(pipelined.map((line) => line?.slice(0, 4))).toEqual(['MAIL', 'RCPT', 'RCPT']);
      connection.send('250 2.1.0 Ok\r\n250 2.1.5 Ok\r\n550 5.1.1 <b@example.test>: User unknown\r\n');
      await connection.next();
    });
    const opened = session(port);
    await opened.open();
    const outcome = await opened.transaction('verify@rcpt.test', ['a@example.test', 'b@example.test'], {
      smtputf8: false,
    });
    expect(outcome).toMatchObject({
      replies: [
        { code: 250, enhanced: '2.1.5', text: 'Ok' },
        { code: 550, enhanced: '5.1.1', text: '<b@example.test>: User unknown' },
      ],
      failure: null,
    });
    expect(connections[0]?.commands.slice(1, 4)).toEqual([
      'MAIL FROM:<verify@rcpt.test>',
      'RCPT TO:<a@example.test>',
      'RCPT TO:<b@example.test>',
    ]);
  });

  test('without PIPELINING, each command waits for the reply to the one before', async () => {
    const { port, connections } = await scriptedServer((connection) =>
      serveSmtp(connection, { extensions: [] }),
    );
    const opened = session(port);
    await opened.open();
    const outcome = await opened.transaction('verify@rcpt.test', ['a@example.test', 'b@example.test'], {
      smtputf8: false,
    });
    expect(outcome.replies.map((reply) => reply.code)).toEqual([250, 250]);
    const server = connections[0];
    const mailIndex = server?.commands.indexOf('MAIL FROM:<verify@rcpt.test>') ?? -1;
    expect(mailIndex).toBeGreaterThan(0);
    // Nothing was queued behind MAIL or the first RCPT when the server read them.
    expect(server?.linesQueuedBehind.slice(mailIndex, mailIndex + 3)).toEqual([0, 0, 0]);
  });

  test('a refused MAIL FROM under pipelining: the 503s to the RCPTs are read and dropped, the session goes on', async () => {
    const { port, connections } = await scriptedServer(async (connection) => {
      connection.send('220 mx.scripted.test ESMTP\r\n');
      await connection.next();
      connection.send('250-mx.scripted.test\r\n250 PIPELINING\r\n');
      await connection.next();
      await connection.next();
      connection.send('550 5.7.1 Sender rejected\r\n503 5.5.1 Error: need MAIL command\r\n');
      expect(await connection.next()).toBe('RSET');
      connection.send('250 2.0.0 Ok\r\n');
      await connection.next();
    });
    const opened = session(port);
    await opened.open();
    const outcome = await opened.transaction('verify@rcpt.test', ['a@example.test'], { smtputf8: false });
    expect(outcome).toMatchObject({
      replies: [],
      failure: {
        kind: 'rejected',
        stage: 'mail',
        reply: { code: 550, enhanced: '5.7.1', text: 'Sender rejected' },
        message: 'the server refused MAIL FROM (550)',
      },
    });
    await opened.reset();
    expect(connections[0]?.commands.at(-1)).toBe('RSET');
  });

  test('declares SMTPUTF8 on MAIL FROM when asked and offered (RFC 6531 §3.4)', async () => {
    const { port, connections } = await scriptedServer((connection) =>
      serveSmtp(connection, { extensions: ['PIPELINING', 'SMTPUTF8'] }),
    );
    const opened = session(port);
    await opened.open();
    const outcome = await opened.transaction('verify@rcpt.test', ['jürgen@example.test'], { smtputf8: true });
    expect(outcome.failure).toBeNull();
    expect(connections[0]?.commands).toContain('MAIL FROM:<verify@rcpt.test> SMTPUTF8');
    expect(connections[0]?.commands).toContain('RCPT TO:<jürgen@example.test>');
  });

  test('refuses to send an SMTPUTF8 transaction to a server that does not offer it', async () => {
    const { port, connections } = await scriptedServer((connection) => serveSmtp(connection));
    const opened = session(port);
    await opened.open();
    const outcome = await opened.transaction('verify@rcpt.test', ['jürgen@example.test'], { smtputf8: true });
    expect(outcome.failure?.kind).toBe('smtputf8_unsupported');
    expect(connections[0]?.commands.some((line) => line.startsWith('MAIL'))).toBe(false);
  });

  test('several transactions with RSET between them, then QUIT', async () => {
    const { port, connections } = await scriptedServer((connection) => serveSmtp(connection));
    const opened = session(port);
    await opened.open();
    await opened.transaction('verify@rcpt.test', ['a@example.test'], { smtputf8: false });
    await opened.reset();
    await opened.transaction('verify@rcpt.test', ['b@example.test'], { smtputf8: false });
    expect((await opened.recipient('c@example.test')).code).toBe(250);
    await opened.quit();
    expect(connections[0]?.commands).toEqual([
      'EHLO prober.rcpt.test',
      'MAIL FROM:<verify@rcpt.test>',
      'RCPT TO:<a@example.test>',
      'RSET',
      'MAIL FROM:<verify@rcpt.test>',
      'RCPT TO:<b@example.test>',
      'RCPT TO:<c@example.test>',
      'QUIT',
    ]);
  });

  test('the last transaction carries QUIT in its group; quit() reads the 221 and sends nothing more', async () => {
    const { port, connections } = await scriptedServer((connection) => serveSmtp(connection));
    const quitWritten: string[] = [];
    const opened = session(port, {
      recordDialogue: true,
      onQuitWritten: () => quitWritten.push(connections[0]?.commands.at(-1) ?? 'nothing read yet'),
    });
    await opened.open();
    const outcome = await opened.transaction('verify@rcpt.test', ['a@example.test', 'b@example.test'], {
      smtputf8: false,
      quit: true,
    });
    expect(outcome.replies.map((reply) => reply.code)).toEqual([250, 250]);
    expect(outcome.failure).toBeNull();
    // Told when QUIT was on its way, before the server had read the group.
    expect(quitWritten).toEqual(['EHLO prober.rcpt.test']);
    await opened.quit();
    const server = connections[0];
    expect(server?.commands).toEqual([
      'EHLO prober.rcpt.test',
      'MAIL FROM:<verify@rcpt.test>',
      'RCPT TO:<a@example.test>',
      'RCPT TO:<b@example.test>',
      'QUIT',
    ]);
    // One group: the server found each command with the rest already queued behind it.
    expect(server?.linesQueuedBehind.slice(1)).toEqual([3, 2, 1, 0]);
    // The server's close after its 221 is the end it announced, not a failure.
    expect(opened.dialogue?.ended).toBeNull();
    expect(opened.dialogue?.steps.at(-1)).toMatchObject({ command: 'QUIT', reply: { code: 221 } });
    expect(opened.quitReplyWaitMs).not.toBeNull();
  });

  test('a refused MAIL in a group with QUIT: the 503s are dropped, and quit() still gets its 221', async () => {
    const { port, connections } = await scriptedServer(async (connection) => {
      connection.send('220 mx.scripted.test ESMTP\r\n');
      await connection.next();
      connection.send('250-mx.scripted.test\r\n250 PIPELINING\r\n');
      for (let index = 0; index < 3; index++) await connection.next();
      connection.send('550 5.7.1 Sender rejected\r\n503 5.5.1 Error: need MAIL command\r\n221 2.0.0 Bye\r\n');
      connection.socket.end();
    });
    const opened = session(port, { recordDialogue: true });
    await opened.open();
    const outcome = await opened.transaction('verify@rcpt.test', ['a@example.test'], {
      smtputf8: false,
      quit: true,
    });
    expect(outcome.failure).toMatchObject({ kind: 'rejected', stage: 'mail', reply: { code: 550 } });
    await opened.quit();
    expect(connections[0]?.commands.at(-1)).toBe('QUIT');
    expect(opened.dialogue?.steps.at(-1)).toMatchObject({ command: 'QUIT', reply: { code: 221 } });
    expect(opened.dialogue?.ended).toBeNull();
  });

  test('a server that hangs up inside a group with QUIT, before its replies, is still a failure', async () => {
    const { port } = await scriptedServer(async (connection) => {
      connection.send('220 mx.scripted.test ESMTP\r\n');
      await connection.next();
      connection.send('250-mx.scripted.test\r\n250 PIPELINING\r\n');
      await connection.next();
      connection.send('250 2.1.0 Ok\r\n');
      connection.socket.end();
    });
    const opened = session(port);
    await opened.open();
    const outcome = await opened.transaction('verify@rcpt.test', ['a@example.test'], {
      smtputf8: false,
      quit: true,
    });
    expect(outcome.replies).toEqual([]);
    expect(outcome.failure).toMatchObject({ kind: 'disconnected', stage: 'rcpt' });
  });

  test('an address with CR LF never reaches the wire: target_refused at guard', async () => {
    const { port, connections } = await scriptedServer((connection) => serveSmtp(connection));
    const opened = session(port);
    await opened.open();
    const outcome = await opened.transaction('verify@rcpt.test', ['a@example.test>\r\nDATA\r\n<x'], {
      smtputf8: false,
    });
    expect(outcome.failure).toMatchObject({ kind: 'target_refused', stage: 'guard' });
    await opened.quit();
    expect(connections[0]?.commands).toEqual(['EHLO prober.rcpt.test', 'QUIT']);
  });
});

describe('hostile and broken servers', () => {
  test('a reply line over 4 KB is invalid_response and the connection is dropped', async () => {
    const { port, connections } = await scriptedServer(async (connection) => {
      connection.send(`220 ${'x'.repeat(5000)}`);
      await connection.next();
    });
    const opened = session(port);
    expect(await openFailure(opened)).toEqual({
      kind: 'invalid_response',
      stage: 'banner',
      reply: null,
      message: 'a reply line longer than 4096 bytes',
    });
    // The server's side sees the connection go away.
    const server = connections[0];
    expect(await server?.next()).toBeNull();
  });

  test('a reply of more than 100 lines is invalid_response', async () => {
    const { port } = await scriptedServer(async (connection) => {
      connection.send('220-hello\r\n'.repeat(101));
      await connection.next();
    });
    expect(await openFailure(session(port))).toMatchObject({ kind: 'invalid_response', stage: 'banner' });
  });

  test('a reply of more than 64 KB in few lines is invalid_response', async () => {
    const { port } = await scriptedServer(async (connection) => {
      connection.send(`220-${'y'.repeat(4000)}\r\n`.repeat(17));
      await connection.next();
    });
    expect(await openFailure(session(port))).toMatchObject({ kind: 'invalid_response', stage: 'banner' });
  });

  test.each([
    ['an HTTP answer', 'HTTP/1.1 400 Bad Request\r\n'],
    ['a code out of range', '620 what\r\n'],
    ['binary noise', '\u0000\u0001\u0002garbage\r\n'],
  ])('%s as greeting is invalid_response', async (_name, greeting) => {
    const { port } = await scriptedServer(async (connection) => {
      connection.send(greeting);
      await connection.next();
    });
    expect(await openFailure(session(port))).toMatchObject({
      kind: 'invalid_response',
      stage: 'banner',
      reply: null,
    });
  });

  test('a multi-line reply whose codes disagree is invalid_response (RFC 5321 §4.2.1)', async () => {
    const { port } = await scriptedServer(async (connection) => {
      connection.send('220 hi\r\n');
      await connection.next();
      connection.send('250-mx.scripted.test\r\n251 PIPELINING\r\n');
      await connection.next();
    });
    expect(await openFailure(session(port))).toMatchObject({ kind: 'invalid_response', stage: 'ehlo' });
  });

  test('a reply nobody asked for is invalid_response, not an answer to the next command', async () => {
    const { port } = await scriptedServer(async (connection) => {
      connection.send('220 hi\r\n');
      await connection.next();
      connection.send('250 mx.scripted.test\r\n250 surprise\r\n');
      await connection.next();
    });
    expect(await openFailure(session(port))).toMatchObject({
      kind: 'invalid_response',
      message: 'a reply to no command: 250 surprise',
    });
  });

  test('an unsolicited 421 ends the session: the step under way gets that 421 (RFC 5321 §3.8)', async () => {
    const { port } = await scriptedServer(async (connection) => {
      connection.send('220 hi\r\n');
      await connection.next();
      connection.send('250 mx.scripted.test\r\n421 4.4.2 Idle timeout, closing\r\n');
      connection.socket.end();
    });
    expect(await openFailure(session(port))).toEqual({
      kind: 'rejected',
      stage: 'ehlo',
      reply: { code: 421, enhanced: '4.4.2', text: 'Idle timeout, closing' },
      message: 'the server is closing the connection (421)',
    });
  });

  test('a 421 to RCPT under pipelining: the recipients after it get the 421 as a rejection at rcpt', async () => {
    const { port } = await scriptedServer(async (connection) => {
      connection.send('220 hi\r\n');
      await connection.next();
      connection.send('250-mx.scripted.test\r\n250 PIPELINING\r\n');
      await connection.next();
      connection.send('250 2.1.0 Ok\r\n421 4.7.0 Too many errors\r\n');
      connection.socket.end();
    });
    const opened = session(port);
    await opened.open();
    const outcome = await opened.transaction('verify@rcpt.test', ['a@example.test', 'b@example.test'], {
      smtputf8: false,
    });
    const closing = { code: 421, enhanced: '4.7.0', text: 'Too many errors' };
    expect(outcome.replies).toEqual([closing]);
    expect(outcome.failure).toMatchObject({ kind: 'rejected', stage: 'rcpt', reply: closing });
  });

  test('a server closing mid-transaction: replies already received are kept, the rest is disconnected at rcpt', async () => {
    const { port } = await scriptedServer(async (connection) => {
      connection.send('220 hi\r\n');
      await connection.next();
      connection.send('250 mx.scripted.test\r\n');
      await connection.next();
      connection.send('250 2.1.0 Ok\r\n');
      await connection.next();
      connection.send('250 2.1.5 Ok\r\n');
      await connection.next();
      connection.socket.destroy();
    });
    const opened = session(port);
    await opened.open();
    const outcome = await opened.transaction(
      'verify@rcpt.test',
      ['a@example.test', 'b@example.test', 'c@example.test'],
      {
        smtputf8: false,
      },
    );
    expect(outcome.replies).toEqual([{ code: 250, enhanced: '2.1.5', text: 'Ok' }]);
    expect(outcome.failure).toMatchObject({ kind: 'disconnected', stage: 'rcpt', reply: null });
  });

  test('a port no socket can have: connection_failed at connect, not a throw', async () => {
    expect(await openFailure(session(70_000))).toMatchObject({ kind: 'connection_failed', stage: 'connect' });
  });

  test('nothing listening: connection_failed at connect', async () => {
    const { port } = await scriptedServer(async () => {});
    await Promise.all(openServers.splice(0).map((close) => close()));
    expect(await openFailure(session(port))).toMatchObject({ kind: 'connection_failed', stage: 'connect' });
  });
});

describe('timeouts', () => {
  test('a silent server is a timeout at banner after the banner step timeout', async () => {
    const { port } = await scriptedServer(async (connection) => {
      await connection.next();
    });
    expect(await openFailure(session(port))).toEqual({
      kind: 'timeout',
      stage: 'banner',
      reply: null,
      message: `no greeting within ${STEP_MS} ms`,
    });
  });

  test('a command left unanswered is a timeout at its stage', async () => {
    const { port } = await scriptedServer(async (connection) => {
      connection.send('220 hi\r\n');
      await connection.next();
      await connection.next();
    });
    expect(await openFailure(session(port))).toEqual({
      kind: 'timeout',
      stage: 'ehlo',
      reply: null,
      message: `no reply at ehlo within ${STEP_MS} ms`,
    });
  });

  test('the session budget ends a slow dialogue even when every step is within its own timeout', async () => {
    const { port } = await scriptedServer(async (connection) => {
      connection.send('220 hi\r\n');
      await connection.next();
    });
    const opened = session(port, {
      sessionTimeoutMs: 300,
      timeouts: { connectMs: 30_000, bannerMs: 30_000, commandMs: 30_000 },
    });
    expect(await openFailure(opened)).toEqual({
      kind: 'timeout',
      stage: 'ehlo',
      reply: null,
      message: 'the session exceeded its 300 ms budget',
    });
  });
});

describe('STARTTLS (RFC 3207)', () => {
  /** Offers STARTTLS, upgrades, reports the SNI name it saw, and counts EHLOs. */
  async function tlsServer() {
    const seen = { servername: undefined as string | false | null | undefined, ehloCount: 0 };
    const server = await scriptedServer(async (connection) => {
      connection.send('220 mx.scripted.test ESMTP\r\n');
      for (let line = await connection.next(); line !== null; line = await connection.next()) {
        if (line.startsWith('EHLO')) {
          seen.ehloCount++;
          connection.send(
            seen.servername === undefined
              ? '250-mx.scripted.test\r\n250-STARTTLS\r\n250 PIPELINING\r\n'
              : '250-mx.scripted.test\r\n250 PIPELINING\r\n',
          );
        } else if (line === 'STARTTLS') {
          connection.send('220 2.0.0 Ready to start TLS\r\n');
          seen.servername = await connection.upgrade();
        } else if (line === 'QUIT') {
          connection.send('221 Bye\r\n');
          return;
        } else connection.send('250 Ok\r\n');
      }
    });
    return { ...server, seen };
  }

  test('upgrades when offered, sends the MX host name as SNI, records the unverified certificate, says EHLO again', async () => {
    const { port, seen } = await tlsServer();
    const opened = session(port);
    await opened.open();
    expect(opened.tls).toBe(true);
    expect(opened.tlsError).toBe('DEPTH_ZERO_SELF_SIGNED_CERT');
    expect(seen.servername).toBe('mx.scripted.test');
    // RFC 3207 §4.2: the pre-TLS keywords are forgotten and asked for again.
    expect(seen.ehloCount).toBe(2);
    expect(opened.extensions.has('STARTTLS')).toBe(false);
    const outcome = await opened.transaction('verify@rcpt.test', ['a@example.test'], { smtputf8: false });
    expect(outcome.replies[0]?.code).toBe(250);
  });

  test('sends no SNI when the MX is named by an IP literal (RFC 6066 §3)', async () => {
    const { port, seen } = await tlsServer();
    const opened = session(port, { host: '127.0.0.1' });
    await opened.open();
    expect(opened.tls).toBe(true);
    expect(seen.servername).toBe(false);
  });

  test('startTls "off" stays in plaintext even when offered', async () => {
    const { port, seen } = await tlsServer();
    const opened = session(port, { startTls: 'off' });
    await opened.open();
    expect(opened.tls).toBe(false);
    expect(seen.servername).toBeUndefined();
  });

  test('required but not offered: tls_failed at starttls', async () => {
    const { port } = await scriptedServer((connection) => serveSmtp(connection));
    expect(await openFailure(session(port, { startTls: 'required' }))).toEqual({
      kind: 'tls_failed',
      stage: 'starttls',
      reply: null,
      message: 'the server does not offer STARTTLS',
    });
  });

  test.each([
    ['opportunistic', null],
    ['required', 'tls_failed'],
  ] as const)('a 454 to STARTTLS when %s', async (startTls, failureKind) => {
    const { port } = await scriptedServer(async (connection) => {
      connection.send('220 hi\r\n');
      await connection.next();
      connection.send('250-mx.scripted.test\r\n250 STARTTLS\r\n');
      await connection.next();
      connection.send('454 4.7.0 TLS not available due to local problem\r\n');
      await connection.next();
    });
    const opened = session(port, { startTls });
    if (failureKind === null) {
      await opened.open();
      expect(opened.tls).toBe(false);
      expect(opened.tlsError).toBe('STARTTLS refused: 454 TLS not available due to local problem');
    } else {
      expect(await openFailure(opened)).toMatchObject({
        kind: failureKind,
        stage: 'starttls',
        reply: { code: 454 },
      });
    }
  });

  test('a failed handshake is tls_failed at starttls', async () => {
    const { port } = await scriptedServer(async (connection) => {
      connection.send('220 hi\r\n');
      await connection.next();
      connection.send('250-mx.scripted.test\r\n250 STARTTLS\r\n');
      await connection.next();
      connection.send('220 Go ahead\r\n');
      connection.socket.removeAllListeners('data');
      connection.socket.once('data', () => connection.send('this is not TLS\r\n'));
    });
    expect(await openFailure(session(port))).toMatchObject({
      kind: 'tls_failed',
      stage: 'starttls',
      reply: null,
    });
  });

  test('plaintext injected after the 220 to STARTTLS is never taken as a later reply', async () => {
    const { port } = await scriptedServer(async (connection) => {
      connection.send('220 hi\r\n');
      await connection.next();
      connection.send('250-mx.scripted.test\r\n250 STARTTLS\r\n');
      await connection.next();
      connection.send('220 Go ahead\r\n250 injected\r\n');
      await connection.next();
    });
    expect(await openFailure(session(port))).toMatchObject({ kind: 'invalid_response', stage: 'starttls' });
  });
});

describe('transcript', () => {
  test('records both sides, escapes control characters from the server, and stays bounded', async () => {
    const { port } = await scriptedServer((connection) =>
      serveSmtp(connection, { greeting: '220 hi \u001b[31mred' }),
    );
    const transcript = new Transcript({ maxLines: 6, maxLineLength: 20 });
    const opened = session(port, { transcript });
    await opened.open();
    await opened.transaction('verify@rcpt.test', ['a-very-long-local-part@example.test'], {
      smtputf8: false,
    });
    expect(transcript.lines).toEqual([
      '* connecting to mx.scr…',
      'S: 220 hi \\x1b[31mred',
      'C: EHLO prober.rcpt.tes…',
      'S: 250-mx.scripted.test',
      'S: 250 PIPELINING',
      'C: MAIL FROM:<verify@rc…',
      '* transcript truncated',
    ]);
  });
});

// The network path against what a real link does, asserted by the order of events on both
// sides, never by the clock: chunks overlap in flight, nothing overtakes, the server accepts
// after the client's connect, and the server sees the client's own address. How long a round
// trip takes through it is what the bench prints.
import { createServer, type Socket, connect as tcpConnect } from 'node:net';
import { afterEach, describe, expect, test } from 'vitest';
import type { RunningMx } from './fake-mx.ts';
import { startFastMx } from './fast-mx.ts';
import { type MailWorld, startWorld } from './index.ts';
import { listenOnLoopback } from './loopback.ts';
import { DelayLine, type RoundTrip, type RunningPath, startNetworkPath } from './network-path.ts';
import { SmtpTestClient } from './smtp-test-client.ts';

// Addresses no other test of the world listens on.
const TEST_IP = '127.0.0.61';
// Long against the few milliseconds between two writes of one turn of a loaded machine.
const ROUND_TRIP_MS = 400;

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/** A server on TEST_IP that records what happens, in order, in `events`. */
async function echoServer(events: string[]): Promise<{ port: number }> {
  const server = createServer({ allowHalfOpen: true }, (socket) => {
    events.push(`server accepted from ${socket.remoteAddress}`);
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      for (const line of chunk.split('\n').filter(Boolean)) {
        events.push(`server got ${line}`);
        socket.write(`echo ${line}\n`);
      }
    });
    socket.on('end', () => {
      events.push('server got FIN');
      socket.end();
    });
    socket.on('close', () => events.push('server closed'));
  });
  const port = await listenOnLoopback(server, TEST_IP, 0);
  closers.push(() => new Promise((resolve) => server.close(() => resolve())));
  return { port };
}

async function pathTo(serverPort: number, roundTripMs: RoundTrip = ROUND_TRIP_MS): Promise<RunningPath> {
  const path = await startNetworkPath({ ip: TEST_IP, serverPort, roundTripMs }, 0);
  closers.push(() => path.close());
  return path;
}

function client(port: number, events: string[], from?: string): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = tcpConnect({ host: TEST_IP, port, ...(from ? { localAddress: from } : {}) });
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      for (const line of chunk.split('\n').filter(Boolean)) events.push(`client got ${line}`);
    });
    socket.once('error', reject);
    socket.once('connect', () => {
      events.push('client connected');
      resolve(socket);
    });
    closers.push(async () => {
      socket.destroy();
    });
  });
}

/** Waits for a state with no event of its own; the test's timeout bounds it. */
const until = async (condition: () => boolean) => {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 5));
};

describe('a network path', () => {
  test('the server accepts after the client connected, and sees the client’s own address', async () => {
    const events: string[] = [];
    const { port } = await echoServer(events);
    const path = await pathTo(port);
    await client(path.port, events, '127.0.0.7');
    await until(() => events.length === 2);
    expect(events).toEqual(['client connected', 'server accepted from 127.0.0.7']);
  });

  test('chunks in flight overlap: the third write arrives before the first answer is back', async () => {
    const events: string[] = [];
    const { port } = await echoServer(events);
    const path = await pathTo(port);
    const socket = await client(path.port, events);
    await until(() => events.length === 2);
    // Three separate writes, one turn apart: a path that queued each chunk behind the one
    // before (a delay per chunk in series) would deliver the third after the first echo.
    for (const word of ['one', 'two', 'three']) {
      socket.write(`${word}\n`);
      await new Promise((resolve) => setImmediate(resolve));
    }
    await until(() => events.filter((event) => event.startsWith('client got')).length === 3);
    expect(events.slice(1)).toEqual([
      'server accepted from 127.0.0.1',
      'server got one',
      'server got two',
      'server got three',
      'client got echo one',
      'client got echo two',
      'client got echo three',
    ]);
  });

  test('nothing overtakes: many small writes arrive whole and in order, then the FIN', async () => {
    const events: string[] = [];
    const { port } = await echoServer(events);
    const path = await pathTo(port, { min: 10, max: 30 });
    const socket = await client(path.port, events);
    const words = Array.from({ length: 200 }, (_, index) => `w${index}`);
    for (const word of words) socket.write(`${word}\n`);
    socket.end();
    const closed = new Promise((resolve) => socket.once('close', resolve));
    await closed;
    const received = events.filter((event) => event.startsWith('server got'));
    expect(received).toEqual([...words.map((word) => `server got ${word}`), 'server got FIN']);
    expect(events.filter((event) => event.startsWith('client got'))).toEqual(
      words.map((word) => `client got echo ${word}`),
    );
  });

  test('a client that leaves: the server’s connection ends after it, and the path holds none', async () => {
    const events: string[] = [];
    const { port } = await echoServer(events);
    const path = await pathTo(port, 20);
    const socket = await client(path.port, events);
    await until(() => events.includes('server accepted from 127.0.0.1'));
    expect(path.connections()).toBe(1);
    socket.destroy();
    events.push('client left');
    await until(() => events.includes('server closed') && path.connections() === 0);
    expect(events.indexOf('client left')).toBeLessThan(events.indexOf('server closed'));
  });

  test('a delay line runs its deliveries in the order sent, and a held one keeps them until released', async () => {
    const delivered: number[] = [];
    const line = new DelayLine(5, { held: true });
    for (let index = 0; index < 50; index++) line.send(() => delivered.push(index));
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(delivered).toEqual([]);
    line.release();
    await until(() => delivered.length === 50);
    expect(delivered).toEqual(Array.from({ length: 50 }, (_, index) => index));
    line.stop();
    line.send(() => delivered.push(-1));
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(delivered).toHaveLength(50);
  });
});

describe('a defended MX at a distance', () => {
  let mx: RunningMx | undefined;
  afterEach(async () => {
    await mx?.close();
    mx = undefined;
  });

  test('pipelined commands are answered in order; the block list still sees the listed client', async () => {
    mx = await startFastMx({ name: 'far', host: 'mx.far.test', ip: TEST_IP }, 0, {
      blocklistedClients: ['127.0.0.2'],
    });
    const path = await pathTo(mx.port, 60);
    const listed = await SmtpTestClient.open(TEST_IP, path.port, '127.0.0.2');
    expect((await listed.reply()).code).toBe(220);
    listed.write('EHLO probe.rcpt.test', 'MAIL FROM:<probe@rcpt.test>', 'RCPT TO:<user1@far.test>', 'QUIT');
    expect((await listed.reply()).code).toBe(250);
    expect((await listed.reply()).code).toBe(250);
    expect((await listed.reply()).last).toMatch(/^554 5\.7\.1 .*\[127\.0\.0\.2\] blocked/);
    expect((await listed.reply()).code).toBe(221);
    await listed.closed;

    const clean = await SmtpTestClient.greeted(TEST_IP, path.port);
    clean.write('EHLO probe.rcpt.test', 'MAIL FROM:<probe@rcpt.test>', 'RCPT TO:<user1@far.test>');
    expect((await clean.reply()).code).toBe(250);
    expect((await clean.reply()).code).toBe(250);
    expect((await clean.reply()).code).toBe(250);
    await clean.quit();
    expect(mx.stats()).toMatchObject({ sessionsOpened: 2, rcpts: 2, blocklisted: 1 });
  });
});

describe('the world with a round trip', () => {
  let world: MailWorld | undefined;
  afterEach(async () => {
    await world?.close();
    world = undefined;
  });

  test('every MX host is reached over a path on the SMTP port, its own port being another', async () => {
    world = await startWorld({ roundTripMs: 20 });
    const accept = world.mx.accept;
    if (!accept) throw new Error('no accept server');
    expect(accept.port).not.toBe(world.smtpPort);
    const client = await SmtpTestClient.greeted(accept.ip, world.smtpPort);
    expect((await client.command('EHLO probe.rcpt.test')).code).toBe(250);
    await client.quit();
    expect(accept.maxConcurrent()).toBe(1);
  });
});

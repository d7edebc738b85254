// The SOCKS5 client against the fake world's proxy and against a proxy written byte by byte.
import { createServer, type Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, test, vi } from 'vitest';
import { listenOnLoopback } from '../../../test/world/loopback.ts';
import { type Socks5Server, startSocks5Server } from '../../../test/world/socks5-server.ts';
import { Socks5Error, socks5Connect } from './socks5.ts';

let proxy: Socks5Server;
beforeAll(async () => {
  proxy = await startSocks5Server({ credentials: { username: 'u', password: 'p' } });
});
afterAll(async () => {
  await proxy?.close();
});

describe('socks5Connect', () => {
  test("says why the proxy could not connect (RFC 1928 §6: 'connection refused')", async () => {
    // Nothing listens on 127.0.0.22 (the world's dead MX): the proxy's connect is refused.
    const { ready } = socks5Connect(
      { host: proxy.host, port: proxy.port, username: 'u', password: 'p' },
      { host: '127.0.0.22', port: proxy.port },
      5_000,
    );
    await expect(ready).rejects.toThrow(
      new Socks5Error('Socks5 proxy rejected connection - ConnectionRefused'),
    );
  });

  test('a proxy that wants credentials we do not have: no acceptable method', async () => {
    const { ready } = socks5Connect(
      { host: proxy.host, port: proxy.port, username: null, password: null },
      { host: '127.0.0.1', port: 25 },
      5_000,
    );
    await expect(ready).rejects.toThrow('no accepted authentication type');
  });

  test("the caller's deadline comes first: socks's own timer ends a silent proxy's handshake a second later", async () => {
    let greeted = () => {};
    const greeting = new Promise<void>((resolve) => {
      greeted = resolve;
    });
    // A proxy that reads the greeting and never answers.
    const server: Server = createServer((socket) => socket.once('data', () => greeted()));
    const port = await listenOnLoopback(server, '127.0.0.1', 0);
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      const { socket, ready } = socks5Connect(
        { host: '127.0.0.1', port, username: null, password: null },
        { host: '127.0.0.1', port: 25 },
        2_000,
      );
      let failed = false;
      ready.catch(() => {
        failed = true;
      });
      await greeting;
      await vi.advanceTimersByTimeAsync(2_000);
      expect(failed).toBe(false);
      await vi.advanceTimersByTimeAsync(1_000);
      await expect(ready).rejects.toThrow(new Socks5Error('Proxy connection timed out'));
      socket.destroy();
    } finally {
      vi.useRealTimers();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  test.each([
    ['2001:db8::7', '0420010db8000000000000000000000007'],
    ['::ffff:192.0.2.1', '0400000000000000000000ffffc0000201'],
    ['192.0.2.25', '01c0000219'],
    ['mx.example.test', '030f6d782e6578616d706c652e74657374'],
  ])(
    'names the target %s in the CONNECT request (RFC 1928 §4), and bytes sent with the reply are read first',
    async (host, address) => {
      let request: Buffer = Buffer.alloc(0);
      // A proxy that answers in one write: method, then CONNECT reply and the server's greeting together.
      const server: Server = createServer((socket) => {
        let step = 0;
        socket.on('data', (chunk: Buffer) => {
          if (step++ === 0) {
            socket.write(Buffer.from([0x05, 0x00]));
            return;
          }
          request = chunk;
          socket.write(
            Buffer.concat([
              Buffer.from([0x05, 0x00, 0x00, 0x01, 127, 0, 0, 1, 0, 25]),
              Buffer.from('220 mx ready\r\n'),
            ]),
          );
        });
      });
      const port = await listenOnLoopback(server, '127.0.0.1', 0);
      try {
        const { socket, ready } = socks5Connect(
          { host: '127.0.0.1', port, username: null, password: null },
          { host, port: 25 },
          5_000,
        );
        await ready;
        const greeting = await new Promise<string>((resolve) => {
          socket.once('data', (chunk: Buffer) => resolve(chunk.toString()));
        });
        socket.destroy();
        expect(greeting).toBe('220 mx ready\r\n');
        // VER CMD RSV, then ATYP and DST.ADDR, then DST.PORT.
        expect(request.toString('hex')).toBe(`050100${address}0019`);
      } finally {
        await new Promise<void>((resolve) => server.close(() => resolve()));
      }
    },
  );
});

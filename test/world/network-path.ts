// The distance between the prober and a mail server. On loopback a fake MX answers in
// microseconds; across the internet every packet takes half the round-trip time (RTT) each
// way, and a verifier's speed is mostly how many round trips it waits for. A network path is a
// TCP relay on the MX's address that delays what crosses it as a link of that RTT does:
// - every chunk reaches the other side RTT/2 after it was sent, in order, in each direction;
//   chunks in flight overlap (a link carries many packets at once: the delay is latency, not a
//   queue), so commands written together (RFC 2920 pipelining) cost one round trip in all;
// - the TCP handshake (RFC 9293 §3.5): the server's accept() returns when the client's ACK
//   arrives, 1.5 RTT after the client's SYN, so the greeting reaches the client 2 RTT after it
//   began to connect. The client's own connect() completes at once here (the relay accepts on
//   loopback): only its connect step's timing differs from a real link's;
// - a close (FIN) or a reset reaches the other side RTT/2 later: a server counts a session
//   against its per-client connection limit until then, as a real one does;
// - the server sees the client's own address (the relay connects from it), so per-client
//   connection caps, greylisting triplets and block lists hold as they do without the relay.
// Not modelled: bandwidth, loss and retransmission, jitter within one connection (each
// connection draws its RTT once from the range).
import { createServer, type Socket, connect as tcpConnect } from 'node:net';
import { listenOnLoopback } from './loopback.ts';

/** A round-trip time in milliseconds, or a range each connection draws its own from. */
export type RoundTrip = number | { min: number; max: number };

export interface NetworkPathSpec {
  /** The address the relay listens on, the same as the server's: clients dial it as they would the server. */
  ip: string;
  /** The server's own port on `ip`. */
  serverPort: number;
  roundTripMs: RoundTrip;
}

export interface RunningPath {
  ip: string;
  port: number;
  /** Connections through the path now. */
  connections(): number;
  close(): Promise<void>;
}

/** Whether `roundTrip` puts any distance between client and server. */
export function hasDistance(roundTrip: RoundTrip | undefined): roundTrip is RoundTrip {
  if (roundTrip === undefined) return false;
  return typeof roundTrip === 'number' ? roundTrip > 0 : roundTrip.max > 0;
}

/** Starts a path of `spec.roundTripMs` to the server on `spec.ip`:`spec.serverPort`, listening on `port`. */
export async function startNetworkPath(spec: NetworkPathSpec, port: number): Promise<RunningPath> {
  const clients = new Set<Socket>();
  const upstreams = new Set<Socket>();
  const lines = new Set<DelayLine>();
  const server = createServer({ allowHalfOpen: true, noDelay: true }, (client) => {
    const oneWayMs = drawRoundTrip(spec.roundTripMs) / 2;
    // The client's side waits for the server's accept(); what the client sent meanwhile follows it.
    const toServer = new DelayLine(oneWayMs, { held: true });
    const toClient = new DelayLine(oneWayMs);
    lines.add(toServer);
    lines.add(toClient);
    clients.add(client);
    let upstream: Socket | null = null;
    const forgetWhenBothClosed = () => {
      if (!client.destroyed || (upstream !== null && !upstream.destroyed)) return;
      for (const line of [toServer, toClient]) {
        line.stop();
        lines.delete(line);
      }
    };
    client.on('error', () => {});
    client.on('data', (chunk: Buffer) => toServer.send(() => upstream?.write(chunk)));
    // A FIN crosses as the data before it did; a reset (a close without one) crosses as a reset.
    client.on('end', () => toServer.send(() => upstream?.end()));
    client.on('close', () => {
      clients.delete(client);
      if (upstream === null) clearTimeout(handshake);
      if (!client.readableEnded) toServer.send(() => upstream?.destroy());
      forgetWhenBothClosed();
    });
    // SYN there, SYN-ACK back, ACK there: the server accepts 1.5 RTT after the client's connect.
    const handshake = setTimeout(() => {
      const socket = tcpConnect({
        host: spec.ip,
        port: spec.serverPort,
        ...(client.remoteAddress ? { localAddress: client.remoteAddress } : {}),
        allowHalfOpen: true,
        noDelay: true,
      });
      upstream = socket;
      upstreams.add(socket);
      socket.on('error', () => {});
      socket.once('connect', () => toServer.release());
      socket.on('data', (chunk: Buffer) => toClient.send(() => client.write(chunk)));
      socket.on('end', () => toClient.send(() => client.end()));
      socket.on('close', () => {
        upstreams.delete(socket);
        if (!socket.readableEnded) toClient.send(() => client.destroy());
        forgetWhenBothClosed();
      });
    }, oneWayMs * 3);
  });
  server.maxConnections = 10_000;
  const boundPort = await listenOnLoopback(server, spec.ip, port);
  return {
    ip: spec.ip,
    port: boundPort,
    connections: () => clients.size,
    close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const line of lines) line.stop();
      lines.clear();
      for (const socket of [...clients, ...upstreams]) socket.destroy();
      return closed;
    },
  };
}

function drawRoundTrip(roundTrip: RoundTrip): number {
  if (typeof roundTrip === 'number') return roundTrip;
  return roundTrip.min + Math.random() * (roundTrip.max - roundTrip.min);
}

/**
 * What one direction of a link carries: each delivery runs `delayMs` after it was sent, in the
 * order sent. One timer serves the line, set for the oldest delivery; deliveries of the same
 * moment run together. A held line (the client's side before the server accepted) keeps its
 * deliveries until released.
 */
export class DelayLine {
  readonly #delayMs: number;
  readonly #queue: { dueAt: number; deliver: () => void }[] = [];
  #timer: NodeJS.Timeout | null = null;
  #held: boolean;
  #stopped = false;

  constructor(delayMs: number, options: { held?: boolean } = {}) {
    this.#delayMs = delayMs;
    this.#held = options.held ?? false;
  }

  send(deliver: () => void): void {
    if (this.#stopped) return;
    this.#queue.push({ dueAt: performance.now() + this.#delayMs, deliver });
    this.#schedule();
  }

  release(): void {
    this.#held = false;
    this.#schedule();
  }

  /** Drops what is still on its way. */
  stop(): void {
    this.#stopped = true;
    this.#queue.length = 0;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
  }

  #schedule(): void {
    const head = this.#queue[0];
    if (this.#timer !== null || this.#held || head === undefined) return;
    this.#timer = setTimeout(() => this.#drain(), Math.max(0, head.dueAt - performance.now()));
  }

  #drain(): void {
    this.#timer = null;
    // Timers fire on whole milliseconds: what is due within one is due now.
    const now = performance.now() + 1;
    while (!this.#held && !this.#stopped && (this.#queue[0]?.dueAt ?? Number.POSITIVE_INFINITY) <= now) {
      this.#queue.shift()?.deliver();
    }
    this.#schedule();
  }
}

// Plain DNS over UDP (RFC 1035 §4.2.1) for the same zone as the DoH stub: what a system
// resolver asks, so `rcpt-prober verify` can be pointed at the world with DNS_SERVERS.
import { createSocket } from 'node:dgram';
import { answerQuery, namesThatExist } from './dns-answer.ts';
import type { ZoneEntry } from './zone.ts';

export interface UdpDns {
  /** host:port, as `dns.setServers` and DNS_SERVERS take it. */
  server: string;
  port: number;
  /** Takes names added to or removed from the zone since the start into account. */
  zoneChanged(): void;
  close(): Promise<void>;
}

export async function startUdpDns(zone: Readonly<Record<string, ZoneEntry>>, port: number): Promise<UdpDns> {
  let existingNames = namesThatExist(zone);
  const socket = createSocket('udp4');
  socket.on('message', (query, peer) => {
    try {
      const answer = answerQuery(query, zone, existingNames);
      // A silent name gets no answer: the client times out.
      if (answer !== null) socket.send(answer, peer.port, peer.address);
    } catch {
      // Not a DNS query: a resolver drops it rather than answer.
    }
  });
  await new Promise<void>((resolve, reject) => {
    socket.once('error', reject);
    socket.bind(port, '127.0.0.1', () => resolve());
  });
  const bound = socket.address().port;
  return {
    server: `127.0.0.1:${bound}`,
    port: bound,
    zoneChanged() {
      existingNames = namesThatExist(zone);
    },
    close: () => new Promise((resolve) => socket.close(() => resolve())),
  };
}

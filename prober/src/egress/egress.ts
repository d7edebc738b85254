// An egress is one way out to the internet that SMTP sessions are sent from: a local source
// address (SOURCE_ADDRESSES), the system's choice when none is set, or a SOCKS5 proxy
// (SOCKS5_PROXIES). A mail server judges the address a session comes from — its block lists,
// its reverse DNS, its rate limits — so each egress has its own blocks and its own budget
// (docs/operations.md, "Egress addresses").

/** A SOCKS5 proxy (RFC 1928), with RFC 1929 username/password authentication when set. */
export interface Socks5Proxy {
  host: string;
  port: number;
  /** Null: the proxy takes clients without authentication (RFC 1928 method 0x00). */
  username: string | null;
  password: string | null;
}

export type Egress =
  | {
      /** Stable name in metrics, logs, the hub's view: the source address, or `system`. */
      id: string;
      kind: 'direct';
      /** The local address sessions bind to; null lets the system choose. */
      localAddress: string | null;
      /** The EHLO name for this egress (its address's PTR name), when it differs from HELO_NAME. */
      helo: string | null;
    }
  | {
      /** `socks5://host:port`: never the credentials. */
      id: string;
      kind: 'socks5';
      proxy: Socks5Proxy;
      helo: string | null;
      /**
       * The public address the proxy sends from (`?address=`), for the health check
       * (egress-health-checker.ts); null: not known, not checked.
       */
      address: string | null;
    };

/** The egress of a prober with no SOURCE_ADDRESSES and no SOCKS5_PROXIES: whatever the system picks. */
export const SYSTEM_EGRESS: Egress = Object.freeze({
  id: 'system',
  kind: 'direct',
  localAddress: null,
  helo: null,
});

export function directEgress(localAddress: string, helo: string | null = null): Egress {
  return { id: localAddress, kind: 'direct', localAddress, helo };
}

export function socks5Egress(
  proxy: Socks5Proxy,
  helo: string | null = null,
  address: string | null = null,
): Egress {
  const host = proxy.host.includes(':') ? `[${proxy.host}]` : proxy.host;
  return { id: `socks5://${host}:${proxy.port}`, kind: 'socks5', proxy, helo, address };
}

/** What the hub and logs may know of an egress: its id, its kind and its HELO name, no secret. */
export function describeEgress(egress: Egress): { id: string; kind: Egress['kind']; helo: string | null } {
  return { id: egress.id, kind: egress.kind, helo: egress.helo };
}

// Runs each egress's health check (egress-health.ts) when the prober starts and every
// EGRESS_HEALTH_INTERVAL_MS after, with the prober's resolver (DNS_SERVERS, else the system's:
// a DNSBL answers what the resolver that asks may see), and keeps the newest result per egress
// for the router and the hub (docs/operations.md, "Egress addresses").
import { connect as tcpConnect } from 'node:net';
import type { DnsLookup, LookupOutcome } from '@rcpt/shared/dns/lookup';
import { blocklistName } from '../dns/reverse-names.ts';
import type { PtrLookup } from '../dns/system-lookup.ts';
import type { Egress } from './egress.ts';
import { type EgressHealth, type HealthAnswers, readHealth } from './egress-health.ts';
import { socks5Connect } from './socks5.ts';

export type HealthLookup = Pick<DnsLookup, 'a' | 'aaaa'> & PtrLookup;

export interface EgressHealthOptions {
  egresses: readonly Egress[];
  lookup: HealthLookup;
  /** DNSBL zones (EGRESS_BLOCKLISTS). */
  blocklists: readonly string[];
  /** Between two checks (EGRESS_HEALTH_INTERVAL_MS). */
  intervalMs: number;
  /** Where the port 25 check connects (EGRESS_PORT25_CHECK_HOST); null: not checked. */
  port25Target: { host: string; port: number } | null;
  /** HELO_NAME: the HELO of an egress without its own. */
  heloName: string | null;
  /** For the port 25 connection. Default 10,000 ms. */
  connectTimeoutMs?: number;
  /** Called after a check whose result differs from the one before (checkedAt aside). */
  onChange?: (health: EgressHealth[]) => void;
  now?: () => number;
}

/** The public address receivers see from `egress`, when the prober knows it. */
export function publicAddressOf(egress: Egress): string | null {
  if (egress.kind === 'direct') return egress.localAddress;
  return egress.address;
}

export class EgressHealthChecker {
  readonly #options: EgressHealthOptions;
  #health = new Map<string, EgressHealth>();
  #timer: NodeJS.Timeout | null = null;
  #running: Promise<EgressHealth[]> | null = null;

  constructor(options: EgressHealthOptions) {
    this.#options = options;
  }

  /** Checks now, then every interval; the timer does not keep the process alive. */
  start(): Promise<EgressHealth[]> {
    this.#timer ??= setInterval(() => void this.check(), this.#options.intervalMs);
    this.#timer.unref();
    return this.check();
  }

  /** The newest result of each checked egress. */
  current(): EgressHealth[] {
    return [...this.#health.values()];
  }

  healthOf(egressId: string): EgressHealth | undefined {
    return this.#health.get(egressId);
  }

  /** Checks every egress once (a check already running is awaited, not doubled). */
  check(): Promise<EgressHealth[]> {
    this.#running ??= this.#checkAll().finally(() => {
      this.#running = null;
    });
    return this.#running;
  }

  close(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
  }

  async #checkAll(): Promise<EgressHealth[]> {
    const results = await Promise.all(this.#options.egresses.map((egress) => this.#checkOne(egress)));
    const before = JSON.stringify(this.current().map(withoutTime));
    this.#health = new Map(results.map((health) => [health.egress, health]));
    if (JSON.stringify(results.map(withoutTime)) !== before) this.#options.onChange?.(results);
    return results;
  }

  async #checkOne(egress: Egress): Promise<EgressHealth> {
    const { lookup, blocklists } = this.#options;
    const address = publicAddressOf(egress);
    const checkedAt = (this.#options.now ?? Date.now)();
    const port25 = this.#checkPort25(egress);
    if (address === null) {
      return readHealth({
        ...EMPTY,
        egress: egress.id,
        address,
        helo: null,
        port25: await port25,
        checkedAt,
      });
    }
    const forwardOf = address.includes(':') ? lookup.aaaa : lookup.a;
    const ptr = await lookup.ptr(address);
    const names =
      ptr.kind === 'answer' ? ptr.records.map((name) => name.replace(/\.$/, '').toLowerCase()) : [];
    const forward = new Map<string, LookupOutcome<string>>(
      await Promise.all(names.map(async (name) => [name, await forwardOf(name)] as const)),
    );
    const listings = await Promise.all(
      blocklists.map(async (zone) => ({
        zone,
        outcome: await lookup.a(blocklistName(address, zone) ?? zone),
      })),
    );
    return readHealth({
      egress: egress.id,
      address,
      helo: egress.helo ?? this.#options.heloName,
      ptr,
      forward,
      blocklists: listings,
      port25: await port25,
      checkedAt,
    });
  }

  /** A TCP connection to the port 25 target from the egress: refused or timed out is `blocked`. */
  async #checkPort25(egress: Egress): Promise<EgressHealth['port25']> {
    const target = this.#options.port25Target;
    if (target === null) return 'unknown';
    const timeoutMs = this.#options.connectTimeoutMs ?? 10_000;
    const socket =
      egress.kind === 'socks5'
        ? socks5Connect(egress.proxy, target, timeoutMs)
        : (() => {
            const direct = tcpConnect({
              ...target,
              ...(egress.localAddress ? { localAddress: egress.localAddress } : {}),
            });
            const ready = new Promise<void>((resolve, reject) => {
              direct.once('connect', () => resolve());
              direct.once('error', reject);
            });
            return { socket: direct, ready };
          })();
    socket.socket.on('error', () => {});
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<'blocked'>((resolve) => {
      timer = setTimeout(() => resolve('blocked'), timeoutMs);
    });
    try {
      return await Promise.race([socket.ready.then((): 'ok' => 'ok'), timedOut]);
    } catch {
      return 'blocked';
    } finally {
      clearTimeout(timer);
      socket.socket.destroy();
    }
  }
}

const EMPTY: Pick<HealthAnswers, 'ptr' | 'forward' | 'blocklists'> = {
  ptr: null,
  forward: new Map(),
  blocklists: [],
};

function withoutTime({ checkedAt: _, ...rest }: EgressHealth): Omit<EgressHealth, 'checkedAt'> {
  return rest;
}

// The prober's configuration: environment variables → one typed object, parsed once with zod.
// Every problem names the variable and says why, so an operator can fix an env file from the
// message alone. The prober token's value never appears in a message.
import { isIP } from 'node:net';
import { REGION_NAME, REGION_NAME_RULE } from '@rcpt/shared/prober-regions';
import { z } from 'zod';
import { directEgress, type Egress, SYSTEM_EGRESS, socks5Egress } from './egress/egress.ts';
import { DEFAULT_BLOCKLISTS } from './egress/egress-health.ts';
import { DEFAULT_PROVIDER_HOURLY_BUDGET } from './throttle/egress-budget.ts';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** `run` is the daemon (needs the edge); `verify` is the one-off CLI check (needs neither). */
export type ProberMode = 'run' | 'verify';

export interface ProberConfig {
  /** The edge's base URL with a ws: or wss: scheme; null when unset (allowed for `verify`). */
  edgeUrl: URL | null;
  proberToken: string | null;
  region: string;
  capacity: number;
  smtpPort: number;
  allowPrivateTargets: boolean;
  requireTls: boolean;
  /** Overrides the edge's HELO name: in production it must match this IP's PTR record. */
  heloName: string | null;
  /** Overrides the edge's MAIL FROM; '' is the null reverse-path (`MAIL_FROM=<>`). */
  mailFrom: string | null;
  connectTimeoutMs: number;
  commandTimeoutMs: number;
  perMxConcurrency: number;
  /** 0 disables the /metrics and /healthz server. */
  opsPort: number;
  opsHost: string;
  logLevel: LogLevel;
  drainTimeoutMs: number;
  /** Resolvers for `verify` (`ip`, `ip:port` or `[ipv6]:port`); empty means the system's. */
  dnsServers: string[];
  /**
   * Where SMTP sessions go out: SOURCE_ADDRESSES, then SOCKS5_PROXIES; the system's choice
   * (one egress) when neither is set. Never empty.
   */
  egresses: Egress[];
  /** Recipients one egress asks one provider about in an hour (throttle/egress-budget.ts). */
  egressHourlyBudget: number;
  /** Whether a new egress starts at a quarter of its budget (throttle/egress-budget.ts). */
  egressWarmUp: boolean;
  /** The DNS blocklists each egress is looked up on (egress/egress-health.ts). */
  egressBlocklists: string[];
  /** Between two health checks of the egresses. */
  egressHealthIntervalMs: number;
  /** Where the port 25 check connects; null: not checked (`unknown`). */
  egressPort25CheckHost: { host: string; port: number } | null;
}

export class ConfigError extends Error {
  /** One line per bad variable, each naming it. */
  readonly problems: string[];

  constructor(problems: string[]) {
    super(problems.join('; '));
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

type Env = Record<string, string | undefined>;

// An empty value counts as unset: `FOO=` in a systemd EnvironmentFile or a docker --env-file
// is how operators blank a variable out.
const optionalText = z
  .string()
  .optional()
  .transform((raw) => (raw === undefined || raw.trim() === '' ? undefined : raw.trim()));

function integerVariable(min: number, max: number, fallback: number) {
  return z
    .string()
    .optional()
    .transform((raw, ctx) => {
      if (raw === undefined || raw.trim() === '') return fallback;
      const text = raw.trim();
      const value = Number(text);
      if (!/^\d+$/.test(text) || !Number.isSafeInteger(value) || value < min || value > max) {
        ctx.addIssue({
          code: 'custom',
          message: `must be an integer ${min}–${max}, got ${JSON.stringify(raw)}`,
        });
        return z.NEVER;
      }
      return value;
    });
}

function booleanVariable(fallback: boolean) {
  return z
    .string()
    .optional()
    .transform((raw, ctx) => {
      if (raw === undefined || raw.trim() === '') return fallback;
      const text = raw.trim().toLowerCase();
      if (['true', '1', 'yes', 'on'].includes(text)) return true;
      if (['false', '0', 'no', 'off'].includes(text)) return false;
      ctx.addIssue({ code: 'custom', message: `must be true or false, got ${JSON.stringify(raw)}` });
      return z.NEVER;
    });
}

/** localhost, 127.0.0.0/8 or [::1] (WHATWG URL host forms). */
function isLoopbackHost(hostname: string): boolean {
  return hostname === 'localhost' || hostname === '[::1]' || /^127(?:\.\d{1,3}){3}$/.test(hostname);
}

const edgeUrlVariable = optionalText.transform((text, ctx) => {
  if (text === undefined) return null;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    ctx.addIssue({
      code: 'custom',
      message: `must be an absolute URL (https://… or wss://…), got ${JSON.stringify(text)}`,
    });
    return z.NEVER;
  }
  // The link is a WebSocket: http(s) is accepted because operators copy the edge's web address.
  const wsScheme = { 'http:': 'ws:', 'https:': 'wss:', 'ws:': 'ws:', 'wss:': 'wss:' }[url.protocol];
  if (!wsScheme) {
    ctx.addIssue({ code: 'custom', message: `must use http, https, ws or wss, got ${JSON.stringify(text)}` });
    return z.NEVER;
  }
  if (wsScheme === 'ws:' && !isLoopbackHost(url.hostname)) {
    // The token goes in the Authorization header of the upgrade request: in clear text on ws.
    ctx.addIssue({
      code: 'custom',
      message: `must use https or wss (http and ws only to a loopback address), got ${JSON.stringify(text)}`,
    });
    return z.NEVER;
  }
  if (url.username || url.password) {
    // The prober authenticates with PROBER_TOKEN; credentials in the URL would end up in logs.
    ctx.addIssue({ code: 'custom', message: 'must not contain a user name or password (use PROBER_TOKEN)' });
    return z.NEVER;
  }
  return new URL(`${wsScheme}//${url.host}${url.pathname}${url.search}`);
});

const proberTokenVariable = optionalText.transform((token, ctx) => {
  if (token === undefined) return null;
  // It goes into an HTTP header verbatim; say what is wrong without echoing the secret.
  if (/[\s\p{Cc}]/u.test(token)) {
    ctx.addIssue({ code: 'custom', message: 'must not contain spaces or control characters' });
    return z.NEVER;
  }
  return token;
});

const HOST_NAME =
  /^(?=.{1,253}\.?$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?$/;

const heloNameVariable = optionalText.transform((name, ctx) => {
  if (name === undefined) return null;
  if (!HOST_NAME.test(name)) {
    ctx.addIssue({
      code: 'custom',
      message: `must be a host name (this IP's PTR name), got ${JSON.stringify(name)}`,
    });
    return z.NEVER;
  }
  return name.replace(/\.$/, '');
});

const mailFromVariable = optionalText.transform((address, ctx) => {
  if (address === undefined) return null;
  // RFC 5321 §4.5.5: the null reverse-path, written as it appears on the wire.
  if (address === '<>') return '';
  if (address.length > 320 || !/^[^\s<>@]+@[^\s<>@]+$/.test(address)) {
    ctx.addIssue({
      code: 'custom',
      message: `must be an address like verify@example.com, or <> for the null sender, got ${JSON.stringify(address)}`,
    });
    return z.NEVER;
  }
  return address;
});

const regionVariable = optionalText.transform((region, ctx) => {
  if (region === undefined) return 'default';
  if (!REGION_NAME.test(region)) {
    ctx.addIssue({ code: 'custom', message: `must be ${REGION_NAME_RULE}, got ${JSON.stringify(region)}` });
    return z.NEVER;
  }
  return region;
});

const logLevelVariable = optionalText.transform((level, ctx) => {
  if (level === undefined) return 'info' as LogLevel;
  const lower = level.toLowerCase();
  if (!(LOG_LEVELS as readonly string[]).includes(lower)) {
    ctx.addIssue({
      code: 'custom',
      message: `must be one of ${LOG_LEVELS.join(', ')}, got ${JSON.stringify(level)}`,
    });
    return z.NEVER;
  }
  return lower as LogLevel;
});

const opsHostVariable = optionalText.transform((host, ctx) => {
  if (host === undefined) return '127.0.0.1';
  if (isIP(host) === 0 && !HOST_NAME.test(host)) {
    ctx.addIssue({
      code: 'custom',
      message: `must be an IP address or host name, got ${JSON.stringify(host)}`,
    });
    return z.NEVER;
  }
  return host;
});

const dnsServersVariable = optionalText.transform((list, ctx) => {
  if (list === undefined) return [];
  const servers = list.split(/[\s,]+/).filter(Boolean);
  for (const server of servers) {
    if (!isResolverAddress(server)) {
      ctx.addIssue({
        code: 'custom',
        message: `must be a comma-separated list of IP addresses (ip, ip:port or [ipv6]:port), got ${JSON.stringify(server)}`,
      });
      return z.NEVER;
    }
  }
  return servers;
});

/** The forms `dns.setServers` takes: `1.2.3.4`, `1.2.3.4:53`, `::1`, `[::1]:53`. */
function isResolverAddress(server: string): boolean {
  if (isIP(server) !== 0) return true;
  const withPort = /^(?:\[([^\]]+)\]|([^:]+)):(\d{1,5})$/.exec(server);
  if (!withPort) return false;
  const host = withPort[1] ?? withPort[2] ?? '';
  const port = Number(withPort[3]);
  return isIP(host) !== 0 && port >= 1 && port <= 65535 && (withPort[1] === undefined || isIP(host) === 6);
}

/**
 * A comma-separated list of egresses, each entry read by `parse`: its egress, or what is wrong
 * with it (said without the entry itself when it may hold a password).
 */
function egressListVariable(parse: (entry: string, position: number) => Egress | string) {
  return optionalText.transform((list, ctx) => {
    if (list === undefined) return [];
    const egresses: Egress[] = [];
    for (const entry of list
      .split(',')
      .map((item) => item.trim())
      .filter(Boolean)) {
      const egress = parse(entry, egresses.length + 1);
      if (typeof egress === 'string') {
        ctx.addIssue({ code: 'custom', message: egress });
        return z.NEVER;
      }
      egresses.push(egress);
    }
    return egresses;
  });
}

/** A per-egress HELO name without its final dot, or null when it is not a host name. */
function egressHelo(name: string): string | null {
  return HOST_NAME.test(name) ? name.replace(/\.$/, '') : null;
}

/** `198.51.100.7` or `198.51.100.7=out1.example.net` (the HELO name of that address). */
const sourceAddressesVariable = egressListVariable((entry) => {
  const [address = '', helo, ...rest] = entry.split('=');
  if (isIP(address) === 0 || rest.length > 0) {
    return `must be a comma-separated list of local IP addresses, each optionally =HELO name, got ${JSON.stringify(entry)}`;
  }
  if (helo === undefined) return directEgress(address);
  const heloName = egressHelo(helo);
  return heloName
    ? directEgress(address, heloName)
    : `HELO name must be a host name, got ${JSON.stringify(helo)}`;
});

/** `socks5://user:pass@host:port?helo=name`, comma-separated (docs/operations.md). */
const socks5ProxiesVariable = egressListVariable((entry, position) => {
  let url: URL;
  try {
    url = new URL(entry);
  } catch {
    // The entry may hold a password: say where it went wrong, not what it was.
    return `entry ${position} is not a socks5:// URL`;
  }
  const extraParams = [...url.searchParams.keys()].filter((key) => key !== 'helo' && key !== 'address');
  if (
    url.protocol !== 'socks5:' ||
    !url.hostname ||
    (url.pathname !== '' && url.pathname !== '/') ||
    extraParams.length > 0
  ) {
    return `entry ${position} must be socks5://[user:password@]host:port[?helo=name][&address=public IP]`;
  }
  const username = decodeURIComponent(url.username);
  const password = decodeURIComponent(url.password);
  // RFC 1929 §2: each is one length octet and 1–255 octets.
  if (
    Buffer.byteLength(username) > 255 ||
    Buffer.byteLength(password) > 255 ||
    (password !== '' && username === '')
  ) {
    return `entry ${position}: user name and password must be 1–255 bytes each (RFC 1929)`;
  }
  const helo = url.searchParams.get('helo');
  const heloName = helo === null ? null : egressHelo(helo);
  if (helo !== null && heloName === null)
    return `entry ${position}: helo must be a host name, got ${JSON.stringify(helo)}`;
  const address = url.searchParams.get('address');
  if (address !== null && isIP(address) === 0)
    return `entry ${position}: address must be the proxy's public IP address, got ${JSON.stringify(address)}`;
  return socks5Egress(
    {
      host: url.hostname.replace(/^\[|\]$/g, ''),
      port: url.port === '' ? 1080 : Number(url.port),
      username: username === '' ? null : username,
      password: username === '' ? null : password,
    },
    heloName,
    address,
  );
});

/** Most DNSBL zones each egress is looked up on: a health report carries at most 32 (the contract). */
const MAX_BLOCKLISTS = 16;

const blocklistsVariable = z
  .string()
  .optional()
  .transform((raw, ctx) => {
    // Unset: the default lists; set but blank: none.
    if (raw === undefined) return [...DEFAULT_BLOCKLISTS];
    const zones = raw
      .split(/[\s,]+/)
      .filter(Boolean)
      .map((zone) => zone.replace(/\.$/, '').toLowerCase());
    const bad = zones.find((zone) => !HOST_NAME.test(zone) || !zone.includes('.'));
    if (bad !== undefined) {
      ctx.addIssue({
        code: 'custom',
        message: `must be a comma-separated list of DNSBL zones (zen.spamhaus.org, …), got ${JSON.stringify(bad)}`,
      });
      return z.NEVER;
    }
    const unique = [...new Set(zones)];
    if (unique.length > MAX_BLOCKLISTS) {
      ctx.addIssue({
        code: 'custom',
        message: `must name at most ${MAX_BLOCKLISTS} zones, got ${unique.length}`,
      });
      return z.NEVER;
    }
    return unique;
  });

/** `host` or `host:port` (port 25 unless given): a mail server to open a connection to. */
const port25CheckHostVariable = optionalText.transform((text, ctx) => {
  if (text === undefined) return null;
  const match = /^(?:\[([^\]]+)\]|([^:]+))(?::(\d{1,5}))?$/.exec(text);
  const host = match?.[1] ?? match?.[2] ?? '';
  const port = match?.[3] === undefined ? 25 : Number(match[3]);
  if (!match || (isIP(host) === 0 && !HOST_NAME.test(host)) || port < 1 || port > 65_535) {
    ctx.addIssue({ code: 'custom', message: `must be host or host:port, got ${JSON.stringify(text)}` });
    return z.NEVER;
  }
  return { host, port };
});

const EnvSchema = z.object({
  EDGE_URL: edgeUrlVariable,
  PROBER_TOKEN: proberTokenVariable,
  REGION: regionVariable,
  CAPACITY: integerVariable(1, 10_000, 50),
  SMTP_PORT: integerVariable(1, 65_535, 25),
  ALLOW_PRIVATE_TARGETS: booleanVariable(false),
  REQUIRE_TLS: booleanVariable(false),
  HELO_NAME: heloNameVariable,
  MAIL_FROM: mailFromVariable,
  CONNECT_TIMEOUT_MS: integerVariable(100, 300_000, 10_000),
  COMMAND_TIMEOUT_MS: integerVariable(100, 600_000, 30_000),
  PER_MX_CONCURRENCY: integerVariable(1, 1_000, 5),
  OPS_PORT: integerVariable(0, 65_535, 9464),
  OPS_HOST: opsHostVariable,
  LOG_LEVEL: logLevelVariable,
  DRAIN_TIMEOUT_MS: integerVariable(0, 3_600_000, 30_000),
  DNS_SERVERS: dnsServersVariable,
  SOURCE_ADDRESSES: sourceAddressesVariable,
  SOCKS5_PROXIES: socks5ProxiesVariable,
  EGRESS_HOURLY_BUDGET: integerVariable(1, 10_000_000, DEFAULT_PROVIDER_HOURLY_BUDGET),
  EGRESS_WARM_UP: booleanVariable(true),
  EGRESS_BLOCKLISTS: blocklistsVariable,
  EGRESS_HEALTH_INTERVAL_MS: integerVariable(60_000, 86_400_000, 3_600_000),
  EGRESS_PORT25_CHECK_HOST: port25CheckHostVariable,
});

/** Reads the configuration from `env`. Throws a ConfigError listing every bad variable. */
export function loadConfig(env: Env, mode: ProberMode): ProberConfig {
  const problems: string[] = [];
  // Provider knowledge is built in (the provider registry): a rules file named here would be
  // silently ignored, so say so instead.
  if (env.PROVIDER_RULES?.trim()) {
    problems.push(
      'PROVIDER_RULES is no longer read: provider rules are built into rcpt (shared/src/verify/providers.ts); unset it',
    );
  }
  const parsed = EnvSchema.safeParse(env);
  if (!parsed.success) {
    for (const issue of parsed.error.issues)
      problems.push(`${String(issue.path[0] ?? 'environment')} ${issue.message}`);
  }
  if (mode === 'run') {
    if (!env.EDGE_URL?.trim())
      problems.push('EDGE_URL is required for `rcpt-prober run` (the edge to link to)');
    if (!env.PROBER_TOKEN?.trim()) {
      problems.push(
        'PROBER_TOKEN is required for `rcpt-prober run` (create one with `npm run admin -- prober-token create`)',
      );
    }
  }
  if (parsed.success) {
    const ids = [...parsed.data.SOURCE_ADDRESSES, ...parsed.data.SOCKS5_PROXIES].map((egress) => egress.id);
    const twice = ids.find((id, index) => ids.indexOf(id) !== index);
    if (twice) problems.push(`SOURCE_ADDRESSES and SOCKS5_PROXIES name the egress ${twice} twice`);
  }
  if (!parsed.success || problems.length > 0) throw new ConfigError(problems);
  const vars = parsed.data;
  const egresses = [...vars.SOURCE_ADDRESSES, ...vars.SOCKS5_PROXIES];

  return {
    edgeUrl: vars.EDGE_URL,
    proberToken: vars.PROBER_TOKEN,
    region: vars.REGION,
    capacity: vars.CAPACITY,
    smtpPort: vars.SMTP_PORT,
    allowPrivateTargets: vars.ALLOW_PRIVATE_TARGETS,
    requireTls: vars.REQUIRE_TLS,
    heloName: vars.HELO_NAME,
    mailFrom: vars.MAIL_FROM,
    connectTimeoutMs: vars.CONNECT_TIMEOUT_MS,
    commandTimeoutMs: vars.COMMAND_TIMEOUT_MS,
    perMxConcurrency: vars.PER_MX_CONCURRENCY,
    opsPort: vars.OPS_PORT,
    opsHost: vars.OPS_HOST,
    logLevel: vars.LOG_LEVEL,
    drainTimeoutMs: vars.DRAIN_TIMEOUT_MS,
    dnsServers: vars.DNS_SERVERS,
    egresses: egresses.length > 0 ? egresses : [SYSTEM_EGRESS],
    egressHourlyBudget: vars.EGRESS_HOURLY_BUDGET,
    egressWarmUp: vars.EGRESS_WARM_UP,
    egressBlocklists: vars.EGRESS_BLOCKLISTS,
    egressHealthIntervalMs: vars.EGRESS_HEALTH_INTERVAL_MS,
    egressPort25CheckHost: vars.EGRESS_PORT25_CHECK_HOST,
  };
}

/** What is safe to log about the configuration: everything but the token, which is only said to be set. */
export function describeConfig(config: ProberConfig): Record<string, unknown> {
  const { proberToken, edgeUrl, egresses, ...rest } = config;
  return {
    ...rest,
    edgeUrl: edgeUrl?.href ?? null,
    proberTokenSet: proberToken !== null,
    // A proxy's id carries no credentials.
    egresses: egresses.map((egress) => egress.id),
  };
}

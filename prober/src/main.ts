// The daemon (`rcpt-prober run`): config → SMTP engine → link to the edge → metrics and
// health → graceful drain on SIGTERM/SIGINT. This file is the only place the link, the ops
// server and the SMTP engine meet.
import type {
  EgressMemoryMessage,
  EgressStateMessage,
  ProbeReport,
  ProbeRequest,
} from '@rcpt/shared/contract/prober';
import { MAX_EGRESS_BLOCKS, MAX_EGRESSES } from '@rcpt/shared/contract/prober';
import { providerSessionLimits } from '@rcpt/shared/verify/providers';
import { describeConfig, type ProberConfig } from './config.ts';
import { systemLookup } from './dns/system-lookup.ts';
import { describeEgress, type Egress } from './egress/egress.ts';
import { type EgressBlock, EgressBlocks, scopeKey } from './egress/egress-blocks.ts';
import type { EgressHealth } from './egress/egress-health.ts';
import { EgressHealthChecker } from './egress/egress-health-checker.ts';
import { egressLabel } from './egress/egress-label.ts';
import { EgressRouter } from './egress/egress-router.ts';
import { type DrainOutcome, EdgeLink, proberConnectUrl } from './link/edge-link.ts';
import { type OpsServer, startOpsServer } from './ops/http.ts';
import type { Logger } from './ops/logger.ts';
import { ProberMetrics } from './ops/metrics.ts';
import { CatchAllCache } from './smtp/catch-all-cache.ts';
import type { ProbeDeps } from './smtp/probe.ts';
import { type BudgetUse, EgressBudget } from './throttle/egress-budget.ts';
import { MxThrottle } from './throttle/mx-throttle.ts';

/** What the daemon and the CLI need from the SMTP engine. */
export interface ProbeEngine {
  probe(request: ProbeRequest): Promise<ProbeReport>;
  /** SMTP sessions open now. */
  openSessions(): number;
  /** MX hosts being backed off from now. */
  hostBackoffs(): number;
  readonly egresses: readonly Egress[];
  /** Blocks of the egresses in force now. */
  egressBlocks(): EgressBlock[];
  /** Each (egress, provider) pair's last hour against its budget. */
  egressUses(): BudgetUse[];
  /** When each egress began warming up. */
  egressWarmUps(): { egress: string; since: number }[];
  /** Takes back what the region's hub remembers of the egresses (a restart forgot it). */
  restoreEgresses(memory: Omit<EgressMemoryMessage, 'type' | 'id'>): void;
  /** Each egress's newest health check (none before the first). */
  egressHealth(): EgressHealth[];
  /** Checks the egresses' health now and every EGRESS_HEALTH_INTERVAL_MS (the daemon; not `verify`). */
  startHealthChecks(): Promise<EgressHealth[]>;
  /** Called whenever a block begins or ends, or a health check's result changes. */
  onEgressChange(listener: () => void): void;
  /** Ends the block and health check timers. */
  close(): void;
}

/**
 * The SMTP engine as configured: its throttle (per MX address, and per provider as the provider
 * registry says), and this prober's overrides.
 */
export function createEngine(config: ProberConfig, logger?: Logger): ProbeEngine {
  const listeners: (() => void)[] = [];
  const changed = () => {
    for (const listener of listeners) listener();
  };
  // A block and its end are the events an operator alerts on (docs/operations.md).
  const blocks = new EgressBlocks({
    events: {
      blocked(block) {
        logger?.warn(
          {
            event: 'egress_blocked',
            egress: block.egress,
            scope: scopeKey(block.scope),
            until: new Date(block.until).toISOString(),
            level: block.level,
            reply: `${block.reply.code} ${block.reply.enhanced ?? ''} ${block.reply.text}`.slice(0, 300),
          },
          'egress blocked',
        );
        changed();
      },
      ended(block, why) {
        logger?.info(
          { event: 'egress_block_ended', egress: block.egress, scope: scopeKey(block.scope), why },
          'egress block ended',
        );
        changed();
      },
    },
  });
  // What receivers look up about each egress, asked with the prober's resolver.
  const health = new EgressHealthChecker({
    egresses: config.egresses,
    lookup: systemLookup({ servers: config.dnsServers }),
    blocklists: config.egressBlocklists,
    intervalMs: config.egressHealthIntervalMs,
    port25Target: config.egressPort25CheckHost,
    heloName: config.heloName,
    connectTimeoutMs: config.connectTimeoutMs,
    onChange(results) {
      for (const result of results) {
        const unhealthy =
          result.listings.length > 0 ||
          result.fcrdns === 'fail' ||
          result.heloMatches === false ||
          result.port25 === 'blocked';
        if (!unhealthy) continue;
        logger?.warn(
          {
            event: 'egress_unhealthy',
            egress: result.egress,
            ptr: result.ptr,
            fcrdns: result.fcrdns,
            heloMatches: result.heloMatches,
            listings: result.listings.map((listing) => `${listing.zone} ${listing.codes.join(' ')}`),
            port25: result.port25,
          },
          'egress health check failed',
        );
      }
      changed();
    },
  });
  const router = new EgressRouter({
    egresses: config.egresses,
    health,
    blocks,
    budget: new EgressBudget({
      hourlyBudget: config.egressHourlyBudget,
      warmUp: config.egressWarmUp,
    }),
  });
  const throttle = new MxThrottle({
    perIpLimit: config.perMxConcurrency,
    providerLimits: providerSessionLimits(),
  });
  const deps: ProbeDeps = {
    smtpPort: config.smtpPort,
    allowPrivateTargets: config.allowPrivateTargets,
    requireTls: config.requireTls,
    timeouts: { connectMs: config.connectTimeoutMs, commandMs: config.commandTimeoutMs },
    throttle,
    catchAllCache: new CatchAllCache(),
    region: config.region,
    egressLabelKey: config.proberToken,
  };
  return {
    probe: (request) =>
      router.probe(
        {
          ...request,
          // In production the HELO name must match this IP's PTR record, and the MAIL FROM
          // domain's SPF must list this IP: the prober knows those, the edge does not.
          helo: config.heloName ?? request.helo,
          mailFrom: config.mailFrom ?? request.mailFrom,
        },
        deps,
      ),
    openSessions: () => throttle.openSessions(),
    hostBackoffs: () => throttle.backoffs().length,
    egresses: config.egresses,
    egressBlocks: () => blocks.active(),
    egressUses: () => router.budget.uses(),
    egressWarmUps: () => router.budget.warmUps(),
    restoreEgresses(memory) {
      // Only egresses this prober has: the hub keys its memory by token, and a token's prober
      // may have been given other egresses since.
      const own = new Set(config.egresses.map((egress) => egress.id));
      for (const block of memory.blocks) if (own.has(block.egress)) blocks.restore(block);
      router.budget.restore(
        memory.warmUps.filter((warmUp) => own.has(warmUp.egress)),
        memory.uses.filter((use) => own.has(use.egress)),
      );
    },
    egressHealth: () => health.current(),
    startHealthChecks: () => health.start(),
    onEgressChange: (listener) => {
      listeners.push(listener);
    },
    close: () => {
      blocks.close();
      health.close();
    },
  };
}

/** The egress-state message's body: the newest blocks and budget rows, within the message's bounds. */
export function egressStateOf(engine: ProbeEngine): Omit<EgressStateMessage, 'type' | 'id'> {
  return {
    blocks: engine.egressBlocks().slice(-MAX_EGRESS_BLOCKS),
    uses: engine.egressUses().slice(0, MAX_EGRESS_BLOCKS),
    warmUps: engine.egressWarmUps().slice(0, MAX_EGRESSES),
    health: engine.egressHealth().slice(0, MAX_EGRESSES),
    sessions: engine.openSessions(),
  };
}

export interface Daemon {
  link: EdgeLink;
  metrics: ProberMetrics;
  /** null when OPS_PORT is 0. */
  ops: OpsServer | null;
  /** Drains the link (bounded by DRAIN_TIMEOUT_MS), then stops the ops server. */
  shutdown(): Promise<DrainOutcome>;
}

/** How often the egresses' hourly use is sent to the hub while it changes. */
const EGRESS_USE_REPORT_MS = 5_000;

/** How long the link waits for the egresses' first health check. */
const FIRST_HEALTH_CHECK_WAIT_MS = 5_000;

/** Resolves when `work` settles or after `ms`, whichever is first. */
async function untilOrAfter(work: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    work.catch(() => {}),
    new Promise<void>((resolve) => {
      timer = setTimeout(resolve, ms);
    }),
  ]);
  clearTimeout(timer);
}

/** Starts the link and the ops server around `engine`. */
export async function startDaemon(
  config: ProberConfig,
  logger: Logger,
  engine: ProbeEngine,
): Promise<Daemon> {
  if (!config.edgeUrl || !config.proberToken)
    throw new Error('EDGE_URL and PROBER_TOKEN are required to run');
  let link: EdgeLink | null = null;
  const metrics = new ProberMetrics({
    openSessions: () => engine.openSessions(),
    hostBackoffs: () => engine.hostBackoffs(),
    linkConnected: () => link?.linked ?? false,
    probesInFlight: () => link?.inFlight ?? 0,
    egressBlocks: () => engine.egressBlocks(),
    egressUses: () => engine.egressUses(),
    egressHealth: () => engine.egressHealth(),
  });
  const handleProbe = async (request: ProbeRequest): Promise<ProbeReport> => {
    const startedAt = performance.now();
    try {
      const report = await engine.probe(request);
      metrics.recordProbe(request, report, (performance.now() - startedAt) / 1000);
      return report;
    } catch (error) {
      metrics.recordProbeError(request, (performance.now() - startedAt) / 1000);
      throw error;
    }
  };
  link = new EdgeLink({
    url: proberConnectUrl(config.edgeUrl, config.region),
    token: config.proberToken,
    region: config.region,
    capacity: config.capacity,
    perMxConcurrency: config.perMxConcurrency,
    handleProbe,
    // The operator's view names each egress by its id and by the label customers see.
    egresses: engine.egresses.map((egress) => ({
      ...describeEgress(egress),
      label: egressLabel(egress.id, config.region, config.proberToken),
    })),
    egressState: () => egressStateOf(engine),
    restoreEgresses: (memory) => engine.restoreEgresses(memory),
    logger,
    drainTimeoutMs: config.drainTimeoutMs,
  });
  const linked = link;
  engine.onEgressChange(() => linked.sendEgressState());
  // The hourly use changes with every probe, not only with blocks: reported every few seconds while
  // it does, so that the hub's memory of it (what a restarted prober takes back) stays current.
  let usesSent = '';
  const usesReport = setInterval(() => {
    const uses = JSON.stringify(engine.egressUses());
    if (uses === usesSent) return;
    usesSent = uses;
    linked.sendEgressState();
  }, EGRESS_USE_REPORT_MS);
  usesReport.unref();
  link.on('reconnecting', () => metrics.recordReconnect());
  const linkRef = link;
  const ops =
    config.opsPort === 0
      ? null
      : await startOpsServer({
          host: config.opsHost,
          port: config.opsPort,
          metrics,
          logger,
          health: () => ({ linked: linkRef.linked, inFlight: linkRef.inFlight, draining: linkRef.draining }),
        });
  // The first health check before the first probe, so that a listed egress carries none; a
  // resolver that does not answer delays the link by FIRST_HEALTH_CHECK_WAIT_MS at most, and
  // until the check ends every egress counts as clean.
  await untilOrAfter(engine.startHealthChecks(), FIRST_HEALTH_CHECK_WAIT_MS);
  link.start();
  return {
    link,
    metrics,
    ops,
    async shutdown() {
      clearInterval(usesReport);
      const outcome = await linkRef.drain();
      await ops?.close();
      engine.close();
      return outcome;
    },
  };
}

/**
 * `rcpt-prober run`: links to the edge and serves probes until SIGTERM or SIGINT, then
 * drains. Resolves with the exit code: 0 after a drain, 1 when a second signal cut it short.
 */
export async function run(config: ProberConfig, logger: Logger): Promise<number> {
  logger.info({ config: describeConfig(config) }, 'starting');
  const engine = createEngine(config, logger);
  const daemon = await startDaemon(config, logger, engine);
  return new Promise<number>((resolve) => {
    let stopping = false;
    const onSignal = (signal: NodeJS.Signals) => {
      if (stopping) {
        logger.warn({ signal, inFlight: daemon.link.inFlight }, 'second signal: exiting without waiting');
        resolve(1);
        return;
      }
      stopping = true;
      logger.info({ signal, inFlight: daemon.link.inFlight }, 'stopping: draining in-flight probes');
      daemon.shutdown().then(
        (outcome) => {
          logger.info({ abandoned: outcome.abandoned }, 'stopped');
          resolve(0);
        },
        (error: unknown) => {
          logger.error({ error: error instanceof Error ? error.message : String(error) }, 'drain failed');
          resolve(1);
        },
      );
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
  });
}

// rcpt-prober's command line: `run` (the daemon) and `verify <email>` (one address, end to end,
// with the system resolver and this machine's port 25: what an operator runs to see whether a
// new prober IP can verify at all).
import { hostname } from 'node:os';
import { type ParseArgsOptionsConfig, parseArgs } from 'node:util';
import type { VerificationResult } from '@rcpt/shared/contract/api';
import type { ProbeReport } from '@rcpt/shared/contract/prober';
import { mailRoute } from '@rcpt/shared/dns/mail-route';
import { detectTenant, type TenantDetection } from '@rcpt/shared/dns/mail-tenant';
import type { ProbeOutcome, TenantProbe } from '@rcpt/shared/verify/inputs';
import { checkSyntax } from '@rcpt/shared/verify/syntax';
import { type ProbeGateway, verifyAddress } from '@rcpt/shared/verify/verify-address';
import { ConfigError, loadConfig } from './config.ts';
import { systemLookup } from './dns/system-lookup.ts';
import { createEngine, run } from './main.ts';
import { createLogger } from './ops/logger.ts';

/** Exit codes: scripts branch on these (`rcpt-prober verify x@y && send`). */
export const EXIT_CODES = {
  deliverable: 0,
  undeliverable: 1,
  usage: 2, // bad arguments or configuration
  risky: 3,
  unknown: 4,
  failure: 70, // the prober itself failed (BSD sysexits EX_SOFTWARE): no verdict at all
} as const;

const USAGE = `Usage:
  rcpt-prober run
      Link to the edge (EDGE_URL, PROBER_TOKEN) and answer probes until SIGTERM.
  rcpt-prober verify <email> [--transcript] [--json] [--timeout-ms N]
      Verify one address from this machine: system DNS, SMTP from this IP, the
      same verdict the API gives. --transcript prints the SMTP dialogue, --json
      prints machine-readable JSON, --timeout-ms bounds the whole verification,
      DNS and SMTP, as the API's VERIFY_TIMEOUT_MS does (30000).
  rcpt-prober --help

Configuration comes from the environment (see prober/README.md).
Exit codes of verify: 0 deliverable, 1 undeliverable, 3 risky, 4 unknown;
2 for a usage or configuration error, 70 when the prober itself failed.`;

const DEFAULT_VERIFY_TIMEOUT_MS = 30_000;

type Env = Record<string, string | undefined>;

class UsageError extends Error {}

async function main(argv: string[], env: Env): Promise<number> {
  const [command, ...rest] = argv;
  try {
    if (command === undefined || command === '--help' || command === '-h' || command === 'help') {
      (command === undefined ? console.error : console.log)(USAGE);
      return command === undefined ? EXIT_CODES.usage : 0;
    }
    if (command === 'run') return await runCommand(rest, env);
    if (command === 'verify') return await verifyCommand(rest, env);
    throw new UsageError(`unknown command "${command}"`);
  } catch (error) {
    if (error instanceof ConfigError) {
      for (const problem of error.problems) console.error(`rcpt-prober: invalid config: ${problem}`);
      return EXIT_CODES.usage;
    }
    if (error instanceof UsageError) {
      console.error(`rcpt-prober: ${error.message}\n\n${USAGE}`);
      return EXIT_CODES.usage;
    }
    console.error(`rcpt-prober: ${error instanceof Error ? error.message : String(error)}`);
    return EXIT_CODES.failure;
  }
}

async function runCommand(args: string[], env: Env): Promise<number> {
  const { values, positionals } = parseCommandArgs(args, { help: { type: 'boolean', short: 'h' } });
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  if (positionals.length > 0) throw new UsageError('run takes no arguments');
  const config = loadConfig(env, 'run');
  const logger = createLogger({ level: config.logLevel });
  // The daemon must not limp on after a bug: log it, exit non-zero, let the supervisor restart it.
  process.on('uncaughtException', (error) => {
    logger.fatal({ error: error.message, stack: error.stack }, 'uncaught exception');
    process.exit(1);
  });
  process.on('unhandledRejection', (reason) => {
    logger.fatal({ error: reason instanceof Error ? reason.message : String(reason) }, 'unhandled rejection');
    process.exit(1);
  });
  return run(config, logger);
}

async function verifyCommand(args: string[], env: Env): Promise<number> {
  const { values, positionals } = parseCommandArgs(args, {
    transcript: { type: 'boolean' },
    json: { type: 'boolean' },
    'timeout-ms': { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  });
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  if (positionals.length !== 1) throw new UsageError('verify takes exactly one address');
  const email = positionals[0] ?? '';
  const timeoutMs = parseTimeout(values['timeout-ms']);
  const config = loadConfig(env, 'verify');
  const engine = createEngine(config);
  const lookup = systemLookup({ servers: config.dnsServers });

  // The API's own sequence (syntax, route, probe within the budget, assessment), with this
  // machine's resolver and SMTP in place of DNS over HTTPS and the ProberHub.
  const prober: ProbeGateway = {
    async probe(request): Promise<ProbeOutcome> {
      try {
        return { kind: 'report', report: await engine.probe(request) };
      } catch (error) {
        return { kind: 'unavailable', message: error instanceof Error ? error.message : String(error) };
      }
    },
  };
  const routeOptions = { allowPrivateTargets: config.allowPrivateTargets };
  const { result, dns, probe, tenantDetection, tenant } = await verifyAddress(
    {
      mailRoute: (domain) => mailRoute(domain, lookup, routeOptions),
      prober,
      // The tenant behind a catch-all gateway, found as the edge finds it (docs/verdicts.md).
      tenants: { detect: (domain, mxHosts) => detectTenant(domain, mxHosts, lookup, routeOptions), prober },
      // No edge to choose them: the null sender (RFC 5321 §4.5.5) unless MAIL_FROM says
      // otherwise, and this machine's name unless HELO_NAME does.
      mailFrom: config.mailFrom ?? '',
      helo: config.heloName ?? hostname(),
      timeoutMs,
      transcript: true,
    },
    checkSyntax(email),
  );
  const report = probe.kind === 'report' ? probe.report : null;

  if (values.json) {
    const shownReport = report && !values.transcript ? withoutTranscript(report) : report;
    const shownTenant =
      tenant?.probe.kind === 'report' && !values.transcript
        ? { ...tenant, probe: { ...tenant.probe, report: withoutTranscript(tenant.probe.report) } }
        : tenant;
    console.log(
      JSON.stringify({ result, dns, probe: shownReport, tenantDetection, tenant: shownTenant }, null, 2),
    );
  } else {
    console.log(describeResult(result, report, probe, values.transcript === true));
    const tenantLines = describeTenant(tenantDetection, tenant);
    if (tenantLines.length > 0) console.log(tenantLines.join('\n'));
  }
  return EXIT_CODES[result.status];
}

function parseCommandArgs<const T extends ParseArgsOptionsConfig>(args: string[], options: T) {
  try {
    return parseArgs({ args, options, allowPositionals: true, strict: true });
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
}

function parseTimeout(raw: string | undefined): number {
  if (raw === undefined) return DEFAULT_VERIFY_TIMEOUT_MS;
  const value = Number(raw);
  // The contract's bounds on a probe's timeoutMs.
  if (!/^\d+$/.test(raw) || value < 100 || value > 300_000) {
    throw new UsageError(`--timeout-ms must be an integer 100–300000, got ${JSON.stringify(raw)}`);
  }
  return value;
}

function withoutTranscript(report: ProbeReport): ProbeReport {
  const { transcript: _transcript, ...session } = report.session;
  return { ...report, session };
}

function describeResult(
  result: VerificationResult,
  report: ProbeReport | null,
  probe: ProbeOutcome,
  showTranscript: boolean,
): string {
  const yesNo = (value: boolean | null) => (value === null ? 'unknown' : value ? 'yes' : 'no');
  const lines = [
    `${result.email}: ${result.status} / ${result.subStatus} (score ${result.score}, toxicity ${result.toxicity})`,
    `  ${result.reason}`,
    `  deliverable ${yesNo(result.isDeliverable)}   smtp ${yesNo(result.checks.smtpValid)}   catch-all ${yesNo(result.checks.isCatchAll)}`,
    `  disposable ${yesNo(result.checks.isDisposable)}   role ${yesNo(result.checks.isRoleBased)}   free ${yesNo(result.checks.isFreeProvider)}`,
    `  verified via ${result.meta.verifiedVia ?? 'no SMTP answer'}`,
  ];
  if (result.checks.hasTypo) {
    const typo = result.checks.hasTypo;
    lines.push(
      `  did you mean ${typo.suggested}? (${typo.original}, confidence ${typo.confidence.toFixed(2)})`,
    );
  }
  if (result.riskFactors.length > 0) lines.push(`  risk factors: ${result.riskFactors.join(', ')}`);
  if (result.retryAfterSeconds !== undefined) lines.push(`  retry after ${result.retryAfterSeconds} s`);
  if (report) {
    const session = report.session;
    const tls = session.tls ? 'TLS' : `no TLS${session.tlsError ? ` (${session.tlsError})` : ''}`;
    lines.push(
      `  mx ${session.mxHost ?? 'none reached'}${session.mxIp ? ` [${session.mxIp}]` : ''}, ${tls}, ${session.durationMs} ms`,
    );
    for (const address of report.perAddress) {
      if (address.reply) lines.push(`  RCPT ${address.email}: ${formatReply(address.reply)}`);
      if (address.failure) {
        const failure = address.failure;
        lines.push(`  ${failure.kind} at ${failure.stage}: ${failure.message}`);
        if (failure.reply) lines.push(`    ${formatReply(failure.reply)}`);
      }
    }
    if (report.catchAllReply) lines.push(`  RCPT <random>: ${formatReply(report.catchAllReply)}`);
  } else if (probe.kind === 'unavailable') {
    lines.push(`  no SMTP probe: ${probe.message}`);
  }
  if (showTranscript) {
    const transcript = report?.session.transcript ?? [];
    lines.push(
      '',
      transcript.length > 0 ? 'SMTP transcript:' : 'SMTP transcript: none (no session was opened)',
    );
    for (const line of transcript) lines.push(`  ${line}`);
  }
  return lines.join('\n');
}

/** What tenant detection found behind a catch-all gateway, and what the tenant answered. */
function describeTenant(detection: TenantDetection | null, tenant: TenantProbe | null): string[] {
  if (!detection) return [];
  if (detection.kind === 'none') return [`  no tenant behind the gateway: ${detection.why}`];
  if (detection.kind === 'error') return [`  tenant detection failed: ${detection.message}`];
  const lines = [
    `  tenant ${detection.tenant.provider} at ${detection.tenant.inboundHost} (${detection.signal})`,
  ];
  if (tenant?.probe.kind === 'report') {
    for (const address of tenant.probe.report.perAddress) {
      if (address.reply) lines.push(`  tenant RCPT ${address.email}: ${formatReply(address.reply)}`);
      if (address.failure)
        lines.push(
          `  tenant ${address.failure.kind} at ${address.failure.stage}: ${address.failure.message}`,
        );
    }
    const catchAll = tenant.probe.report.catchAllReply;
    if (catchAll) lines.push(`  tenant RCPT <random>: ${formatReply(catchAll)}`);
  } else if (tenant) {
    lines.push(`  tenant not asked: ${tenant.probe.kind}`);
  }
  return lines;
}

function formatReply(reply: { code: number; enhanced: string | null; text: string }): string {
  return `${reply.code}${reply.enhanced ? ` ${reply.enhanced}` : ''} ${reply.text.replace(/\n/g, ' / ')}`;
}

process.exit(await main(process.argv.slice(2), process.env));

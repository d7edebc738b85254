// `rcpt`: verify an address, clean a list, look at jobs and the account, from a terminal or a
// script. Exit codes are part of the interface (see client/README.md): 0 done, 1 the API refused
// the request, 2 usage error, 3 no answer from the API, 4 the job failed.
import { writeFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { checkedBaseUrl } from './base-url.ts';
import { type CleanSummary, cleanCsvFile } from './clean-csv-file.ts';
import {
  type Job,
  Rcpt,
  type ResultsFilter,
  type SendAdvice,
  STATUSES,
  type Status,
  type UploadResponse,
  type VerificationResult,
} from './client.ts';
import { RcptConnectionError, RcptError, RcptJobFailedError } from './errors.ts';
import { formatCount, progressWriter } from './progress.ts';

export const EXIT = { done: 0, apiError: 1, usage: 2, connection: 3, jobFailed: 4 } as const;

const USAGE = `Usage: rcpt <command> [options]

Commands:
  verify <email>            verify one address (1 credit; a recent answer is given again)
  clean <list.csv>          verify a CSV list and write it back with verdict columns; it
                            prints the job id first, and Ctrl-C stops the waiting, not the job
  results <job-id>          download a job's cleaned CSV again (waiting while it runs); free:
                            a list is charged once, at upload
  jobs                      list your batch jobs, newest first
  account                   show your balance and usage
  mcp                       serve the tools verify_email, clean_csv and get_job to an AI
                            assistant over the Model Context Protocol (stdin/stdout)

Options:
  -o, --output <file>       clean, results: write the cleaned CSV here, not to standard output
      --only <which>        clean, results: keep only some rows: safe (exactly the addresses to
                            send to), safe,decide (and those only you can judge: catch-all,
                            role, not verified), or statuses, e.g. deliverable,risky
      --column <name|index> clean: the email column (default: found from the header)
      --max-wait <seconds>  clean: finish the job within this many seconds (default: the API's)
      --recheck             clean: ask greylisted and other temporary answers again over the
                            next hours; a refunded address that then gets an answer is charged
                            (default: your account's setting)
      --watch               clean: watch the list's domains for 30 days and verify their
                            addresses again when one moves its MX, stops taking mail or turns
                            catch-all on or off (default: your account's setting)
      --fresh               verify: ask now, not your answer of the last 24 hours
      --timeout <ms>        verify: answer within this many milliseconds (2000 to 60000); a
                            server slower than that gives timeout_exceeded, and the
                            next verify of the address gets the verdict (default: the API's)
      --evidence            verify: print the SMTP session behind the answer (mail server,
                            TLS, the dialogue; other addresses masked)
      --root <folder>       mcp: the only folder whose .csv files clean_csv may read and
                            write (default: the working directory); symlinks out of it,
                            other files and existing outputs without overwrite are refused
      --json                print JSON for scripts instead of text (results: the results)
      --api-key <key>       default: $RCPT_API_KEY
      --base-url <url>      default: $RCPT_BASE_URL, else http://127.0.0.1:8787
  -h, --help                show this help

Exit codes: 0 done, 1 the API refused the request, 2 usage error, 3 no answer from the API,
4 the job failed.
`;

export interface CliIo {
  stdout: { write(text: string): unknown; isTTY?: boolean };
  stderr: { write(text: string): unknown; isTTY?: boolean };
  env: Record<string, string | undefined>;
  /** For tests: the client to use instead of one built from the options. */
  client?: (options: { apiKey: string; baseUrl: string }) => Rcpt;
}

class UsageError extends Error {}

export async function main(argv: readonly string[], io: CliIo = processIo()): Promise<number> {
  try {
    return await run(argv, io);
  } catch (error) {
    return report(error, io);
  }
}

async function run(argv: readonly string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseCommandLine(argv);
  const [command, ...operands] = positionals;
  if (values.help || command === undefined || command === 'help') {
    io.stdout.write(USAGE);
    return command === undefined && !values.help ? EXIT.usage : EXIT.done;
  }
  const apiKey = values['api-key'] ?? io.env.RCPT_API_KEY;
  if (!apiKey) throw new UsageError('no API key: set RCPT_API_KEY or pass --api-key');
  const baseUrl = values['base-url'] ?? io.env.RCPT_BASE_URL ?? 'http://127.0.0.1:8787';
  try {
    checkedBaseUrl(baseUrl);
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const rcpt = io.client ? io.client({ apiKey, baseUrl }) : new Rcpt({ apiKey, baseUrl });
  const json = values.json === true;

  switch (command) {
    case 'verify': {
      const email = single(operands, 'verify <email>');
      const timeoutMs = wholeNumber('--timeout', values.timeout, 'milliseconds');
      const { result, creditsRemaining } = await rcpt.verify(email, {
        fresh: values.fresh === true,
        evidence: values.evidence === true,
        ...(timeoutMs === undefined ? {} : { timeoutMs }),
      });
      io.stdout.write(
        json
          ? `${JSON.stringify({ ...result, creditsRemaining })}\n`
          : `${describe(result)}${values.evidence ? describeEvidence(result) : ''}`,
      );
      return EXIT.done;
    }
    case 'clean': {
      const path = single(operands, 'clean <list.csv>');
      const progress = json ? null : progressWriter(io.stderr);
      const { csv, summary } = await cleanCsvFile(rcpt, path, {
        emailColumn: values.column,
        output: values.output || undefined,
        ...parseOnly(values.only),
        maxWaitSeconds: wholeNumber('--max-wait', values['max-wait'], 'seconds'),
        recheck: values.recheck,
        watch: values.watch,
        onUpload: (upload) => io.stderr.write(uploadedLine(upload, values.output)),
        onProgress: (update) => progress?.update(update),
      });
      progress?.done();
      if (!values.output) io.stdout.write(csv);
      (values.output ? io.stdout : io.stderr).write(
        json ? `${JSON.stringify(summary)}\n` : cleanSummary(summary),
      );
      return EXIT.done;
    }
    case 'results': {
      const jobId = single(operands, 'results <job-id>');
      const filter = parseOnly(values.only);
      const progress = json ? null : progressWriter(io.stderr);
      const job = await rcpt.waitForJob(jobId, { onProgress: (update) => progress?.update(update) });
      progress?.done();
      if (json) {
        io.stdout.write(`${JSON.stringify((await rcpt.results(jobId, filter)).results)}\n`);
        return EXIT.done;
      }
      const csv = await rcpt.resultsCsv(jobId, filter);
      if (!values.output) {
        io.stdout.write(csv);
        return EXIT.done;
      }
      await writeFile(values.output, csv);
      io.stdout.write(`${resultsSummary(job)}wrote ${values.output}${keptText(filter)}\n`);
      return EXIT.done;
    }
    case 'jobs': {
      const { jobs } = await rcpt.jobs({ limit: 50 });
      if (json) io.stdout.write(`${JSON.stringify(jobs)}\n`);
      else
        for (const job of jobs)
          io.stdout.write(
            `${job.id}  ${job.status.padEnd(10)} ${String(job.progress).padStart(3)}%  ${formatCount(job.totalEmails).padStart(6)} addresses  ${job.createdAt}  ${job.name ?? ''}\n`,
          );
      return EXIT.done;
    }
    case 'account': {
      const account = await rcpt.account();
      io.stdout.write(
        json
          ? `${JSON.stringify(account)}\n`
          : `${account.email ?? account.id}\ncredits: ${formatCount(account.creditsRemaining)}\n`,
      );
      return EXIT.done;
    }
    case 'mcp': {
      if (operands.length > 0) throw new UsageError('expected: rcpt mcp [--root <folder>]');
      // Loaded only here: the MCP SDK is not needed by the other commands.
      const { serveMcpOnStdio } = await import('./mcp.ts');
      await serveMcpOnStdio(rcpt, {
        baseUrl,
        root: values.root ?? process.cwd(),
        log: (line) => io.stderr.write(`${line}\n`),
      });
      return EXIT.done;
    }
    default:
      throw new UsageError(`unknown command "${command}"`);
  }
}

function parseCommandLine(argv: readonly string[]) {
  try {
    return parseArgs({
      args: [...argv],
      allowPositionals: true,
      options: {
        output: { type: 'string', short: 'o' },
        only: { type: 'string' },
        column: { type: 'string' },
        'max-wait': { type: 'string' },
        recheck: { type: 'boolean' },
        watch: { type: 'boolean' },
        fresh: { type: 'boolean' },
        timeout: { type: 'string' },
        evidence: { type: 'boolean' },
        json: { type: 'boolean' },
        'api-key': { type: 'string' },
        'base-url': { type: 'string' },
        root: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

function single(operands: readonly string[], form: string): string {
  if (operands.length !== 1 || !operands[0]) throw new UsageError(`expected: rcpt ${form}`);
  return operands[0];
}

/** `--only`'s words for the send advice: `safe` is the API's `send`. */
const ADVICE_WORDS: Record<string, SendAdvice> = { safe: 'send', decide: 'decide' };

/** `--only`: statuses, or the send advice (`safe`, `safe,decide`); the two kinds are not mixed. */
function parseOnly(list: string | undefined): ResultsFilter {
  if (list === undefined) return {};
  const words = list.split(',').map((word) => word.trim());
  if (words.every((word) => Object.hasOwn(ADVICE_WORDS, word)))
    return { advice: words.map((word) => ADVICE_WORDS[word] as SendAdvice) };
  if (words.every((word) => (STATUSES as readonly string[]).includes(word)))
    return { only: words as Status[] };
  throw new UsageError(
    `--only takes safe (the addresses to send to), safe,decide, or statuses from ${STATUSES.join(', ')}; got "${list}"`,
  );
}

/** Said as soon as a list is uploaded: the job id, and how to get the results without paying again. */
function uploadedLine(upload: UploadResponse, output: string | undefined): string {
  return (
    `job ${upload.jobId}: ${formatCount(upload.totalEmails)} addresses, ${formatCount(upload.creditsCharged)} credits charged. ` +
    `Ctrl-C stops waiting, not the job; \`rcpt results ${upload.jobId} -o ${output || 'cleaned.csv'}\` fetches it, free.\n`
  );
}

function keptText(filter: ResultsFilter): string {
  const kept = [
    ...(filter.only ?? []),
    ...(filter.advice ?? []).map((advice) => (advice === 'send' ? 'safe' : advice)),
  ];
  return kept.length > 0 ? ` (rows kept: ${kept.join(', ')})` : '';
}

/** `job …: N unique addresses — deliverable n · risky n · unknown n · undeliverable n` */
function countsLine(jobId: string, totalEmails: number, counts: Record<Status, number>): string {
  return (
    `job ${jobId}: ${formatCount(totalEmails)} unique addresses — ` +
    STATUSES.map((status) => `${status} ${formatCount(counts[status])}`).join(' · ')
  );
}

function resultsSummary(job: Job): string {
  const counts = {
    deliverable: job.deliverableCount,
    risky: job.riskyCount,
    unknown: job.unknownCount,
    undeliverable: job.undeliverableCount,
  };
  return `${countsLine(job.id, job.totalEmails, counts)}\n`;
}

/** A whole number of `unit`; the API checks its range (a 400 VALIDATION_ERROR, nothing charged). */
function wholeNumber(option: string, value: string | undefined, unit: string): number | undefined {
  if (value === undefined) return undefined;
  const number = Number(value);
  if (value.trim() === '' || !Number.isInteger(number))
    throw new UsageError(`${option} takes whole ${unit}; got "${value}"`);
  return number;
}

function describe(result: VerificationResult): string {
  const lines = [
    `${result.email}: ${result.status} (${result.subStatus}), score ${result.score}`,
    `  ${result.reason}`,
  ];
  if (result.meta.cached)
    lines.push(`  your answer of ${result.meta.verifiedAt}, given again (--fresh asks now)`);
  if (result.checks.hasTypo) lines.push(`  did you mean …@${result.checks.hasTypo.suggested}?`);
  for (const factor of result.riskFactors) lines.push(`  - ${factor}`);
  return `${lines.join('\n')}\n`;
}

/** The session behind an SMTP answer, as a mail administrator reads a session log. */
function describeEvidence(result: VerificationResult): string {
  const { evidence } = result;
  if (!evidence) return '  no SMTP evidence: no mail server session decided this answer\n';
  const tls = evidence.tls
    ? `${evidence.tls.version ?? 'TLS'}${evidence.tls.cipher ? ` ${evidence.tls.cipher}` : ''}`
    : 'no TLS';
  const lines = [
    `  SMTP evidence: ${evidence.mxHost ?? '?'} [${evidence.mxIp ?? '?'}] from egress ${evidence.egress ?? '?'}` +
      `${evidence.region ? ` (region ${evidence.region})` : ''}, ${tls}, ${evidence.startedAt}, ${evidence.durationMs} ms`,
  ];
  for (const step of evidence.dialogue) {
    if (step.command !== null) lines.push(`    +${step.atMs} ms C: ${step.command}`);
    if (step.reply) {
      const { code, enhanced, text } = step.reply;
      const said = [code, enhanced, text.replace(/\s*\n\s*/g, ' ')].filter(Boolean).join(' ');
      lines.push(`    +${step.atMs + (step.tookMs ?? 0)} ms S: ${said}`);
    }
  }
  if (evidence.ended) lines.push(`    ended early: ${evidence.ended}`);
  if (evidence.omittedSteps > 0) lines.push(`    (${evidence.omittedSteps} steps left out)`);
  return `${lines.join('\n')}\n`;
}

function cleanSummary(summary: CleanSummary): string {
  const kept = keptText({ only: summary.only ?? undefined, advice: summary.advice ?? undefined });
  return [
    countsLine(summary.jobId, summary.totalEmails, summary),
    `credits: ${formatCount(summary.creditsCharged)} charged, ${formatCount(summary.creditsRefunded)} refunded`,
    summary.output ? `wrote ${summary.output}${kept}` : `cleaned CSV written above${kept}`,
  ]
    .map((line) => `${line}\n`)
    .join('');
}

function report(error: unknown, io: CliIo): number {
  if (error instanceof UsageError) {
    io.stderr.write(`rcpt: ${error.message}\n\n${USAGE}`);
    return EXIT.usage;
  }
  if (error instanceof RcptError) {
    io.stderr.write(
      `rcpt: ${error.code}: ${error.message} (HTTP ${error.status}, request ${error.requestId})\n`,
    );
    return EXIT.apiError;
  }
  if (error instanceof RcptConnectionError) {
    io.stderr.write(`rcpt: ${error.message}\n`);
    return EXIT.connection;
  }
  if (error instanceof RcptJobFailedError) {
    io.stderr.write(`rcpt: ${error.message}\n`);
    return EXIT.jobFailed;
  }
  throw error;
}

function processIo(): CliIo {
  return { stdout: process.stdout, stderr: process.stderr, env: process.env };
}

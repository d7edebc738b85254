// `rcpt mcp`: a Model Context Protocol server on stdio, so that an AI assistant can verify an
// address, clean a CSV file and read a job. Every call goes through the typed client, so the
// tools retry, pace themselves and refuse exactly as the library and the other commands do.
// An API refusal is a tool result with `isError: true` (MCP, "Tools — Error Handling"), never
// a protocol error or a crash: the model reads the API's `code` and can act on it.
import { readFileSync } from 'node:fs';
import { basename, dirname, extname, join } from 'node:path';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { CallToolResult, ServerNotification, ServerRequest } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { cleanCsvFile } from './clean-csv-file.ts';
import { type Job, type Rcpt, SEND_ADVICE, type SendAdvice, STATUSES, type Status } from './client.ts';
import { RcptConnectionError, RcptError, RcptJobFailedError } from './errors.ts';
import { FileRefusedError, McpFiles } from './mcp-files.ts';
import { progressLine } from './progress.ts';

const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
  version: string;
};

const INSTRUCTIONS = `rcpt verifies email addresses: syntax, domain, mail server and mailbox (an SMTP check that sends no mail).
Each verdict has a status (deliverable, risky, unknown, undeliverable), a subStatus naming the exact reason, and a score.
verify_email costs 1 credit per call; clean_csv costs 1 credit per unique valid address of the file, and what could not be verified is refunded.
Errors carry the API's code: INSUFFICIENT_CREDITS (buy credits), QUOTA_EXCEEDED (an account quota; details say which, and resetAt when it frees), INVALID_API_KEY, VALIDATION_ERROR.`;

/**
 * The MCP server with rcpt's tools, calling the API through `rcpt`; clean_csv touches only the
 * `.csv` files of `files` (mcp-files.ts).
 */
export function createMcpServer(
  rcpt: Rcpt,
  files: McpFiles,
  log: (line: string) => void = () => {},
): McpServer {
  const server = new McpServer({ name: 'rcpt', version }, { instructions: INSTRUCTIONS });

  server.registerTool(
    'verify_email',
    {
      title: 'Verify an email address',
      description:
        'Verifies one email address and returns its verdict: status (deliverable, risky, unknown, undeliverable), ' +
        'subStatus (the exact reason), score 0-100, a one-sentence reason, the checks made and risk factors. ' +
        'Costs 1 credit; creditsRemaining is the balance after the call.',
      inputSchema: {
        email: z.string().describe('The address to verify, e.g. alice@example.com.'),
        fresh: z
          .boolean()
          .optional()
          .describe(
            'true: verify now, even if this account verified the address in the last 24 hours. Default false: a recent verdict is given again (meta.cached is true); it costs the same.',
          ),
        timeoutMs: z
          .number()
          .int()
          .min(2_000)
          .max(60_000)
          .optional()
          .describe(
            'Answer within this many milliseconds (2000 to 60000). A mail server slower than that gives subStatus timeout_exceeded (charged; the check goes on and a later call gets its verdict). Default: the service bounds the check itself (10 s).',
          ),
        evidence: z
          .boolean()
          .optional()
          .describe(
            'true: the answer carries evidence, the SMTP session behind it (mail server, egress, TLS, the dialogue with its times, other addresses masked). Default false.',
          ),
      },
      annotations: { readOnlyHint: false, destructiveHint: false, openWorldHint: true },
    },
    ({ email, fresh, timeoutMs, evidence }) =>
      answer(log, 'verify_email', async () => {
        const { result, creditsRemaining } = await rcpt.verify(email, {
          fresh: fresh === true,
          evidence: evidence === true,
          ...(timeoutMs === undefined ? {} : { timeoutMs }),
        });
        return { ...result, creditsRemaining };
      }),
  );

  server.registerTool(
    'clean_csv',
    {
      title: 'Clean a CSV list of email addresses',
      description:
        'Verifies every address of a CSV file and writes the file back with verdict columns added ' +
        '(rcpt_status, rcpt_sub_status, rcpt_score, rcpt_is_deliverable, rcpt_reason, rcpt_is_catch_all, rcpt_suggestion). ' +
        'Waits until the job completes (minutes for large lists; progress is notified) and returns the counts per status ' +
        'and the credits charged and refunded. Costs 1 credit per unique valid address.',
      inputSchema: {
        path: z
          .string()
          .describe(
            `A .csv file under the folder this server was started for (${files.root}); a relative path is resolved against that folder. Paths outside it, "~" and symlinks leading out are refused.`,
          ),
        emailColumn: z
          .string()
          .optional()
          .describe(
            'The email column: its header name (case-insensitive) or its 0-based position. Default: found from the header.',
          ),
        output: z
          .string()
          .optional()
          .describe(
            'Where to write the cleaned CSV: a .csv file under the same folder. Default: <name>.cleaned.csv next to the input. An existing file is replaced only with overwrite: true.',
          ),
        overwrite: z
          .boolean()
          .optional()
          .describe(
            'true: replace the output file if it exists. Default false: an existing file is refused before anything is charged.',
          ),
        only: z
          .array(z.enum(STATUSES as readonly [Status, ...Status[]]))
          .optional()
          .describe(
            'Write only the rows whose status is one of these, e.g. ["deliverable", "risky"]. Default: all rows.',
          ),
        advice: z
          .array(z.enum(SEND_ADVICE as readonly [SendAdvice, ...SendAdvice[]]))
          .optional()
          .describe(
            'Write only the rows whose answer has one of these send advices: ["send"] is exactly the addresses to ' +
              'send to; "decide" the ones only the sender can judge (catch-all, role, not verified); "do_not_send" ' +
              'the rest. With only, a row must match both. Default: all rows.',
          ),
        maxWaitSeconds: z
          .number()
          .int()
          .min(30)
          .max(10_800)
          .optional()
          .describe(
            "The job's deadline in seconds: addresses still without a final answer then (greylisting, slow servers) are reported unknown, and refunded when the provider blocked or deferred them. Default: 180 seconds plus 1 second per 25 addresses.",
          ),
        recheck: z
          .boolean()
          .optional()
          .describe(
            "true: ask greylisted and other temporary answers again over the next hours, free; the job's counts then change (get_job shows them). Default: the account's setting.",
          ),
      },
      annotations: { readOnlyHint: false, destructiveHint: true, openWorldHint: true },
    },
    (input, extra) =>
      answer(log, 'clean_csv', async () => {
        // Every path is settled before the upload, so a refused one charges nothing.
        const path = await files.input(input.path);
        const overwrite = input.overwrite === true;
        const output = await files.output(input.output ?? cleanedPathOf(path), { overwrite, input: path });
        const { csv, summary } = await cleanCsvFile(rcpt, path, {
          emailColumn: input.emailColumn,
          only: input.only,
          advice: input.advice,
          maxWaitSeconds: input.maxWaitSeconds,
          recheck: input.recheck,
          onProgress: progressNotifier(extra, log),
          signal: extra.signal,
        });
        await files.write(output, csv, overwrite);
        return { ...summary, output };
      }),
  );

  server.registerTool(
    'get_job',
    {
      title: 'Read a list-cleaning job',
      description:
        'Reads a job (a list given to clean_csv, or uploaded otherwise): status (pending, processing, completed, failed), ' +
        'progress in percent, the counts per status, credits charged and refunded, and whether temporary answers are rechecked.',
      inputSchema: { jobId: z.string().describe('The job id, as clean_csv returned it (a UUID).') },
      annotations: { readOnlyHint: true, openWorldHint: true },
    },
    ({ jobId }) => answer(log, 'get_job', async () => ({ ...(await rcpt.job(jobId)) })),
  );

  return server;
}

/**
 * Serves the tools on this process's stdin and stdout until stdin ends (the MCP client closed
 * it). Logs go to `log`: stdout carries the protocol and nothing else (MCP stdio transport).
 */
export async function serveMcpOnStdio(
  rcpt: Rcpt,
  options: { baseUrl: string; root: string; log: (line: string) => void },
) {
  // A stray console.log from any module would corrupt the stream; send it to stderr instead.
  console.log = console.info = console.debug = console.error;
  const files = await McpFiles.under(options.root);
  const server = createMcpServer(rcpt, files, options.log);
  const transport = new StdioServerTransport();
  const closed = new Promise<void>((resolve) => {
    server.server.onclose = resolve;
  });
  await server.connect(transport);
  process.stdin.once('end', () => void server.close());
  options.log(
    `rcpt mcp: serving on stdio for ${new URL(options.baseUrl).origin}; CSV files under ${files.root}`,
  );
  await closed;
  options.log('rcpt mcp: stdin closed, stopped');
}

/** The tool's result as structured content, or the failure as a tool error the model can read. */
async function answer(
  log: (line: string) => void,
  tool: string,
  call: () => Promise<Record<string, unknown>>,
): Promise<CallToolResult> {
  try {
    const result = await call();
    // MCP tools: a tool returning structured content should also return it serialized as text.
    return { content: [{ type: 'text', text: JSON.stringify(result) }], structuredContent: result };
  } catch (error) {
    if (error instanceof RcptError) {
      const refusal = {
        code: error.code,
        message: error.message,
        status: error.status,
        requestId: error.requestId,
        ...(error.details ? { details: error.details } : {}),
      };
      log(`rcpt mcp: ${tool}: ${error.code} (HTTP ${error.status}, request ${error.requestId})`);
      return failure(
        `${error.code}: ${error.message} (HTTP ${error.status}, request ${error.requestId})`,
        refusal,
      );
    }
    if (error instanceof RcptJobFailedError)
      return failure(error.message, { code: 'JOB_FAILED', message: error.message, job: error.job });
    if (error instanceof RcptConnectionError)
      return failure(error.message, { code: 'CONNECTION_FAILED', message: error.message });
    if (error instanceof Error && error.name === 'AbortError')
      return failure(`${tool} cancelled`, { code: 'CANCELLED', message: error.message });
    if (error instanceof FileRefusedError || isFileError(error))
      return failure((error as Error).message, { code: 'INVALID_INPUT', message: (error as Error).message });
    log(`rcpt mcp: ${tool} failed: ${(error as Error).stack ?? String(error)}`);
    return failure(`${tool} failed: ${(error as Error).message}`, {
      code: 'TOOL_FAILED',
      message: (error as Error).message,
    });
  }
}

function failure(text: string, error: Record<string, unknown>): CallToolResult {
  return { isError: true, content: [{ type: 'text', text }], structuredContent: { error } };
}

/** A file that cannot be read or written (ENOENT, EACCES, EISDIR …): the model gave a wrong path. */
function isFileError(error: unknown): boolean {
  return error instanceof Error && 'syscall' in error && 'path' in error;
}

/** `list.csv` → `list.cleaned.csv`, beside it. */
function cleanedPathOf(path: string): string {
  const extension = extname(path);
  return join(dirname(path), `${basename(path, extension)}.cleaned${extension || '.csv'}`);
}

/**
 * MCP progress notifications for a job, when the client asked for them with a progress token.
 * The progress value must increase with each notification, so a poll that saw no new addresses
 * done sends none.
 */
function progressNotifier(
  extra: RequestHandlerExtra<ServerRequest, ServerNotification>,
  log: (line: string) => void,
): ((job: Job) => void) | undefined {
  const progressToken = extra._meta?.progressToken;
  if (progressToken === undefined) return undefined;
  const started = Date.now();
  let lastProcessed = -1;
  return (job) => {
    if (job.processedEmails <= lastProcessed) return;
    lastProcessed = job.processedEmails;
    extra
      .sendNotification({
        method: 'notifications/progress',
        params: {
          progressToken,
          progress: job.processedEmails,
          total: job.totalEmails,
          message: progressLine(job, Date.now() - started, false),
        },
      })
      .catch((error: unknown) => log(`rcpt mcp: progress not sent: ${(error as Error).message}`));
  };
}

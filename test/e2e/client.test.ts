// The typed client and the `rcpt` command against the real local stack: the generated types
// match the document the edge serves, and a list goes from a CSV file to a cleaned CSV.

import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Rcpt, RcptError } from '../../client/src/index.ts';
import {
  CLIENT_DOCUMENT_PATH,
  CLIENT_TYPES_PATH,
  clientTypesOf,
  documentText,
} from '../../scripts/stack/client-types.ts';
import { freePort } from '../../scripts/stack/local-stack.ts';
import { REPO_ROOT } from '../../scripts/stack/wrangler-cli.ts';
import { type ProcessRun, runNodeScript } from '../node-process.ts';
import { type System, startSystem } from './harness.ts';

const LIST_ROWS = 10_000;
let system: System;
let scratch: string;

beforeAll(async () => {
  system = await startSystem({ credits: 3 * LIST_ROWS });
  scratch = mkdtempSync(join(tmpdir(), 'rcpt-client-'));
});

afterAll(async () => {
  await system?.close();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

/** Runs `rcpt` as a user would, in its own process (the fake world answers from this one). */
function rcpt(args: string[], env: Record<string, string> = {}): Promise<ProcessRun> {
  return runNodeScript(join(REPO_ROOT, 'client', 'bin', 'rcpt.js'), args, {
    env: {
      PATH: process.env.PATH,
      RCPT_API_KEY: system.stack.apiKey,
      RCPT_BASE_URL: system.stack.baseUrl,
      ...env,
    },
  });
}

describe('the typed client', () => {
  it('was generated from the document this edge serves (npm run client:generate when not)', async () => {
    const served = await (await fetch(`${system.stack.baseUrl}/openapi.json`)).json();
    expect(readFileSync(CLIENT_DOCUMENT_PATH, 'utf8')).toBe(documentText(served));
    expect(readFileSync(CLIENT_TYPES_PATH, 'utf8')).toBe(await clientTypesOf(served));
  });

  it('verifies an address and throws API errors with their code and request id', async () => {
    const client = new Rcpt({ apiKey: system.stack.apiKey, baseUrl: system.stack.baseUrl });
    const { result, creditsRemaining } = await client.verify(`alice@${system.world.domains.accept}`);
    expect(result).toMatchObject({ status: 'deliverable', subStatus: 'accepted_email' });
    expect(creditsRemaining).toBe(3 * LIST_ROWS - 1);

    const stranger = new Rcpt({ apiKey: 'rk_live_not-a-key', baseUrl: system.stack.baseUrl });
    const refused = await stranger.account().catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(RcptError);
    expect(refused).toMatchObject({ status: 401, code: 'INVALID_API_KEY', requestId: expect.any(String) });
  });
});

describe('the rcpt command', () => {
  it('verifies one address, readable and as JSON', async () => {
    const text = await rcpt(['verify', `nobody@${system.world.domains.accept}`]);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain(`nobody@${system.world.domains.accept}: undeliverable (mailbox_not_found)`);

    const json = await rcpt(['verify', `alice@${system.world.domains.accept}`, '--json']);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({
      status: 'deliverable',
      creditsRemaining: expect.any(Number),
    });
  });

  it(`cleans a ${LIST_ROWS.toLocaleString('en-US')}-row CSV into the original columns plus verdicts, and keeps a subset`, async () => {
    // Every third address has no mailbox; every 500th row is not an address at all.
    const rows = Array.from({ length: LIST_ROWS }, (_, index) => {
      const domain = `bulk-${String((index % 50) + 1).padStart(2, '0')}.test`;
      const email =
        index % 500 === 499 ? 'not an address' : `${index % 3 === 0 ? 'nobody' : 'user'}${index}@${domain}`;
      return [`Person ${index}`, email, `note, "${index}"`];
    });
    const csv = ['Name,Email,Note', ...rows.map((row) => row.map(quote).join(','))].join('\r\n');
    const input = join(scratch, 'list.csv');
    writeFileSync(input, csv);

    const output = join(scratch, 'cleaned.csv');
    const cleaned = await rcpt(['clean', input, '-o', output]);
    expect(cleaned.code, cleaned.stderr).toBe(0);
    // Not a terminal: plain progress lines, the last one at 100 %.
    expect(cleaned.stderr).not.toContain('\r');
    expect(cleaned.stderr).toMatch(/completed\s+100%\s+9,980\/9,980/);
    expect(cleaned.stdout).toContain(`wrote ${output}`);

    const table = parse(readFileSync(output, 'utf8')) as string[][];
    expect(table[0]).toEqual([
      'Name',
      'Email',
      'Note',
      'rcpt_status',
      'rcpt_sub_status',
      'rcpt_score',
      'rcpt_is_deliverable',
      'rcpt_reason',
      'rcpt_is_catch_all',
      'rcpt_suggestion',
    ]);
    expect(table).toHaveLength(LIST_ROWS + 1);
    table.slice(1).forEach((row, index) => {
      expect(row.slice(0, 3)).toEqual(rows[index]);
      const expected =
        index % 500 === 499 ? 'invalid_syntax' : index % 3 === 0 ? 'mailbox_not_found' : 'accepted_email';
      expect(row[4]).toBe(expected);
    });

    const kept = join(scratch, 'deliverable.csv');
    const subset = await rcpt([
      'clean',
      input,
      '-o',
      kept,
      '--only',
      'deliverable',
      '--json',
      '--max-wait',
      '900',
      '--recheck',
    ]);
    expect(subset.code, subset.stderr).toBe(0);
    const summary = JSON.parse(subset.stdout);
    expect(summary).toMatchObject({ only: ['deliverable'], creditsCharged: 9_980 });
    // The job was asked for with the command's deadline and follow-up.
    const client = new Rcpt({ apiKey: system.stack.apiKey, baseUrl: system.stack.baseUrl });
    const job = await client.job(summary.jobId);
    expect(job.recheck).toBe(true);
    expect(Date.parse(job.deadlineAt ?? '') - Date.parse(job.createdAt)).toBe(900_000);
    const keptRows = (parse(readFileSync(kept, 'utf8')) as string[][]).slice(1);
    expect(keptRows.map((row) => row[1])).toEqual(
      table
        .slice(1)
        .filter((row) => row[3] === 'deliverable')
        .map((row) => row[1]),
    );
  });

  it('lists the jobs and shows the account', async () => {
    const jobs = await rcpt(['jobs', '--json']);
    expect(jobs.code).toBe(0);
    expect((JSON.parse(jobs.stdout) as { name: string; status: string }[]).map((job) => job.name)).toEqual([
      'list.csv',
      'list.csv',
    ]);
    const account = await rcpt(['account']);
    expect(account.code).toBe(0);
    expect(account.stdout).toMatch(/credits: [\d,]+/);
  });

  it('exits 1 with the code and request id when the API refuses, 3 when nothing answers', async () => {
    const refused = await rcpt(['account'], { RCPT_API_KEY: 'rk_live_not-a-key' });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/INVALID_API_KEY: .* \(HTTP 401, request [\w-]+\)/);

    const nobody = await rcpt(['account'], { RCPT_BASE_URL: `http://127.0.0.1:${await freePort()}` });
    expect(nobody.code).toBe(3);
    expect(nobody.stderr).toContain('no answer from the rcpt API');
  });
});

function quote(value: string): string {
  return /[",\r\n]/.test(value) ? `"${value.replaceAll('"', '""')}"` : value;
}

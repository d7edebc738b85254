// The evidence behind each answer through the whole system (docs/verdicts.md, "Evidence"): the
// real prober's sessions to the fake MX servers, which echo the addresses they refuse as
// Postfix does, seen through the API, the CSV export and the `rcpt` command. Each answer shows
// its own address and no other: not the MAIL FROM, not the catch-all test's, not the other
// addresses of the same list asked in the same session.

import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { components } from '../../client/src/openapi.d.ts';
import { REPO_ROOT } from '../../scripts/stack/wrangler-cli.ts';
import { runNodeScript } from '../node-process.ts';
import { jobWhen, okJson, type System, startSystem } from './harness.ts';

type VerificationResult = components['schemas']['VerificationResult'];
type Evidence = components['schemas']['Evidence'];

let system: System;

beforeAll(async () => {
  system = await startSystem();
});

afterAll(async () => {
  await system?.close();
});

/** The local parts of `others` must not appear anywhere in `evidence`; its own RCPT must. */
function expectOnlyOwn(evidence: Evidence | undefined, own: string, others: readonly string[]): void {
  expect(evidence).toBeDefined();
  const shown = JSON.stringify(evidence).toLowerCase();
  expect(shown).toContain(`rcpt to:<${own.toLowerCase()}>`);
  for (const other of others) {
    if (other === own) continue;
    expect(shown).not.toContain(`${other.slice(0, other.indexOf('@')).toLowerCase()}@`);
  }
}

async function completed(jobId: string): Promise<void> {
  await jobWhen(system, jobId, (job) => job.status === 'completed');
}

describe('evidence end to end', () => {
  it('a single call with evidence: true carries the session, its own RCPT and reply in clear', async () => {
    const domain = system.world.domains.accept;
    const email = `nobody@${domain}`;
    const { data } = await okJson<{ data: VerificationResult }>(
      await system.api('/api/v1/verify', { json: { email, evidence: true } }),
    );
    expect(data.subStatus).toBe('mailbox_not_found');
    const evidence = data.evidence;
    expect(evidence?.mxHost).toBe(data.meta.mxHost);
    expect(evidence?.mxIp).toMatch(/^127\./);
    // rcpt's egress by its opaque label, in the field and in every text (docs/verdicts.md).
    expect(evidence?.egress).toMatch(/^[a-z0-9-]+-[0-9a-f]{6}$/);
    expect(evidence?.egress?.startsWith(`${evidence?.region}-`)).toBe(true);
    const helo = evidence?.dialogue.find((step) => step.command?.startsWith('EHLO '))?.command;
    expect(helo).toBe(`EHLO ${evidence?.egress}`);
    const own = evidence?.dialogue.find((step) => step.command === `RCPT TO:<${email}>`);
    expect(own?.reply).toMatchObject({ code: 550, enhanced: '5.1.1' });
    expect(own?.reply?.text).toContain(`<${email}>`);
    const mail = evidence?.dialogue.find((step) => step.command?.startsWith('MAIL FROM:'));
    expect(mail?.command).toMatch(/^MAIL FROM:<\*\*\*@[^>]+>/);
  });

  it('a JSON upload with evidence: true gives each address its own session, others masked, and rcpt_smtp_reply', async () => {
    const domain = system.world.domains.accept;
    // `user…` mailboxes exist there: an accepted address brings the catch-all test into the session.
    const emails = ['alice', 'nobody', 'user17', 'ghost42', 'carol', 'nosuchone'].map(
      (localPart) => `${localPart}@${domain}`,
    );
    const { jobId } = await okJson<{ jobId: string }>(
      await system.api('/api/v1/bulk/upload', { json: { emails, evidence: true } }),
    );
    await completed(jobId);
    const { results } = await okJson<{ results: VerificationResult[] }>(
      await system.api(`/api/v1/bulk/results/${jobId}`),
    );
    expect(results).toHaveLength(emails.length);
    for (const result of results) expectOnlyOwn(result.evidence, result.email, emails);
    // The list was asked in shared sessions: other recipients show, masked, beside each address.
    const alice = results.find((result) => result.email === `alice@${domain}`);
    const recipients = alice?.evidence?.dialogue.filter((step) => step.command?.startsWith('RCPT TO:')) ?? [];
    expect(recipients.length).toBeGreaterThan(1);
    expect(recipients.filter((step) => step.command === `RCPT TO:<***@${domain}>`).length).toBe(
      recipients.length - 1,
    );

    const csv = parse(
      await (await system.api(`/api/v1/bulk/results/${jobId}?format=csv`)).text(),
    ) as string[][];
    expect(csv[0]?.at(-1)).toBe('rcpt_smtp_reply');
    const replies = new Map(csv.slice(1).map((row) => [row[0], row.at(-1)]));
    expect(replies.get(`alice@${domain}`)).toMatch(/^250 /);
    expect(replies.get(`nobody@${domain}`)).toBe(
      `550 5.1.1 <nobody@${domain}>: Recipient address rejected: User unknown in local recipient table`,
    );
  });

  it('a CSV upload takes evidence as a form field', async () => {
    const domain = system.world.domains.accept;
    const form = new FormData();
    form.set(
      'file',
      new File([`email\nbob@${domain}\nnobody2@${domain}\n`], 'list.csv', { type: 'text/csv' }),
    );
    form.set('evidence', 'true');
    const { jobId } = await okJson<{ jobId: string }>(
      await system.api('/api/v1/bulk/upload', { body: form }),
    );
    await completed(jobId);
    const { results } = await okJson<{ results: VerificationResult[] }>(
      await system.api(`/api/v1/bulk/results/${jobId}`),
    );
    const emails = results.map((result) => result.email);
    for (const result of results) expectOnlyOwn(result.evidence, result.email, emails);
  });

  it('rcpt verify --evidence prints the dialogue', async () => {
    const email = `alice@${system.world.domains.accept}`;
    const run = await runNodeScript(
      join(REPO_ROOT, 'client', 'bin', 'rcpt.js'),
      ['verify', email, '--evidence', '--fresh'],
      {
        env: {
          PATH: process.env.PATH,
          RCPT_API_KEY: system.stack.apiKey,
          RCPT_BASE_URL: system.stack.baseUrl,
        },
      },
    );
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(`${email}: deliverable`);
    expect(run.stdout).toMatch(
      /SMTP evidence: \S+ \[127\.[\d.]+\] from egress [a-z0-9-]+-[0-9a-f]{6} \(region /,
    );
    expect(run.stdout).toMatch(/ms S: 220 /);
    expect(run.stdout).toMatch(/ms C: MAIL FROM:<\*\*\*@/);
    expect(run.stdout).toContain(`ms C: RCPT TO:<${email}>`);
    expect(run.stdout).toMatch(/ms S: 250 /);
  });
});

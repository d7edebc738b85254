// The Accuracy page: the account's counts by status, the weekly rate with its figures, and each
// wrong verdict with the server's reply and a link to its job.
import { describe, expect, it } from 'vitest';
import { signedInAccount } from '../../../test/cookie-client.ts';
import { accountD1 } from '../../../test/fixtures.ts';

describe('the Accuracy page', () => {
  it('shows the counts behind each rate and lists a wrong verdict with its reply and its job', async () => {
    const { client, accountId } = await signedInAccount('accuracy');
    const empty = await (await client.get('/accuracy')).text();
    expect(empty).toContain('No outcome matched a verdict yet');

    const now = Date.now();
    const jobId = crypto.randomUUID();
    const d1 = await accountD1(accountId);
    const row = (email: string, outcome: string, bounceKind: string | null, diagnostic: string | null) =>
      d1
        .prepare(
          `INSERT INTO outcomes (id, account_id, source, event_key, email, outcome, at, diagnostic, bounce_kind,
           verdict_source, verdict_ref, verdict_at, verdict_status, verdict_sub_status, verdict_provider, created_at)
         VALUES (?1, ?2, 'api', ?3, ?3, ?4, ?5, ?6, ?7, 'batch', ?8, ?5 - 86400000, 'deliverable', 'accepted_email', 'google', ?5)`,
        )
        .bind(crypto.randomUUID(), accountId, email, outcome, now - 3_600_000, diagnostic, bounceKind, jobId);
    await d1.batch([
      row('kept@example.test', 'delivered', null, null),
      row('gone@example.test', 'hard_bounce', 'mailbox', '550 5.1.1 <gone@example.test>: user unknown'),
      row('blocked@example.test', 'hard_bounce', 'policy', '550 5.7.1 blocked by policy'),
    ]);

    const page = await client.get('/accuracy');
    expect(page.status).toBe(200);
    const html = await page.text();
    // 3 deliverable sends matched: 1 delivered, 1 mailbox bounce (wrong), 1 policy bounce (not wrong).
    expect(html).toMatch(/<td>3<\/td><td>1<\/td><td>1<\/td><td>1<\/td>/);
    expect(html).toContain('1 (33.3 %)');
    expect(html).toContain('gone@example.test');
    expect(html).toContain('550 5.1.1 &lt;gone@example.test&gt;: user unknown');
    expect(html).toContain(`href="/jobs/${jobId}"`);
    expect(html).not.toContain('blocked@example.test');
    expect(html).toContain('aria-current="page"');
  });
});

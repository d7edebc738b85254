// The Outcomes page: a CSV of outcomes recorded with the API's checks and errors, a replay counted
// once, and the sending services' endpoints made, listed and revoked; every form needs its CSRF token.
import { describe, expect, it } from 'vitest';
import { signedInAccount } from '../../../test/cookie-client.ts';
import { accountD1 } from '../../../test/fixtures.ts';

function csvForm(csv: string): FormData {
  const form = new FormData();
  form.set('file', new File([csv], 'outcomes.csv', { type: 'text/csv' }));
  return form;
}

async function outcomeRows(accountId: string) {
  const { results } = await (await accountD1(accountId))
    .prepare(
      'SELECT email, outcome, source, bounce_kind AS bounceKind FROM outcomes WHERE account_id = ?1 ORDER BY email',
    )
    .bind(accountId)
    .all();
  return results;
}

describe('the Outcomes page', () => {
  it('records a CSV of outcomes once, and refuses a bad one with the rows the API would name', async () => {
    const { client, accountId } = await signedInAccount('outcomes-csv');
    const csv = [
      'email,outcome,at,diagnostic',
      'kept@example.test,delivered,2026-03-01T08:00:00Z,',
      '"gone@example.test",hard_bounce,2026-03-01T08:05:00Z,"smtp; 550 5.1.1 user unknown, sorry"',
    ].join('\n');
    const first = await client.submit('/outcomes', '/outcomes/upload', csvForm(csv));
    expect(first.status).toBe(200);
    expect(await first.text()).toContain('Recorded 2 outcomes (0 already known), 0 matched to a verdict.');
    const again = await client.submit('/outcomes', '/outcomes/upload', csvForm(csv));
    expect(await again.text()).toContain('Recorded 0 outcomes (2 already known)');
    expect(await outcomeRows(accountId)).toEqual([
      { email: 'gone@example.test', outcome: 'hard_bounce', source: 'dashboard', bounceKind: 'mailbox' },
      { email: 'kept@example.test', outcome: 'delivered', source: 'dashboard', bounceKind: null },
    ]);

    // Without a file, the pasted text; a bad outcome and a bad time are named as the API names them.
    const form = new FormData();
    form.set('csv', 'late@example.test,bounced,2026-03-01T08:00:00Z\nlate@example.test,delivered,yesterday');
    const refused = await client.submit('/outcomes', '/outcomes/upload', form);
    expect(refused.status).toBe(400);
    const html = await refused.text();
    expect(html).toContain('Some rows are not outcomes');
    expect(html).toContain('<code>outcomes.0.outcome</code>');
    expect(html).toContain('<code>outcomes.1.at</code>');
    expect(await outcomeRows(accountId)).toHaveLength(2);

    const empty = await client.submit('/outcomes', '/outcomes/upload', new FormData());
    expect(empty.status).toBe(400);
    expect(await empty.text()).toContain('The file has no outcomes.');
  });

  it('makes a Postmark endpoint with its credentials shown once, lists it, and revokes it', async () => {
    const { client, accountId } = await signedInAccount('outcomes-endpoints');
    const made = await client.submit('/outcomes', '/outcomes/endpoints', {
      provider: 'postmark',
      credential: '',
    });
    expect(made.status).toBe(200);
    const html = await made.text();
    expect(html).toMatch(/with basic auth user <code>[^<]+<\/code> and password <code>[^<]{20,}<\/code>/);
    const id = /\/hooks\/outcomes\/postmark\/(oe_[A-Za-z0-9_-]+)/.exec(html)?.[1];
    expect(id).toBeDefined();
    const listed = await (await client.get('/outcomes')).text();
    expect(listed).toContain(`/hooks/outcomes/postmark/${id}`);
    expect(listed).not.toContain('and password');

    const badArn = await client.submit('/outcomes', '/outcomes/endpoints', {
      provider: 'ses',
      credential: 'nope',
    });
    expect(badArn.status).toBe(400);
    expect(await badArn.text()).toContain('The service or what it signs with is not valid.');

    const revoked = await client.submit('/outcomes', `/outcomes/endpoints/${id}/revoke`, {});
    expect(await revoked.text()).toContain('Endpoint revoked');
    const row = await (await accountD1(accountId))
      .prepare('SELECT revoked_at FROM outcome_endpoints WHERE id = ?1 AND account_id = ?2')
      .bind(id, accountId)
      .first<{ revoked_at: number | null }>();
    expect(row?.revoked_at).toEqual(expect.any(Number));
  });

  it('refuses a form without its CSRF token', async () => {
    const { client } = await signedInAccount('outcomes-csrf');
    const response = await client.post(
      '/outcomes/upload',
      csvForm('a@example.test,delivered,2026-03-01T08:00:00Z'),
    );
    expect(response.status).toBe(403);
  });
});

// The defended fake MX against the documentation it copies: each test drives a server over raw
// SMTP and checks what it says and when, by its counters and by the order of events, never by
// the clock. Servers where a default would make a test wait seconds get a shorter delay here;
// the world's own servers keep the documented values (checked at the end).
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { until } from '../eventually.ts';
import { companyList } from './expected-verdicts.ts';
import type { FakeMx, RunningMx } from './fake-mx.ts';
import { startFastMx } from './fast-mx.ts';
import {
  COMPANY_DEFENCES,
  EXCHANGE_TARPIT,
  type MailWorld,
  type MxDefences,
  POSTFIX_DEFAULTS,
  startWorld,
} from './index.ts';
import { SmtpTestClient } from './smtp-test-client.ts';
import { companyDomainNames } from './zone.ts';

// Addresses no other test of the world listens on.
const TEST_IP = '127.0.0.60';
let server: RunningMx | undefined;

async function serve(defences: MxDefences): Promise<RunningMx> {
  server = await startFastMx({ name: 'defended', host: 'mx.defended.test', ip: TEST_IP }, 0, defences);
  return server;
}

afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** A greeted, EHLO'd session with MAIL FROM sent. */
async function transaction(mx: FakeMx): Promise<SmtpTestClient> {
  const client = await SmtpTestClient.greeted(mx.ip, mx.port);
  expect((await client.command('EHLO probe.rcpt.test')).code).toBe(250);
  expect((await client.command('MAIL FROM:<probe@rcpt.test>')).code).toBe(250);
  return client;
}

/** Waits for a server state that has no event of its own, within the test's time. */
const waitFor = (condition: () => boolean, what: string) => until(condition, what, 15_000);

const unknown = (index: number) => `RCPT TO:<nobody${index}@defended.test>`;

describe('Postfix error limits', () => {
  test('the 11th rejected RCPT is answered only after the error sleep; the first ten are not', async () => {
    const mx = await serve({ ...POSTFIX_DEFAULTS, errorSleepMs: 400 });
    const client = await transaction(mx);
    for (let index = 1; index <= 10; index++) {
      expect((await client.command(unknown(index))).last).toMatch(/^550 5\.1\.1 <nobody\d+@defended\.test>/);
    }
    expect(mx.stats().errorSleeps).toBe(0);
    client.write(unknown(11));
    // The server has begun the sleep, and the reply is not out yet.
    await waitFor(() => mx.stats().errorSleeps === 1, 'the error sleep');
    expect(client.unreadLines()).toBe(0);
    expect((await client.reply()).code).toBe(550);
    // Past the soft limit every reply sleeps, an accepted recipient's too.
    expect((await client.command('RCPT TO:<alice@defended.test>')).code).toBe(250);
    expect(mx.stats().errorSleeps).toBe(2);
    await client.quit();
  });

  test('the 20th error ends the session with 421 "too many errors", unasked', async () => {
    const mx = await serve({ ...POSTFIX_DEFAULTS, errorSleepMs: 1 });
    const client = await transaction(mx);
    // Pipelined, as a careless prober sends them: everything after the 20th is never answered.
    client.write(...Array.from({ length: 25 }, (_, index) => unknown(index + 1)));
    for (let index = 1; index <= 20; index++) expect((await client.reply()).code).toBe(550);
    expect((await client.reply()).last).toBe('421 4.7.0 mx.defended.test Error: too many errors');
    await client.closed;
    expect(mx.stats()).toMatchObject({ rcpts: 20, rejectedRcpts: 20, hardLimitHangups: 1, errorSleeps: 11 });
  });

  test('errors count per connection: RSET does not clear them, a new connection starts at zero', async () => {
    const mx = await serve({ ...POSTFIX_DEFAULTS, errorSleepMs: 1 });
    const client = await transaction(mx);
    for (let index = 1; index <= 10; index++) await client.command(unknown(index));
    expect((await client.command('RSET')).code).toBe(250);
    expect((await client.command('MAIL FROM:<probe@rcpt.test>')).code).toBe(250);
    expect(mx.stats().errorSleeps).toBe(2);
    await client.quit();

    mx.resetStats();
    const fresh = await transaction(mx);
    for (let index = 1; index <= 10; index++) await fresh.command(unknown(index));
    expect(mx.stats().errorSleeps).toBe(0);
    await fresh.quit();
  });

  test('the connection over smtpd_client_connection_count_limit gets 421 "too many connections"', async () => {
    const mx = await serve({ ...POSTFIX_DEFAULTS, connectionCountLimit: 20 });
    const sessions = await Promise.all(
      Array.from({ length: 20 }, () => SmtpTestClient.greeted(mx.ip, mx.port)),
    );
    const refused = await SmtpTestClient.open(mx.ip, mx.port);
    expect((await refused.reply()).last).toBe(
      '421 4.7.0 mx.defended.test Error: too many connections from 127.0.0.1',
    );
    await refused.closed;
    expect(mx.stats()).toMatchObject({
      sessionsOpened: 20,
      maxConcurrentSessions: 20,
      connectionCapRefusals: 1,
    });

    // A session that said QUIT no longer counts: the next one is served.
    await sessions[0]?.quit();
    const next = await SmtpTestClient.greeted(mx.ip, mx.port);
    expect(mx.stats().maxConcurrentSessions).toBe(20);
    await Promise.all([next, ...sessions.slice(1)].map((session) => session.quit()));
  });

  test('connection and recipient rate limits, when set, refuse with Postfix texts', async () => {
    const mx = await serve({ connectionRateLimit: 2, recipientRateLimit: 3, rateWindowMs: 60_000 });
    const first = await transaction(mx);
    for (let index = 1; index <= 3; index++) {
      expect((await first.command(`RCPT TO:<user${index}@defended.test>`)).code).toBe(250);
    }
    expect((await first.command('RCPT TO:<user4@defended.test>')).last).toBe(
      '450 4.7.1 Error: too many recipients from 127.0.0.1',
    );
    const second = await SmtpTestClient.greeted(mx.ip, mx.port);
    const third = await SmtpTestClient.open(mx.ip, mx.port);
    expect((await third.reply()).last).toBe(
      '421 4.7.0 mx.defended.test Error: too many connections from 127.0.0.1',
    );
    expect(mx.stats()).toMatchObject({ connectionRateRefusals: 1, recipientRateRefusals: 1 });
    await Promise.all([first.quit(), second.quit()]);
  });
});

describe('other defences', () => {
  test('Exchange tarpit: a 550 for an unknown recipient is held back; a 250 is not', async () => {
    const mx = await serve({ tarpitMs: 400 });
    const client = await transaction(mx);
    expect((await client.command('RCPT TO:<alice@defended.test>')).code).toBe(250);
    client.write(unknown(1));
    await waitFor(() => mx.stats().tarpitted === 1, 'the tarpit');
    expect(client.unreadLines()).toBe(0);
    expect((await client.reply()).code).toBe(550);
    await client.quit();
  });

  test('one recipient per transaction: 452 4.5.3 after the first, a new transaction takes the next', async () => {
    const mx = await serve({ recipientsPerTransaction: 1 });
    const client = await transaction(mx);
    expect((await client.command('RCPT TO:<alice@defended.test>')).code).toBe(250);
    expect((await client.command('RCPT TO:<bob@defended.test>')).last).toBe(
      '452 4.5.3 Error: too many recipients',
    );
    client.write('RSET', 'MAIL FROM:<probe@rcpt.test>', 'RCPT TO:<bob@defended.test>');
    expect((await client.reply()).code).toBe(250);
    expect((await client.reply()).code).toBe(250);
    expect((await client.reply()).code).toBe(250);
    expect(mx.stats().tooManyRecipients).toBe(1);
    await client.quit();
  });

  test('greylisting: 450 4.2.0 for a new triplet and its early retries, the mailbox rule after the delay', async () => {
    const delayMs = 150;
    const mx = await serve({ greylistDelayMs: delayMs });
    const firstAsked = performance.now();
    const client = await transaction(mx);
    expect((await client.command('RCPT TO:<alice@defended.test>')).last).toMatch(
      /^450 4\.2\.0 <alice@defended\.test>: Recipient address rejected: Greylisted/,
    );
    await waitFor(() => performance.now() - firstAsked > delayMs * 2, 'the greylist delay');
    expect((await client.command('RCPT TO:<alice@defended.test>')).code).toBe(250);
    expect((await client.command('RCPT TO:<nobody@defended.test>')).code).toBe(450);
    expect(mx.stats().greylisted).toBe(2);
    await client.quit();
  });
});

describe('the world', () => {
  let world: MailWorld;
  beforeAll(async () => {
    world = await startWorld({ companies: { domains: 8, hosts: 4 } });
  });
  afterAll(async () => {
    await world?.close();
  });

  test('the defended servers keep the documented defaults', () => {
    expect(POSTFIX_DEFAULTS).toMatchObject({
      softErrorLimit: 10,
      errorSleepMs: 1000,
      hardErrorLimit: 20,
      connectionCountLimit: 50,
    });
    expect(EXCHANGE_TARPIT.tarpitMs).toBe(5000);
    expect(COMPANY_DEFENCES).toMatchObject({
      ...POSTFIX_DEFAULTS,
      connectionCountLimit: 20,
    });
  });

  test('company domains are spread over the company hosts, which check mailboxes', async () => {
    expect(world.companyDomains).toEqual(companyDomainNames(8));
    expect(world.companyMx.map((mx) => mx.ip)).toEqual([
      '127.0.0.40',
      '127.0.0.41',
      '127.0.0.42',
      '127.0.0.43',
    ]);
    const mx = world.companyMx[1]!;
    const client = await transaction(mx);
    expect((await client.command('RCPT TO:<user00001@company-002.test>')).code).toBe(250);
    expect((await client.command('RCPT TO:<left00002@company-002.test>')).code).toBe(550);
    await client.quit();
  });

  test('the company list: equal blocks per domain, the unknown share in each block', () => {
    const list = companyList();
    expect(list).toHaveLength(10_000);
    expect(new Set(list.map((row) => row.address)).size).toBe(10_000);
    const byDomain = new Map<string, typeof list>();
    for (const row of list) {
      const domain = row.address.split('@')[1] ?? '';
      byDomain.set(domain, [...(byDomain.get(domain) ?? []), row]);
    }
    expect(byDomain.size).toBe(200);
    for (const rows of byDomain.values()) {
      expect(rows).toHaveLength(50);
      expect(rows.filter((row) => row.subStatus === 'mailbox_not_found')).toHaveLength(20);
    }
    for (const row of list) {
      expect(row.status).toBe(row.address.startsWith('user') ? 'deliverable' : 'undeliverable');
    }
  });
});

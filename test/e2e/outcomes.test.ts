// Outcomes end to end (docs/verdicts.md, "Outcomes"): the whole system and, as the sending
// services, test/world/outcome-senders.ts with real signatures. A verdict is made first; then
// outcomes come in through the API and through each service's webhook — good (recorded and
// matched to the verdict), tampered (401, nothing recorded) and replayed (counted once).
import type { OutcomesResponse } from '@rcpt/shared/contract/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type FakeSns,
  mailgunSender,
  postmarkBounce,
  sendgridBounce,
  sendgridSender,
  sesBounce,
  startFakeSns,
} from '../world/outcome-senders.ts';
import { STORY_LIST, tellOutcomesStory } from '../world/outcomes-story.ts';
import { DOMAINS } from '../world/zone.ts';
import { newAccount, okJson, type System, sqlRows, startSystem } from './harness.ts';

let system: System;
let sns: FakeSns;

const USER_UNKNOWN = 'smtp; 550 5.1.1 <nobody@example.com>: Recipient address rejected: User unknown';

beforeAll(async () => {
  sns = await startFakeSns();
  system = await startSystem({
    vars: {
      SNS_TEST_ORIGIN: sns.origin,
      SECRETS_KEY: btoa(String.fromCharCode(...new Uint8Array(32).fill(7))),
    },
  });
  // The verdicts the outcomes are matched to.
  for (const email of [`alice@${DOMAINS.accept}`, `nobody@${DOMAINS.accept}`]) {
    await okJson(await system.api('/api/v1/verify', { json: { email } }));
  }
});

afterAll(async () => {
  await system?.close();
  await sns?.close();
});

async function createEndpoint(body: unknown) {
  return okJson<{
    endpoint: { id: string; url: string };
    basicAuth: { username: string; password: string } | null;
  }>(await system.api('/api/v1/outcomes/endpoints', { json: body }));
}

function post(url: string, body: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(url, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } });
}

async function outcomeRows(source: string) {
  return sqlRows<{ email: string; outcome: string; bounce_kind: string; verdict_sub_status: string | null }>(
    system,
    `SELECT email, outcome, bounce_kind, verdict_sub_status FROM outcomes WHERE source = '${source}' ORDER BY created_at`,
  );
}

describe('outcomes', () => {
  it('takes outcomes through the API, matched to the verdict and counted once', async () => {
    const body = {
      outcomes: [
        { email: `alice@${DOMAINS.accept}`, outcome: 'delivered', at: new Date().toISOString() },
        {
          email: `nobody@${DOMAINS.accept.toUpperCase()}`,
          outcome: 'hard_bounce',
          at: new Date().toISOString(),
          diagnostic: '550 5.7.1 Service unavailable; client blocked using Spamhaus',
        },
      ],
    };
    const first = await okJson<OutcomesResponse>(await system.api('/api/v1/outcomes', { json: body }));
    expect(first).toMatchObject({ recorded: 2, duplicates: 0, matched: 2 });
    expect(first.outcomes[0]?.verdict).toMatchObject({ source: 'single', status: 'deliverable' });
    // A policy bounce is not the mailbox: the undeliverable verdict is not contradicted by it.
    expect(first.outcomes[1]).toMatchObject({
      email: `nobody@${DOMAINS.accept}`,
      bounce: { kind: 'policy', subStatus: 'antispam_blocked' },
      verdict: { status: 'undeliverable', subStatus: 'mailbox_not_found' },
    });
    const again = await okJson<OutcomesResponse>(await system.api('/api/v1/outcomes', { json: body }));
    expect(again).toMatchObject({ recorded: 0, duplicates: 2 });
    const bad = await system.api('/api/v1/outcomes', {
      json: { outcomes: [{ email: 'not an address', outcome: 'delivered', at: new Date().toISOString() }] },
    });
    expect(bad.status).toBe(400);
    expect(await outcomeRows('api')).toHaveLength(2);
  });

  it('Amazon SES through SNS: confirms the subscription, takes a signed bounce, refuses a tampered one', async () => {
    const { endpoint } = await createEndpoint({ provider: 'ses', topicArn: sns.topicArn });
    const confirm = await post(endpoint.url, JSON.stringify(sns.subscriptionConfirmation()));
    expect(await confirm.json()).toMatchObject({ subscriptionConfirmed: true });
    expect(sns.confirmations).toBe(1);

    const email = `nobody@${DOMAINS.accept}`;
    const notification = sns.notification(sesBounce(email, USER_UNKNOWN, new Date()));
    const good = await post(endpoint.url, JSON.stringify(notification));
    expect(await good.json()).toMatchObject({ recorded: 1, duplicates: 0 });
    const replayed = await post(endpoint.url, JSON.stringify(notification));
    expect(await replayed.json()).toMatchObject({ recorded: 0, duplicates: 1 });
    const tampered = await post(
      endpoint.url,
      JSON.stringify({ ...notification, Message: notification.Message?.replace('nobody@', 'alice@') }),
    );
    expect(tampered.status).toBe(401);
    expect(await tampered.json()).toMatchObject({ code: 'OUTCOME_HOOK_UNAUTHORIZED' });
    // A certificate from anywhere but SNS (or the tests' origin) is not fetched.
    const foreignCert = await post(
      endpoint.url,
      JSON.stringify({ ...notification, SigningCertURL: 'https://example.com/cert.pem' }),
    );
    expect(foreignCert.status).toBe(401);
    // SignatureVersion 1 (SHA1withRSA) is taken too.
    const v1 = await post(
      endpoint.url,
      JSON.stringify(
        sns.notification(sesBounce(`alice@${DOMAINS.accept}`, USER_UNKNOWN, new Date()), {
          signatureVersion: '1',
        }),
      ),
    );
    expect(await v1.json()).toMatchObject({ recorded: 1 });
    expect(await outcomeRows('ses')).toEqual([
      { email, outcome: 'hard_bounce', bounce_kind: 'mailbox', verdict_sub_status: 'mailbox_not_found' },
      {
        email: `alice@${DOMAINS.accept}`,
        outcome: 'hard_bounce',
        bounce_kind: 'mailbox',
        verdict_sub_status: 'accepted_email',
      },
    ]);
  });

  it("SendGrid's signed Event Webhook: good, tampered, replayed", async () => {
    const sender = sendgridSender();
    const { endpoint } = await createEndpoint({ provider: 'sendgrid', publicKey: sender.publicKey });
    const body = JSON.stringify([
      // SendGrid stamps an event in whole seconds: one stamped now may fall in the very second the
      // verdicts were made, and so before them (an outcome matches a verdict made before it).
      sendgridBounce(
        `nobody@${DOMAINS.accept}`,
        '550 5.1.1 The email account does not exist',
        new Date(Date.now() + 1000),
      ),
    ]);
    const headers = sender.headers(body);
    expect(await (await post(endpoint.url, body, headers)).json()).toMatchObject({ recorded: 1 });
    expect(await (await post(endpoint.url, body, headers)).json()).toMatchObject({
      recorded: 0,
      duplicates: 1,
    });
    const tampered = await post(endpoint.url, body.replace('nobody@', 'alice@'), headers);
    expect(tampered.status).toBe(401);
    expect(await outcomeRows('sendgrid')).toEqual([
      {
        email: `nobody@${DOMAINS.accept}`,
        outcome: 'hard_bounce',
        bounce_kind: 'mailbox',
        verdict_sub_status: 'mailbox_not_found',
      },
    ]);
  });

  it("Postmark's webhook with basic auth: good, wrong credentials, replayed", async () => {
    const { endpoint, basicAuth } = await createEndpoint({ provider: 'postmark' });
    if (!basicAuth) throw new Error('Postmark endpoints come with credentials');
    const body = JSON.stringify(
      postmarkBounce(`nobody@${DOMAINS.accept}`, 'smtp;550 5.1.1 user unknown', new Date()),
    );
    const auth = (password: string) => ({
      authorization: `Basic ${btoa(`${basicAuth.username}:${password}`)}`,
    });
    expect(await (await post(endpoint.url, body, auth(basicAuth.password))).json()).toMatchObject({
      recorded: 1,
    });
    expect(await (await post(endpoint.url, body, auth(basicAuth.password))).json()).toMatchObject({
      duplicates: 1,
    });
    expect((await post(endpoint.url, body, auth(`${basicAuth.password}x`))).status).toBe(401);
    expect((await post(endpoint.url, body)).status).toBe(401);
    expect(await outcomeRows('postmark')).toHaveLength(1);
  });

  it("Mailgun's HMAC signature: good, tampered, a token replayed with another event", async () => {
    const sender = mailgunSender();
    const { endpoint } = await createEndpoint({ provider: 'mailgun', signingKey: sender.signingKey });
    const event = sender.failed(
      `nobody@${DOMAINS.accept}`,
      550,
      '5.1.1 The email account does not exist',
      new Date(),
    );
    expect(await (await post(endpoint.url, JSON.stringify(event))).json()).toMatchObject({ recorded: 1 });
    // The same request again: a redelivery, counted once.
    expect(await (await post(endpoint.url, JSON.stringify(event))).json()).toMatchObject({ duplicates: 1 });
    // Its signature with another event (the HMAC does not cover the event): a replay.
    const other = sender.failed(`alice@${DOMAINS.accept}`, 550, '5.1.1 gone', new Date());
    const replayed = await post(endpoint.url, JSON.stringify({ ...other, signature: event.signature }));
    expect(replayed.status).toBe(401);
    const forged = await post(
      endpoint.url,
      JSON.stringify({ ...other, signature: { ...other.signature, signature: '0'.repeat(64) } }),
    );
    expect(forged.status).toBe(401);
    expect(await outcomeRows('mailgun')).toEqual([
      {
        email: `nobody@${DOMAINS.accept}`,
        outcome: 'hard_bounce',
        bounce_kind: 'mailbox',
        verdict_sub_status: 'mailbox_not_found',
      },
    ]);
  });

  it("the demo's story: a list verified, outcomes from the four services, the accuracy they make, the bounce learnt", async () => {
    const { key } = await newAccount(system, STORY_LIST.length + 1);
    const story = await tellOutcomesStory(system.stack.baseUrl, key, sns);
    expect(story.posts.map(({ status, recorded, duplicates }) => [status, recorded, duplicates])).toEqual([
      [200, 2, 0], // SendGrid: two deliveries
      [401, 0, 0], // the same body with an address changed under its signature
      [200, 0, 0], // SES: the subscription confirmed
      [200, 1, 0], // SES: a mailbox bounce
      [200, 0, 1], // SES: the same notification again
      [200, 1, 0], // Postmark: a mailbox bounce of a deliverable verdict
      [200, 1, 0], // Mailgun: a policy bounce
    ]);
    // Another account's outcomes (this file's other tests) count nowhere here.
    expect(story.accuracy.byStatus).toEqual({
      deliverable: expect.objectContaining({ matched: 3, delivered: 2, mailboxBounces: 1, wrong: 1 }),
      undeliverable: expect.objectContaining({ matched: 1, delivered: 0, mailboxBounces: 1, wrong: 0 }),
      risky: expect.objectContaining({ matched: 1, policyBounces: 1, wrong: 0 }),
    });
    // carol bounced on a mailbox reason: her next verdict comes from the bounce, no SMTP.
    expect(story.learnt).toMatchObject({
      email: STORY_LIST[2],
      status: 'undeliverable',
      subStatus: 'mailbox_not_found',
      meta: { learnt: { kind: 'mailbox_bounce' } },
    });
    // A few charged verifications are under the guarantee's monthly cap: nothing comes back.
    expect(story.posts.map((post) => post.refunded)).toEqual([0, 0, 0, 0, 0, 0, 0]);
  });
});

// The outcomes story of `npm run demo` (docs/verdicts.md, "Outcomes" and "Accuracy"): a list of the
// world's addresses verified, then the sending services of outcome-senders.ts post what happened
// to a send to each — deliveries, a mailbox bounce through each kind of webhook, a policy bounce,
// one event posted twice and one with a broken signature — and the account's accuracy as
// `GET /api/v1/accuracy` answers it. The same story runs in test/e2e/outcomes.test.ts.
import type { AccuracyCounts, AccuracyResponse, VerificationResult } from '@rcpt/shared/contract/api';
import {
  type FakeSns,
  mailgunSender,
  postmarkBounce,
  sendgridDelivered,
  sendgridSender,
  sesBounce,
} from './outcome-senders.ts';
import { DOMAINS } from './zone.ts';

/** What the story posted, each with the HTTP status its endpoint answered. */
export interface StoryPost {
  what: string;
  status: number;
  recorded: number;
  duplicates: number;
  /** Credits the guarantee gave back for it (docs/money.md, "The guarantee"). */
  refunded: number;
}

export interface OutcomesStory {
  jobId: string;
  posts: StoryPost[];
  accuracy: AccuracyResponse;
  /** The bounced mailbox verified again: answered from the account's bounce (docs/verdicts.md, "Learning from outcomes"). */
  learnt: VerificationResult;
}

/** The list verified: three mailboxes that exist, one that does not, a catch-all's. */
export const STORY_LIST = [
  `alice@${DOMAINS.accept}`,
  `bob@${DOMAINS.accept}`,
  `carol@${DOMAINS.accept}`,
  `nobody@${DOMAINS.accept}`,
  `anyone@${DOMAINS.catchall}`,
] as const;

/** How often the story asks whether its job completed; the API allows 100 calls a minute. */
const POLL_MS = 1_000;
/** How long the story waits for its job: the world answers in seconds. */
const JOB_WAIT_MS = 120_000;

/**
 * Tells the story against the edge at `baseUrl` with the live key `apiKey` of an account with at
 * least six credits (the list, then the bounced mailbox verified again); `sns` is the fake SNS the edge trusts (its SNS_TEST_ORIGIN).
 */
export async function tellOutcomesStory(
  baseUrl: string,
  apiKey: string,
  sns: FakeSns,
): Promise<OutcomesStory> {
  const api = async <T>(path: string, body?: unknown): Promise<T> => {
    const response = await fetch(`${baseUrl}${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { 'X-API-Key': apiKey, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    if (!response.ok) throw new Error(`${path} answered ${response.status}: ${await response.text()}`);
    return (await response.json()) as T;
  };
  const { jobId } = await api<{ jobId: string }>('/api/v1/bulk/upload', { emails: STORY_LIST });
  await completion(() => api<{ job: { status: string } }>(`/api/v1/bulk/status/${jobId}`));

  const endpoint = async (request: unknown) =>
    (
      await api<{ endpoint: { url: string }; basicAuth: { username: string; password: string } | null }>(
        '/api/v1/outcomes/endpoints',
        request,
      )
    ).endpoint.url;
  const posts: StoryPost[] = [];
  const post = async (what: string, url: string, body: string, headers: Record<string, string> = {}) => {
    const response = await fetch(url, {
      method: 'POST',
      body,
      headers: { 'content-type': 'application/json', ...headers },
    });
    const answer = (await response.json()) as { recorded?: number; duplicates?: number; refunded?: number };
    posts.push({
      what,
      status: response.status,
      recorded: answer.recorded ?? 0,
      duplicates: answer.duplicates ?? 0,
      refunded: answer.refunded ?? 0,
    });
  };
  const now = new Date();

  // SendGrid: two deliveries, then the same body with an address changed under its signature.
  const sendgrid = sendgridSender();
  const sendgridUrl = await endpoint({ provider: 'sendgrid', publicKey: sendgrid.publicKey });
  const delivered = JSON.stringify([
    sendgridDelivered(STORY_LIST[0], now),
    sendgridDelivered(STORY_LIST[1], now),
  ]);
  await post('SendGrid: alice and bob delivered', sendgridUrl, delivered, sendgrid.headers(delivered));
  await post(
    'SendGrid: the same body, an address changed (bad signature)',
    sendgridUrl,
    delivered.replace('alice@', 'carol@'),
    sendgrid.headers(delivered),
  );

  // Amazon SES through SNS: the subscription confirmed, a mailbox bounce, and that bounce again.
  const sesUrl = await endpoint({ provider: 'ses', topicArn: sns.topicArn });
  await post('SES: subscription confirmation', sesUrl, JSON.stringify(sns.subscriptionConfirmation()));
  const bounce = JSON.stringify(
    sns.notification(
      sesBounce(
        STORY_LIST[3],
        `smtp; 550 5.1.1 <${STORY_LIST[3]}>: Recipient address rejected: User unknown`,
        now,
      ),
    ),
  );
  await post('SES: nobody bounced, 550 5.1.1 user unknown', sesUrl, bounce);
  await post('SES: the same notification again (a replay)', sesUrl, bounce);

  // Postmark: a mailbox that rcpt called deliverable bounced (a miss, counted as wrong).
  const postmark = await api<{
    endpoint: { url: string };
    basicAuth: { username: string; password: string };
  }>('/api/v1/outcomes/endpoints', { provider: 'postmark' });
  const { username, password } = postmark.basicAuth;
  await post(
    'Postmark: carol bounced, 550 5.1.1 mailbox unavailable',
    postmark.endpoint.url,
    JSON.stringify(postmarkBounce(STORY_LIST[2], 'smtp;550 5.1.1 mailbox unavailable', now)),
    { authorization: `Basic ${btoa(`${username}:${password}`)}` },
  );

  // Mailgun: a policy bounce says nothing of the mailbox.
  const mailgun = mailgunSender();
  const mailgunUrl = await endpoint({ provider: 'mailgun', signingKey: mailgun.signingKey });
  await post(
    'Mailgun: anyone refused by policy, 550 5.7.1',
    mailgunUrl,
    JSON.stringify(mailgun.failed(STORY_LIST[4], 550, '5.7.1 Message rejected due to local policy', now)),
  );

  const accuracy = await api<AccuracyResponse>('/api/v1/accuracy');
  // carol, whom the job called deliverable, bounced: her next verdict comes from that bounce.
  const { data: learnt } = await api<{ data: VerificationResult }>('/api/v1/verify', {
    email: STORY_LIST[2],
  });
  return { jobId, posts, accuracy, learnt };
}

/** The story as `npm run demo` prints it. */
export function storyLines(story: OutcomesStory): string[] {
  const lines = [`Outcomes (job ${story.jobId}: ${STORY_LIST.join(', ')}):`, ''];
  for (const post of story.posts)
    lines.push(
      `  ${post.what.padEnd(62)} ${post.status}${post.status === 200 ? ` recorded ${post.recorded}, replays ${post.duplicates}` : ''}`,
    );
  lines.push('', 'Accuracy (GET /api/v1/accuracy):', '');
  for (const [status, counts] of Object.entries(story.accuracy.byStatus) as [string, AccuracyCounts][])
    lines.push(
      `  ${status.padEnd(14)} matched ${counts.matched}, delivered ${counts.delivered}, mailbox bounces ${counts.mailboxBounces}, policy bounces ${counts.policyBounces}, wrong ${counts.wrong}${counts.wrongRate === null ? '' : ` (${Math.round(counts.wrongRate * 100)} %)`}`,
    );
  const { learnt } = story;
  const bounced = learnt.meta.learnt?.kind === 'mailbox_bounce' ? learnt.meta.learnt.bouncedAt : null;
  lines.push(
    '',
    `Learnt: ${learnt.email} verified again → ${learnt.status} / ${learnt.subStatus}${bounced ? ` (from the bounce of ${bounced})` : ''}`,
    `Guarantee: ${story.posts.reduce((sum, post) => sum + post.refunded, 0)} credits back (one per 100 charged verifications a month; docs/money.md)`,
  );
  return lines;
}

async function completion(status: () => Promise<{ job: { status: string } }>): Promise<void> {
  const giveUpAt = Date.now() + JOB_WAIT_MS;
  for (;;) {
    const { job } = await status();
    if (job.status === 'completed') return;
    if (job.status === 'failed' || Date.now() > giveUpAt)
      throw new Error(`the story's job ended ${job.status} (waited up to ${JOB_WAIT_MS / 1000} s)`);
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

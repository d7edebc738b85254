// The reply table held to real reply texts and the meaning their sources give them: the corpus
// is data, in shared/corpus/smtp-replies.json (its README says where each row comes from).
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import corpus from '../../corpus/smtp-replies.json' with { type: 'json' };
import { SUB_STATUSES, type SubStatus } from '../contract/api.ts';
import { classifyReply, refusesClient } from './smtp-reply.ts';

/** What a source says a reply means (shared/corpus/README.md). */
const ReplyMeaning = z.enum([
  'mailbox_unknown',
  'mailbox_disabled',
  'mailbox_full',
  'policy',
  'sender_rejected',
  'content',
  'rate_limit',
  'relay_denied',
  'greylist',
  'temporary',
  'server_full',
  'message_size',
  'protocol',
  'ambiguous',
]);
type ReplyMeaning = z.infer<typeof ReplyMeaning>;

const CorpusReply = z.strictObject({
  code: z.number().int().min(200).max(599),
  enhanced: z
    .string()
    .regex(/^[245]\.\d{1,3}\.\d{1,3}$/)
    .nullable(),
  text: z.string().min(1),
  meaning: ReplyMeaning,
  label: z.string().optional(),
  source: z.string(),
});
type CorpusReply = z.infer<typeof CorpusReply>;

const REPLY_CORPUS: readonly CorpusReply[] = z.array(CorpusReply).parse(corpus);

const MAILBOX_BAD: readonly SubStatus[] = ['mailbox_not_found', 'mailbox_disabled'];

/** The answers that agree with each meaning; `null` stands for any `unknown` answer. */
const AGREEING: Record<ReplyMeaning, readonly SubStatus[] | null> = {
  // A recipient the server calls malformed (5.1.3) is as bad as an unknown one.
  mailbox_unknown: [...MAILBOX_BAD, 'invalid_syntax'],
  mailbox_disabled: MAILBOX_BAD,
  mailbox_full: ['mailbox_full'],
  policy: ['antispam_blocked'],
  sender_rejected: ['antispam_blocked'],
  content: null,
  rate_limit: ['mail_server_temporary_error', 'antispam_blocked', 'greylisted'],
  relay_denied: ['provider_unverifiable', 'antispam_blocked'],
  greylist: ['greylisted'],
  temporary: null,
  server_full: null,
  message_size: null,
  protocol: null,
  ambiguous: null,
};

function answerTo(row: CorpusReply): SubStatus {
  return classifyReply({ code: row.code, enhanced: row.enhanced, text: row.text }, 'rcpt').subStatus;
}

function agrees(row: CorpusReply, subStatus: SubStatus): boolean {
  const agreeing = AGREEING[row.meaning];
  return agreeing === null ? SUB_STATUSES[subStatus] === 'unknown' : agreeing.includes(subStatus);
}

// A refused sender is counted in the agreement but not here: one Japanese carrier answers
// "550 Unknown user <our sender>", which no reply table can tell from an unknown recipient.
const NEVER_UNDELIVERABLE: readonly ReplyMeaning[] = [
  'policy',
  'content',
  'rate_limit',
  'relay_denied',
  'ambiguous',
];

describe('the reply table against real replies', () => {
  const answers = REPLY_CORPUS.map((row) => ({ row, subStatus: answerTo(row) }));

  it('holds at least 250 replies, each with its source', () => {
    expect(REPLY_CORPUS.length).toBeGreaterThanOrEqual(250);
    for (const row of REPLY_CORPUS) expect(row.source).toMatch(/^(https?:\/\/|sisimai:maildir\/)/);
  });

  it('agrees with at least 97 % of them', () => {
    const disagreeing = answers.filter(({ row, subStatus }) => !agrees(row, subStatus));
    expect(
      disagreeing.map(({ row, subStatus }) => `${row.meaning} → ${subStatus}: ${row.code} ${row.text}`),
    ).toHaveLength(disagreeing.length);
    expect(1 - disagreeing.length / answers.length).toBeGreaterThanOrEqual(0.97);
  });

  it('never calls a policy, rate-limit, relay or ambiguous reply undeliverable', () => {
    const wrong = answers
      .filter(
        ({ row, subStatus }) =>
          NEVER_UNDELIVERABLE.includes(row.meaning) && SUB_STATUSES[subStatus] === 'undeliverable',
      )
      .map(
        ({ row, subStatus }) =>
          `${row.meaning} → ${subStatus}: ${row.code} ${row.enhanced ?? ''} ${row.text}`,
      );
    expect(wrong).toEqual([]);
  });

  it('misses at most 2 % of unknown-user replies', () => {
    const unknownUser = answers.filter(({ row }) => row.meaning === 'mailbox_unknown');
    const missed = unknownUser.filter(({ subStatus }) => SUB_STATUSES[subStatus] !== 'undeliverable');
    expect(missed.length / unknownUser.length).toBeLessThanOrEqual(0.02);
  });

  it('sends no mailbox answer to another egress, and every block-list refusal', () => {
    const rerouted = (row: CorpusReply) =>
      refusesClient({ code: row.code, enhanced: row.enhanced, text: row.text }, 'rcpt');
    const mailboxAnswers = REPLY_CORPUS.filter((row) => row.meaning.startsWith('mailbox_'));
    expect(mailboxAnswers.filter(rerouted).map((row) => row.text)).toEqual([]);
    // A DNS block list lists the connecting address (RFC 5782 §2.1): every such refusal names the client.
    const listings = REPLY_CORPUS.filter((row) =>
      /spamhaus|spamcop|dnsbl|barracudacentral|blocked using/i.test(row.text),
    );
    expect(listings.length).toBeGreaterThanOrEqual(5);
    expect(listings.filter((row) => !rerouted(row)).map((row) => row.text)).toEqual([]);
  });
});

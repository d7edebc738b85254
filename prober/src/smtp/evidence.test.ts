// The evidence each address's outcome carries (docs/verdicts.md, "Evidence"), from real SMTP
// sessions to the fake mail world: one session asks several customers' addresses and the
// catch-all test's made-up one from rcpt's MAIL FROM, and the servers echo the addresses they
// refuse, as Postfix does. Each address's evidence must show only that address in clear.
import type { ProbeRequest } from '@rcpt/shared/contract/prober';
import { MAX_EVIDENCE_BYTES } from '@rcpt/shared/contract/prober';
import { evidenceBytes } from '@rcpt/shared/verify/evidence';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type MailWorld, startWorld } from '../../../test/world/index.ts';
import { MxThrottle } from '../throttle/mx-throttle.ts';
import { type ProbeDeps, probe } from './probe.ts';

let world: MailWorld;
beforeAll(async () => {
  world = await startWorld({ greylistDelayMs: 200 });
});
afterAll(async () => {
  await world?.close();
});

const MAIL_FROM = 'verify@rcpt.test';
const CATCH_ALL_LOCAL_PART = 'madeup7q2w9e4r1t8y5u';

function deps(overrides: Partial<ProbeDeps> = {}): ProbeDeps {
  return {
    smtpPort: world.smtpPort,
    allowPrivateTargets: true,
    requireTls: false,
    timeouts: { connectMs: 2_000, bannerMs: 2_000, commandMs: 2_000 },
    throttle: new MxThrottle(),
    randomLocalPart: () => CATCH_ALL_LOCAL_PART,
    region: 'eu',
    ...overrides,
  };
}

function request(behaviour: string, localParts: readonly string[]): ProbeRequest {
  const domain = world.domains[behaviour] ?? `${behaviour}.test`;
  const server = world.mx[behaviour];
  if (!server) throw new Error(`the world has no ${behaviour} server`);
  return {
    emails: localParts.map((localPart) => `${localPart}@${domain}`),
    domain,
    mx: [{ host: `mx.${domain}`, preference: 10, ips: [server.ip] }],
    mailFrom: MAIL_FROM,
    helo: 'prober.rcpt.test',
    timeoutMs: 8_000,
    transcript: false,
    evidence: true,
  };
}

describe('evidence from a shared session', () => {
  test('each address sees its own RCPT and reply, the session facts, and every other address masked', async () => {
    const report = await probe(request('starttls', ['alice', 'nobody', 'bob']), deps());
    const [alice, nobody, bob] = report.perAddress;
    const evidence = nobody?.evidence;
    expect(evidence).toBeDefined();
    if (!evidence) return;
    expect(evidence.mxHost).toBe(`mx.${world.domains.starttls}`);
    expect(evidence.mxIp).toBe(world.mx.starttls?.ip);
    expect(evidence.egress).toMatch(/^127\./);
    expect(evidence.region).toBe('eu');
    expect(evidence.tls).toEqual({
      version: expect.stringMatching(/^TLSv1\.[23]$/),
      cipher: expect.any(String),
      certificateVerified: false,
    });
    expect(evidence.ended).toBeNull();
    expect(Date.parse(evidence.startedAt)).toBeLessThanOrEqual(Date.now());
    const domain = world.domains.starttls;
    const commands = evidence.dialogue.map((step) => step.command);
    expect(commands).toEqual([
      null,
      'EHLO prober.rcpt.test',
      'STARTTLS',
      'EHLO prober.rcpt.test',
      'MAIL FROM:<***@rcpt.test>',
      `RCPT TO:<***@${domain}>`, // alice, who was asked first
      `RCPT TO:<nobody@${domain}>`,
      `RCPT TO:<***@${domain}>`, // bob
      'RSET',
      'MAIL FROM:<***@rcpt.test>',
      `RCPT TO:<***@${domain}>`, // the catch-all test
      'QUIT',
    ]);
    const own = evidence.dialogue[6];
    expect(own?.reply).toEqual({
      code: 550,
      enhanced: '5.1.1',
      text: `<nobody@${domain}>: Recipient address rejected: User unknown in local recipient table`,
    });
    expect(evidence.dialogue[10]?.reply?.text).toBe(
      `<***@${domain}>: Recipient address rejected: User unknown in local recipient table`,
    );
    for (const step of evidence.dialogue) {
      expect(step.atMs).toBeGreaterThanOrEqual(0);
      if (step.reply) expect(step.tookMs).toBeGreaterThanOrEqual(0);
    }
    expect(alice?.evidence?.dialogue[5]?.command).toBe(`RCPT TO:<alice@${domain}>`);
    expect(bob?.evidence?.dialogue[7]?.command).toBe(`RCPT TO:<bob@${domain}>`);
  });

  test('no evidence unless the probe asks for it', async () => {
    const report = await probe({ ...request('accept', ['alice']), evidence: false }, deps());
    expect(report.perAddress[0]?.evidence).toBeUndefined();
  });

  test('an address no session could ask carries the session that failed', async () => {
    const refused = {
      ...request('accept', ['alice']),
      mx: [{ host: 'mx.closed.test', preference: 10, ips: ['127.0.0.1'] }],
    };
    const report = await probe(refused, deps({ smtpPort: 1 }));
    const evidence = report.perAddress[0]?.evidence;
    expect(evidence?.dialogue).toEqual([]);
    expect(evidence?.ended).toMatch(/^connection_failed at connect: ECONNREFUSED/);
  });

  test('fuzzed: in sessions shared by many customers, no address but its own appears unmasked', async () => {
    const localPart = fc.stringMatching(/^[a-z][a-z0-9]{9,14}$/);
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(localPart, { minLength: 2, maxLength: 25 }),
        fc.boolean(),
        async (parts, anyUser) => {
          // `user…` mailboxes exist: a catch-all test follows, and replies differ in kind.
          const localParts = anyUser ? parts.map((part, index) => (index % 2 ? `user${part}` : part)) : parts;
          const names = [...localParts, 'verify', CATCH_ALL_LOCAL_PART];
          fc.pre(
            names.every((name, index) => names.every((other, at) => at === index || !other.includes(name))),
          );
          const report = await probe(request('starttls', localParts), deps());
          const everyone = [...report.perAddress.map((outcome) => outcome.email), MAIL_FROM];
          for (const outcome of report.perAddress) {
            const evidence = outcome.evidence;
            expect(evidence).toBeDefined();
            if (!evidence) continue;
            const shown = JSON.stringify(evidence).toLowerCase();
            expect(shown).toContain(`rcpt to:<${outcome.email.toLowerCase()}>`);
            for (const other of everyone) {
              if (other === outcome.email) continue;
              expect(shown).not.toContain(other.slice(0, other.indexOf('@')).toLowerCase());
            }
            expect(shown).not.toContain(CATCH_ALL_LOCAL_PART);
            expect(evidenceBytes(evidence)).toBeLessThanOrEqual(MAX_EVIDENCE_BYTES);
          }
        },
      ),
      { numRuns: 15 },
    );
  });
});

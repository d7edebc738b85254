import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Evidence, MAX_EVIDENCE_BYTES, type SmtpReply } from '../contract/prober.ts';
import {
  type DialogueStep,
  evidenceBytes,
  evidenceFor,
  ownReplyOf,
  type SessionDialogue,
  sealEvidence,
} from './evidence.ts';
import { checkSyntax } from './syntax.ts';
import { verdictFromFacts } from './verdict.ts';

const MAIL_FROM = 'verify@rcpt.example';

function reply(code: number, text: string, enhanced: string | null = null): SmtpReply {
  return { code, enhanced, text };
}

function dialogueOf(steps: DialogueStep[], overrides: Partial<SessionDialogue> = {}): SessionDialogue {
  return {
    mxHost: 'mx.example.com',
    mxIp: '192.0.2.25',
    egress: '198.51.100.7',
    region: 'eu',
    tls: { version: 'TLSv1.3', cipher: 'TLS_AES_256_GCM_SHA384', certificateVerified: false },
    startedAt: Date.UTC(2026, 10, 26, 12, 0, 0),
    durationMs: 412.6,
    steps,
    ended: null,
    ...overrides,
  };
}

function opening(): DialogueStep[] {
  return [
    { atMs: 0, command: null, reply: reply(220, 'mx.example.com ESMTP Postfix'), tookMs: 3 },
    {
      atMs: 3,
      command: 'EHLO probe.rcpt.example',
      reply: reply(250, 'mx.example.com\nPIPELINING\nSTARTTLS'),
      tookMs: 1,
    },
    {
      atMs: 5,
      command: `MAIL FROM:<${MAIL_FROM}>`,
      path: MAIL_FROM,
      reply: reply(250, `Sender <${MAIL_FROM}> ok, verify`, '2.1.0'),
      tookMs: 1,
    },
  ];
}

function rcpt(path: string, answer: SmtpReply, atMs = 7): DialogueStep {
  return { atMs, command: `RCPT TO:<${path}>`, path, reply: answer, tookMs: 2 };
}

describe('evidenceFor', () => {
  it("shows the address's own RCPT in clear and masks MAIL FROM, the catch-all test and other recipients", () => {
    const catchAll = 'x7k2m9q4w1z8r5t3y6u0@example.com';
    const steps = [
      ...opening(),
      rcpt(catchAll, reply(550, `<${catchAll}>: Recipient address rejected: User unknown`, '5.1.1')),
      rcpt('alice@example.com', reply(250, 'Ok', '2.1.5')),
      rcpt('bob.smith@example.com', reply(550, 'bob.smith... User unknown', '5.1.1')),
    ];
    const evidence = evidenceFor(dialogueOf(steps), 'alice@example.com', new Set([catchAll]));
    expect(Evidence.parse(evidence)).toEqual(evidence);
    expect(evidence.dialogue.map((step) => step.command)).toEqual([
      null,
      'EHLO probe.rcpt.example',
      'MAIL FROM:<***@rcpt.example>',
      'RCPT TO:<***@example.com>',
      'RCPT TO:<alice@example.com>',
      'RCPT TO:<***@example.com>',
    ]);
    expect(evidence.dialogue[2]?.reply?.text).toBe('Sender <***@rcpt.example> ok, ***');
    expect(evidence.dialogue[3]?.reply?.text).toBe(
      '<***@example.com>: Recipient address rejected: User unknown',
    );
    expect(evidence.dialogue[5]?.reply?.text).toBe('***... User unknown');
    expect(evidence.startedAt).toBe('2026-11-26T12:00:00.000Z');
    expect(evidence.durationMs).toBe(413);
    expect(evidence.omittedSteps).toBe(0);
    expect(ownReplyOf(evidence, 'alice@example.com')).toEqual(reply(250, 'Ok', '2.1.5'));
  });

  it('masks addresses a server names that nobody sent, and keeps its own wherever it is echoed', () => {
    const steps = [
      ...opening(),
      rcpt(
        'Alice@example.com',
        reply(550, 'alice@EXAMPLE.com moved; write to carol@example.net or postmaster@example.com.', '5.1.6'),
      ),
    ];
    const [, , , own] = evidenceFor(dialogueOf(steps), 'Alice@example.com').dialogue;
    expect(own?.reply?.text).toBe('alice@EXAMPLE.com moved; write to ***@example.net or ***@example.com.');
  });

  it('keeps the reason the session ended, masked, and replaces control characters', () => {
    const steps = [...opening(), rcpt('alice@example.com', reply(250, 'Ok\u0000\u001b[31m'))];
    const evidence = evidenceFor(
      dialogueOf(steps, { ended: `disconnected at rcpt: after <bob@example.com>`, tls: null }),
      'alice@example.com',
    );
    expect(evidence.ended).toBe('disconnected at rcpt: after <***@example.com>');
    expect(evidence.dialogue[3]?.reply?.text).toBe('Ok\uFFFD\uFFFD[31m');
    expect(evidence.tls).toBeNull();
  });

  it("drops other recipients' steps first, farthest first, when a long session is over the bound", () => {
    const others = Array.from({ length: 60 }, (_, index) => `someone.${index}@example.com`);
    const steps = [
      ...opening(),
      ...others
        .slice(0, 30)
        .map((path, index) => rcpt(path, reply(550, `<${path}>: User unknown`, '5.1.1'), 10 + index)),
      rcpt('alice@example.com', reply(250, 'Ok', '2.1.5'), 40),
      ...others
        .slice(30)
        .map((path, index) => rcpt(path, reply(550, `<${path}>: User unknown`, '5.1.1'), 41 + index)),
    ];
    const evidence = evidenceFor(dialogueOf(steps), 'alice@example.com');
    expect(evidenceBytes(evidence)).toBeLessThanOrEqual(MAX_EVIDENCE_BYTES);
    expect(evidence.omittedSteps).toBeGreaterThan(0);
    expect(evidence.dialogue.length + evidence.omittedSteps).toBe(steps.length);
    const commands = evidence.dialogue.map((step) => step.command);
    expect(commands.slice(0, 3)).toEqual([null, 'EHLO probe.rcpt.example', 'MAIL FROM:<***@rcpt.example>']);
    const own = commands.indexOf('RCPT TO:<alice@example.com>');
    expect(own).toBeGreaterThan(2);
    // The recipients kept are the ones next to the address's own RCPT.
    const kept = evidence.dialogue.slice(3).map((step) => step.atMs);
    expect(Math.max(...kept) - Math.min(...kept)).toBeLessThan(steps.length);
    expect(kept).toContain(39);
    expect(kept).toContain(41);
  });
});

describe('evidence of a shared session (fuzzed)', () => {
  // Local parts long and varied enough that none is part of another or of the fixed texts.
  const localPart = fc.stringMatching(/^[a-z0-9][a-z0-9._+-]{7,14}[a-z0-9]$/);
  const echo = fc.constantFrom(
    (path: string) => `<${path}>: Recipient address rejected: User unknown in virtual mailbox table`,
    (path: string) => `${path}... User unknown`,
    (path: string) => `Recipient ${path.toUpperCase()} not found by SMTP address lookup`,
    (path: string) => `${path.slice(0, path.lastIndexOf('@'))}: no such user here`,
    (path: string) => `Ok, <${path.slice(0, path.lastIndexOf('@'))}> will do`,
    () => 'Ok',
  );
  const session = fc
    .record({
      owners: fc.uniqueArray(localPart, { minLength: 2, maxLength: 30 }),
      catchAll: localPart,
      echoes: fc.array(echo, { minLength: 31, maxLength: 31 }),
      order: fc.array(fc.nat(), { minLength: 31, maxLength: 31 }),
      codes: fc.array(fc.constantFrom(250, 450, 550, 552), { minLength: 31, maxLength: 31 }),
    })
    .filter(({ owners, catchAll }) => {
      const parts = [...owners, catchAll, 'verify'];
      return (
        new Set(parts).size === parts.length &&
        parts.every((part, index) =>
          parts.every((other, otherIndex) => index === otherIndex || !other.includes(part)),
        ) &&
        [...owners, catchAll].every(
          (part) => !/(recipient|address|rejected|mailbox|example|postfix|verify)/.test(part),
        )
      );
    });

  it('never shows an address but its own, in any reply style, and stays within its bound', () => {
    fc.assert(
      fc.property(session, ({ owners, catchAll, echoes, order, codes }) => {
        // Several customers' addresses (and the catch-all test's) in one session, in any order.
        const paths = [...owners.map((part) => `${part}@example.com`), `${catchAll}@example.com`];
        const asked = paths
          .map((path, index) => ({ path, key: order[index] ?? 0 }))
          .sort((a, b) => a.key - b.key)
          .map(({ path }) => path);
        const steps = [
          ...opening(),
          ...asked.map((path, index) =>
            rcpt(path, reply(codes[index] ?? 250, (echoes[index] ?? (() => 'Ok'))(path)), 10 + index),
          ),
        ];
        const dialogue = dialogueOf(steps, { ended: `cut after ${asked.at(-1)}` });
        for (const own of paths.slice(0, -1)) {
          const evidence = evidenceFor(dialogue, own, new Set([`${catchAll}@example.com`]));
          const shown = JSON.stringify(evidence).toLowerCase();
          for (const other of [...paths, MAIL_FROM]) {
            if (other === own) continue;
            const otherLocal = other.slice(0, other.lastIndexOf('@')).toLowerCase();
            expect(shown).not.toContain(otherLocal);
          }
          expect(evidence.dialogue.some((step) => step.command === `RCPT TO:<${own}>`)).toBe(true);
          expect(evidenceBytes(evidence)).toBeLessThanOrEqual(MAX_EVIDENCE_BYTES);
          // What the edge seals is what the prober built: masking twice changes nothing.
          expect(sealEvidence(evidence, own)).toEqual(evidence);
        }
      }),
      { numRuns: 200 },
    );
  });

  // 100 sessions of up to 80 steps of 3,000 bytes: about 2 s alone, and far more on a loaded runner.
  it('stays within MAX_EVIDENCE_BYTES whatever the texts are', { timeout: 60_000 }, () => {
    const text = fc.string({ unit: 'binary', maxLength: 3_000 });
    fc.assert(
      fc.property(
        fc.array(fc.record({ command: text, reply: text }), { maxLength: 80 }),
        text,
        fc.string({ unit: 'binary', maxLength: 400 }),
        (raw, ended, own) => {
          const steps: DialogueStep[] = raw.map((step, index) => ({
            atMs: index,
            command: step.command,
            path: index % 2 === 0 ? own : `${step.command}@x`,
            reply: reply(250, step.reply),
            tookMs: 1,
          }));
          const evidence = evidenceFor(
            dialogueOf(steps, { ended, mxHost: own, egress: ended.slice(0, 128) }),
            own,
          );
          expect(evidenceBytes(evidence)).toBeLessThanOrEqual(MAX_EVIDENCE_BYTES);
          expect(evidenceBytes(sealEvidence(evidence, own))).toBeLessThanOrEqual(MAX_EVIDENCE_BYTES);
        },
      ),
      { numRuns: 100 },
    );
  });
});

describe('sealEvidence', () => {
  it('masks what a prober left in clear and cuts what it sent over the bound', () => {
    const evidence = evidenceFor(
      dialogueOf([...opening(), rcpt('alice@example.com', reply(250, 'Ok'))]),
      'alice@example.com',
    );
    const leaky = {
      ...evidence,
      dialogue: [
        ...evidence.dialogue,
        ...Array.from({ length: 50 }, (_, index) => ({
          atMs: 20 + index,
          command: `RCPT TO:<leak${index}@example.com>`,
          reply: reply(250, `<leak${index}@example.com> ok ${'x'.repeat(300)}`),
          tookMs: 1,
        })),
      ],
    };
    const sealed = sealEvidence(leaky, 'alice@example.com');
    expect(JSON.stringify(sealed)).not.toMatch(/leak\d/);
    expect(evidenceBytes(sealed)).toBeLessThanOrEqual(MAX_EVIDENCE_BYTES);
    expect(sealed.dialogue.some((step) => step.command === 'RCPT TO:<alice@example.com>')).toBe(true);
  });
});

describe('the evidence in a verdict', () => {
  const mx = [{ host: 'mx.example.com', preference: 10, ips: ['192.0.2.25'] }];
  const session = {
    mxHost: 'mx.example.com',
    mxIp: '192.0.2.25',
    tls: false,
    tlsError: null,
    smtputf8: false,
    durationMs: 5,
  };
  function reportFor(email: string, answer: SmtpReply, catchAll: SmtpReply | null, host = 'mx.example.com') {
    const evidence = evidenceFor(
      dialogueOf([...opening(), rcpt(email, answer), rcpt('someone.else@example.com', answer)], {
        mxHost: host,
      }),
      email,
    );
    return {
      kind: 'report' as const,
      report: {
        perAddress: [{ email, reply: answer, failure: null, evidence }],
        catchAllReply: catchAll,
        session: { ...session, mxHost: host },
      },
    };
  }

  it("is the deciding session's, for the result's own address", () => {
    const { result } = verdictFromFacts({
      address: checkSyntax('Alice@Example.com'),
      dns: { kind: 'mx', dnsType: 'MX', mx },
      probe: reportFor('Alice@example.com', reply(250, 'Ok', '2.1.5'), reply(550, 'no', '5.1.1')),
      verifiedAt: '2026-11-26T12:00:00.000Z',
      processingTimeMs: 5,
    });
    expect(result.status).toBe('deliverable');
    expect(result.evidence?.dialogue.map((step) => step.command)).toContain('RCPT TO:<Alice@example.com>');
    expect(JSON.stringify(result.evidence)).not.toContain('someone.else');
  });

  it("is the tenant's when the tenant answered in a catch-all gateway's place", () => {
    const { result } = verdictFromFacts({
      address: checkSyntax('alice@example.com'),
      dns: {
        kind: 'mx',
        dnsType: 'MX',
        mx: [{ host: 'mx1.example.pphosted.com', preference: 10, ips: ['192.0.2.26'] }],
      },
      probe: reportFor('alice@example.com', reply(250, 'Ok'), reply(250, 'Ok'), 'mx1.example.pphosted.com'),
      tenant: {
        provider: 'microsoft',
        inboundHost: 'example-com.mail.protection.outlook.com',
        probe: reportFor(
          'alice@example.com',
          reply(250, 'Recipient OK', '2.1.5'),
          reply(550, 'Recipient not found', '5.4.1'),
          'example-com.mail.protection.outlook.com',
        ),
      },
      verifiedAt: '2026-11-26T12:00:00.000Z',
      processingTimeMs: 5,
    });
    expect(result.meta.verifiedVia).toBe('tenant');
    expect(result.evidence?.mxHost).toBe('example-com.mail.protection.outlook.com');
  });

  it('is absent when the probe carried none', () => {
    const { result } = verdictFromFacts({
      address: checkSyntax('alice@example.com'),
      dns: { kind: 'mx', dnsType: 'MX', mx },
      probe: { kind: 'unavailable', message: 'no prober' },
      verifiedAt: '2026-11-26T12:00:00.000Z',
      processingTimeMs: 5,
    });
    expect(result.evidence).toBeUndefined();
  });
});

// The verification core on one core: addresses per second through syntax + lists + typo +
// verdict (target ≥ 200,000/s), and the heap the lists take once loaded (target ≤ 30 MB).
import type { ProbeReport } from '@rcpt/shared/contract/prober';
import type { DnsOutcome } from '@rcpt/shared/verify/inputs';
import type { Figure } from './run.ts';

const gc = (globalThis as { gc?: () => void }).gc;
gc?.();
const heapBefore = process.memoryUsage().heapUsed;
const { checkSyntax } = await import('@rcpt/shared/verify/syntax');
const { verdictFromFacts } = await import('@rcpt/shared/verify/verdict');
const { lookupLists } = await import('@rcpt/shared/verify/lists');
const { providerFamilyOf } = await import('@rcpt/shared/verify/providers');
const { suggestTypo } = await import('@rcpt/shared/verify/typo');
// Touch every list once so lazily built structures are counted.
lookupLists('info', 'mailinator.com');
providerFamilyOf('mailinator.com', ['aspmx.l.google.com']);
suggestTypo('gmial.com');
gc?.();
const listsHeapMb = (process.memoryUsage().heapUsed - heapBefore) / 1024 / 1024;

const SAMPLES = [
  'alice@example.com',
  'Bob.Smith+news@Company.co.uk',
  'info@startup.io',
  'someone@gmial.com',
  'user@mailinator.com',
  'x@yahoo.com',
  'not-an-address',
  '"quoted local"@example.org',
  'jürgen@bücher.test',
  'support@sub.domain.example.net',
  'a.b.c.d@hotmial.com',
  'noreply@service.example',
  'very.long.local.part.with.many.dots@some-really-long-domain-name.example',
  'trailing.dot.@example.com',
  'user@[192.0.2.1]',
];
const emails = Array.from({ length: 10_000 }, (_, index) => {
  const sample = SAMPLES[index % SAMPLES.length] ?? 'alice@example.com';
  return index < SAMPLES.length ? sample : sample.replace('@', `${index}@`);
});

function accepted(email: string): ProbeReport {
  return {
    perAddress: [{ email, reply: { code: 250, enhanced: '2.1.5', text: 'OK' }, failure: null }],
    catchAllReply: { code: 550, enhanced: '5.1.1', text: 'User unknown' },
    session: {
      mxHost: 'mx.example.com',
      mxIp: '192.0.2.25',
      tls: true,
      tlsError: null,
      smtputf8: false,
      durationMs: 40,
    },
  };
}

const route: DnsOutcome = {
  kind: 'mx',
  dnsType: 'MX',
  mx: [{ host: 'mx.example.com', preference: 10, ips: ['192.0.2.25'] }],
};

/** What the edge does for an address once DNS and SMTP have answered (the probe: accepted). */
function verifyLocally(email: string): number {
  const syntax = checkSyntax(email);
  return verdictFromFacts({
    address: syntax,
    dns: syntax.valid ? route : null,
    probe: syntax.valid ? { kind: 'report', report: accepted(syntax.email) } : { kind: 'skipped' },
    verifiedAt: '2026-01-01T00:00:00.000Z',
    processingTimeMs: 1,
  }).result.score;
}

let checksum = 0;
for (const email of emails) checksum += verifyLocally(email); // warm-up
const started = performance.now();
let verified = 0;
while (performance.now() - started < 2_000) {
  for (const email of emails) checksum += verifyLocally(email);
  verified += emails.length;
}
const seconds = (performance.now() - started) / 1000;
if (checksum === 0) throw new Error('the verdicts scored nothing');

// The evidence behind each answer (docs/verdicts.md, "Evidence"): a session of 50 recipients,
// each refused with its address echoed (Postfix), seen from each of its addresses — what the
// prober masks and bounds per address, and what the edge seals again before storing it.
const { sessionEvidence, sealEvidence } = await import('@rcpt/shared/verify/evidence');
const recipients = Array.from({ length: 50 }, (_, index) => `person.${index}@example.com`);
const reply = (code: number, enhanced: string | null, text: string) => ({ code, enhanced, text });
const session = {
  mxHost: 'mx.example.com',
  mxIp: '192.0.2.25',
  egress: '198.51.100.7',
  region: 'eu',
  tls: { version: 'TLSv1.3', cipher: 'TLS_AES_256_GCM_SHA384', certificateVerified: true },
  startedAt: Date.UTC(2026, 0, 1),
  durationMs: 900,
  ended: null,
  steps: [
    { atMs: 0, command: null, reply: reply(220, null, 'mx.example.com ESMTP Postfix'), tookMs: 30 },
    {
      atMs: 30,
      command: 'EHLO verify.rcpt.dev',
      reply: reply(
        250,
        null,
        'mx.example.com\nPIPELINING\nSIZE 10240000\nSTARTTLS\nENHANCEDSTATUSCODES\n8BITMIME',
      ),
      tookMs: 30,
    },
    {
      atMs: 60,
      command: 'MAIL FROM:<probe@verify.rcpt.dev>',
      path: 'probe@verify.rcpt.dev',
      reply: reply(250, '2.1.0', 'Ok'),
      tookMs: 30,
    },
    ...recipients.map((path, index) => ({
      atMs: 60 + index,
      command: `RCPT TO:<${path}>`,
      path,
      reply: reply(
        550,
        '5.1.1',
        `<${path}>: Recipient address rejected: User unknown in local recipient table`,
      ),
      tookMs: 30,
    })),
  ],
};
let evidenceBuilt = 0;
const evidenceStarted = performance.now();
const kept = [];
while (performance.now() - evidenceStarted < 1_000) {
  const view = sessionEvidence(session);
  for (const path of recipients) kept.push(view(path));
  evidenceBuilt += recipients.length;
  if (kept.length > 1_000) kept.length = 0;
}
const evidenceSeconds = (performance.now() - evidenceStarted) / 1000;
const toSeal = recipients.map((path) => sessionEvidence(session)(path));
let sealed = 0;
const sealStarted = performance.now();
while (performance.now() - sealStarted < 1_000) {
  for (const [index, evidence] of toSeal.entries())
    if (sealEvidence(evidence, recipients[index] ?? '')) sealed++;
}
const sealSeconds = (performance.now() - sealStarted) / 1000;

const figures: Figure[] = [
  {
    name: 'addresses/s (syntax+lists+typo+verdict, 1 core)',
    value: verified / seconds,
    unit: '/s',
    target: '≥ 200,000',
  },
  { name: 'lists heap', value: listsHeapMb, unit: 'MB', target: '≤ 30' },
  { name: 'evidence built/s (prober, 50-RCPT sessions)', value: evidenceBuilt / evidenceSeconds, unit: '/s' },
  { name: 'evidence sealed/s (edge, 50-RCPT sessions)', value: sealed / sealSeconds, unit: '/s' },
];
console.log(JSON.stringify(figures));

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  SUB_STATUSES,
  type SubStatus,
  storedVerificationResult,
  type TypoSuggestion,
  VerificationResult,
} from '../contract/api.ts';
import {
  type AddressOutcome,
  type ProbeReport,
  SESSION_FAILURE_KINDS,
  type SessionFailure,
  type SmtpReply,
} from '../contract/prober.ts';
import { SUB_STATUS_TABLE } from '../contract/sub-statuses.ts';
import { assessAddress } from './assess.ts';
import type { DnsOutcome, ListFacts, ProbeOutcome, SyntaxResult } from './inputs.ts';
import { SCORE_BANDS } from './score.ts';
import { POLICY_WORDS } from './smtp-reply.ts';
import {
  catchAllState,
  computeVerdict,
  decideVerdict,
  failureSubStatus,
  RISK_FACTORS,
  toxicityOf,
  type VerdictInput,
} from './verdict.ts';

const VERIFIED_AT = '2025-03-04T05:06:07.089Z';
const CLEAN: ListFacts = { isDisposable: false, isRoleBased: false, isFreeProvider: false, provider: null };
const MX: DnsOutcome = {
  kind: 'mx',
  dnsType: 'MX',
  mx: [
    { host: 'mx1.example.com', preference: 10, ips: ['192.0.2.1'] },
    { host: 'mx2.example.com', preference: 20, ips: ['192.0.2.2'] },
  ],
};

const ACCEPTED: SmtpReply = { code: 250, enhanced: '2.1.5', text: 'OK' };
const USER_UNKNOWN: SmtpReply = {
  code: 550,
  enhanced: '5.1.1',
  text: 'User unknown in local recipient table',
};
const DISABLED: SmtpReply = {
  code: 550,
  enhanced: '5.2.1',
  text: 'The email account that you tried to reach is disabled',
};
const FULL: SmtpReply = { code: 552, enhanced: '5.2.2', text: 'Mailbox full' };
const GREYLISTED: SmtpReply = {
  code: 450,
  enhanced: '4.2.0',
  text: 'Recipient address rejected: Greylisted',
};
const SPAMHAUS: SmtpReply = {
  code: 550,
  enhanced: null,
  text: 'Rejected: 203.0.113.7 is listed at zen.spamhaus.org, user unknown',
};
const POLICY: SmtpReply = { code: 554, enhanced: '5.7.1', text: 'Service unavailable; Client host blocked' };

function validSyntax(
  email: string,
  extra: Partial<{ quotedLocalPart: boolean; ipLiteral: boolean; needsSmtpUtf8: boolean }> = {},
): SyntaxResult {
  const at = email.lastIndexOf('@');
  return {
    valid: true,
    email,
    localPart: email.slice(0, at),
    domain: email.slice(at + 1),
    quotedLocalPart: false,
    ipLiteral: false,
    needsSmtpUtf8: false,
    ...extra,
  };
}

function report(
  outcomes: AddressOutcome[],
  catchAllReply: SmtpReply | null = null,
  mxHost: string | null = 'mx1.example.com',
): ProbeOutcome {
  return {
    kind: 'report',
    report: {
      perAddress: outcomes,
      catchAllReply,
      session: { mxHost, mxIp: '192.0.2.1', tls: true, tlsError: null, smtputf8: false, durationMs: 120 },
    },
  };
}

/** A probe whose only address got `reply` (or `failure`), with an optional catch-all test. */
function rcpt(
  email: string,
  reply: SmtpReply | null,
  catchAll: SmtpReply | null = null,
  failure: SessionFailure | null = null,
) {
  return report([{ email, reply, failure }], catchAll);
}

function verdictInput(email: string, overrides: Partial<VerdictInput> = {}): VerdictInput {
  return {
    email,
    syntax: validSyntax(email),
    lists: CLEAN,
    typo: null,
    dns: MX,
    probe: { kind: 'unavailable', message: 'SMTP probing is disabled' },
    verifiedAt: VERIFIED_AT,
    processingTimeMs: 42,
    ...overrides,
  };
}

const ROLE: ListFacts = { ...CLEAN, isRoleBased: true };
const DISPOSABLE: ListFacts = { ...CLEAN, isDisposable: true, provider: 'mailinator' };
const FREE: ListFacts = { ...CLEAN, isFreeProvider: true, provider: 'gmail' };
const TYPO: TypoSuggestion = { original: 'gmial.com', suggested: 'gmail.com', confidence: 0.92 };
const REJECTED_AT_BANNER: SessionFailure = {
  kind: 'rejected',
  stage: 'banner',
  reply: { code: 554, enhanced: null, text: 'No SMTP service here' },
  message: 'banner refused',
};

interface Expected {
  status: VerificationResult['status'];
  subStatus: SubStatus;
  isDeliverable?: boolean;
  smtpValid?: boolean | null;
  isCatchAll?: boolean | null;
  retryAfterSeconds?: number;
  riskFactors?: string[];
}

const RULES: [string, VerdictInput, Expected][] = [
  [
    'invalid syntax is undeliverable',
    verdictInput('not an address', {
      syntax: { valid: false, email: 'not an address', localPart: '', domain: '', reason: 'no @' },
      dns: null,
      probe: { kind: 'skipped' },
    }),
    { status: 'undeliverable', subStatus: 'invalid_syntax', isDeliverable: false, smtpValid: null },
  ],
  [
    'an IP literal is valid but not verifiable',
    verdictInput('alice@[192.0.2.1]', {
      syntax: validSyntax('alice@[192.0.2.1]', { ipLiteral: true }),
      dns: null,
      probe: { kind: 'skipped' },
    }),
    {
      status: 'unknown',
      subStatus: 'provider_unverifiable',
      smtpValid: null,
      riskFactors: [RISK_FACTORS.ipLiteral],
    },
  ],
  [
    'a typo domain that does not exist is undeliverable / possible_typo',
    verdictInput('alice@gmial.com', { dns: { kind: 'nxdomain' }, typo: TYPO, probe: { kind: 'skipped' } }),
    { status: 'undeliverable', subStatus: 'possible_typo', riskFactors: [RISK_FACTORS.typo('gmail.com')] },
  ],
  [
    'a domain that does not exist',
    verdictInput('alice@no-such-domain.example', { dns: { kind: 'nxdomain' }, probe: { kind: 'skipped' } }),
    { status: 'undeliverable', subStatus: 'invalid_domain' },
  ],
  [
    'no MX and no A/AAAA',
    verdictInput('alice@example.com', { dns: { kind: 'no_mail_route' }, probe: { kind: 'skipped' } }),
    { status: 'undeliverable', subStatus: 'no_mx_record' },
  ],
  [
    'null MX (RFC 7505)',
    verdictInput('alice@example.com', { dns: { kind: 'null_mx' }, probe: { kind: 'skipped' } }),
    { status: 'undeliverable', subStatus: 'does_not_accept_mail' },
  ],
  [
    'MX on private addresses',
    verdictInput('alice@example.com', {
      dns: {
        kind: 'unroutable',
        mx: [{ host: 'mx.internal.example.com', preference: 0, ips: ['10.0.0.1'] }],
      },
      probe: { kind: 'skipped' },
    }),
    { status: 'undeliverable', subStatus: 'unroutable_ip_address' },
  ],
  [
    'a DNS failure',
    verdictInput('alice@example.com', {
      dns: { kind: 'error', message: 'SERVFAIL' },
      probe: { kind: 'skipped' },
    }),
    { status: 'unknown', subStatus: 'dns_error' },
  ],
  [
    'a DNS failure on a disposable domain stays unknown: reachability is not known',
    verdictInput('alice@mailinator.com', { dns: { kind: 'error', message: 'timeout' }, lists: DISPOSABLE }),
    { status: 'unknown', subStatus: 'dns_error', riskFactors: [RISK_FACTORS.disposable] },
  ],
  [
    'a verifiable address without DNS is a pipeline fault',
    verdictInput('alice@example.com', { dns: null }),
    { status: 'unknown', subStatus: 'internal_error' },
  ],
  [
    'no prober',
    verdictInput('alice@example.com'),
    {
      status: 'unknown',
      subStatus: 'smtp_unavailable',
      smtpValid: null,
      isCatchAll: null,
      isDeliverable: false,
    },
  ],
  [
    'no prober, disposable domain: the list decides',
    verdictInput('alice@mailinator.com', { lists: DISPOSABLE }),
    { status: 'risky', subStatus: 'disposable', smtpValid: null },
  ],
  [
    'no prober, typo domain that exists: the suggestion decides',
    verdictInput('alice@gmial.com', { typo: TYPO }),
    { status: 'risky', subStatus: 'possible_typo' },
  ],
  [
    'no prober, role address: a role needs an accepting mailbox',
    verdictInput('info@example.com', { lists: ROLE }),
    { status: 'unknown', subStatus: 'smtp_unavailable', riskFactors: [RISK_FACTORS.roleBased] },
  ],
  [
    'probe skipped although DNS gave a route',
    verdictInput('alice@example.com', { probe: { kind: 'skipped' } }),
    { status: 'unknown', subStatus: 'smtp_unavailable' },
  ],
  [
    'probe timed out',
    verdictInput('alice@example.com', { probe: { kind: 'timeout' } }),
    { status: 'unknown', subStatus: 'smtp_timeout' },
  ],
  [
    'accepted on a catch-all domain',
    verdictInput('alice@example.com', { probe: rcpt('alice@example.com', ACCEPTED, ACCEPTED) }),
    {
      status: 'risky',
      subStatus: 'catch_all',
      isCatchAll: true,
      isDeliverable: false,
      smtpValid: true,
      riskFactors: [RISK_FACTORS.catchAll],
    },
  ],
  [
    'accepted, random address rejected',
    verdictInput('alice@example.com', { probe: rcpt('alice@example.com', ACCEPTED, USER_UNKNOWN) }),
    {
      status: 'deliverable',
      subStatus: 'accepted_email',
      isCatchAll: false,
      isDeliverable: true,
      smtpValid: true,
      riskFactors: [],
    },
  ],
  [
    'accepted, catch-all not tested',
    verdictInput('alice@example.com', { probe: rcpt('alice@example.com', ACCEPTED) }),
    { status: 'deliverable', subStatus: 'accepted_email', isCatchAll: null, isDeliverable: true },
  ],
  [
    'accepted, random address greylisted: catch-all unknown',
    verdictInput('alice@example.com', { probe: rcpt('alice@example.com', ACCEPTED, GREYLISTED) }),
    { status: 'deliverable', subStatus: 'accepted_email', isCatchAll: null, isDeliverable: true },
  ],
  [
    'accepted, disposable',
    verdictInput('alice@mailinator.com', {
      lists: DISPOSABLE,
      probe: rcpt('alice@mailinator.com', ACCEPTED, USER_UNKNOWN),
    }),
    {
      status: 'risky',
      subStatus: 'disposable',
      isDeliverable: false,
      smtpValid: true,
      riskFactors: [RISK_FACTORS.disposable],
    },
  ],
  [
    'accepted, role-based: risky but deliverable',
    verdictInput('info@example.com', {
      lists: ROLE,
      probe: rcpt('info@example.com', ACCEPTED, USER_UNKNOWN),
    }),
    {
      status: 'risky',
      subStatus: 'role_based',
      isDeliverable: true,
      smtpValid: true,
      riskFactors: [RISK_FACTORS.roleBased],
    },
  ],
  [
    'accepted, typo domain that exists',
    verdictInput('alice@gmial.com', { typo: TYPO, probe: rcpt('alice@gmial.com', ACCEPTED, USER_UNKNOWN) }),
    { status: 'risky', subStatus: 'possible_typo', isDeliverable: false },
  ],
  [
    'accepted, free provider stays deliverable',
    verdictInput('alice@gmail.com', { lists: FREE, probe: rcpt('alice@gmail.com', ACCEPTED, USER_UNKNOWN) }),
    {
      status: 'deliverable',
      subStatus: 'accepted_email',
      isDeliverable: true,
      riskFactors: [RISK_FACTORS.freeProvider],
    },
  ],
  [
    'accepted, catch-all and disposable: disposable names it, both are risk factors',
    verdictInput('alice@mailinator.com', {
      lists: DISPOSABLE,
      probe: rcpt('alice@mailinator.com', ACCEPTED, ACCEPTED),
    }),
    {
      status: 'risky',
      subStatus: 'disposable',
      isCatchAll: true,
      riskFactors: [RISK_FACTORS.catchAll, RISK_FACTORS.disposable],
    },
  ],
  [
    'accepted, role-based on a catch-all domain is not deliverable',
    verdictInput('info@example.com', { lists: ROLE, probe: rcpt('info@example.com', ACCEPTED, ACCEPTED) }),
    { status: 'risky', subStatus: 'catch_all', isDeliverable: false, isCatchAll: true },
  ],
  [
    'accepted, spam-trap name',
    verdictInput('spamtrap@example.com', { probe: rcpt('spamtrap@example.com', ACCEPTED, USER_UNKNOWN) }),
    {
      status: 'risky',
      subStatus: 'possible_spamtrap',
      isDeliverable: false,
      riskFactors: [RISK_FACTORS.spamtrap],
    },
  ],
  [
    'accepted, abuse desk on a disposable domain',
    verdictInput('abuse@mailinator.com', {
      lists: { ...DISPOSABLE, isRoleBased: true },
      probe: rcpt('abuse@mailinator.com', ACCEPTED, USER_UNKNOWN),
    }),
    { status: 'risky', subStatus: 'toxic', isDeliverable: false },
  ],
  [
    'rejected, unknown mailbox',
    verdictInput('nobody@example.com', { probe: rcpt('nobody@example.com', USER_UNKNOWN) }),
    { status: 'undeliverable', subStatus: 'mailbox_not_found', smtpValid: false, isDeliverable: false },
  ],
  [
    'rejected, disabled mailbox',
    verdictInput('gone@example.com', { probe: rcpt('gone@example.com', DISABLED) }),
    { status: 'undeliverable', subStatus: 'mailbox_disabled', smtpValid: false },
  ],
  [
    'rejected on a disposable domain: the rejection decides',
    verdictInput('nobody@mailinator.com', {
      lists: DISPOSABLE,
      probe: rcpt('nobody@mailinator.com', USER_UNKNOWN),
    }),
    { status: 'undeliverable', subStatus: 'mailbox_not_found', smtpValid: false },
  ],
  [
    'mailbox full',
    verdictInput('alice@example.com', { probe: rcpt('alice@example.com', FULL) }),
    { status: 'risky', subStatus: 'mailbox_full', smtpValid: null, isDeliverable: false },
  ],
  [
    'greylisted',
    verdictInput('alice@example.com', { probe: rcpt('alice@example.com', GREYLISTED) }),
    {
      status: 'unknown',
      subStatus: 'greylisted',
      retryAfterSeconds: 300,
      smtpValid: null,
      riskFactors: [RISK_FACTORS.greylisted],
    },
  ],
  [
    'greylisted on a disposable domain: the list decides',
    verdictInput('alice@mailinator.com', {
      lists: DISPOSABLE,
      probe: rcpt('alice@mailinator.com', GREYLISTED),
    }),
    {
      status: 'risky',
      subStatus: 'disposable',
      riskFactors: [RISK_FACTORS.disposable, RISK_FACTORS.greylisted],
    },
  ],
  [
    'policy block (5.7.1)',
    verdictInput('alice@example.com', { probe: rcpt('alice@example.com', POLICY) }),
    { status: 'unknown', subStatus: 'antispam_blocked', smtpValid: null },
  ],
  [
    'a 550 naming Spamhaus is a block, even when it also says "user unknown"',
    verdictInput('alice@example.com', { probe: rcpt('alice@example.com', SPAMHAUS) }),
    { status: 'unknown', subStatus: 'antispam_blocked', smtpValid: null },
  ],
  [
    'session refused at the banner',
    verdictInput('alice@example.com', { probe: rcpt('alice@example.com', null, null, REJECTED_AT_BANNER) }),
    { status: 'unknown', subStatus: 'antispam_blocked' },
  ],
  [
    'guard refused the target',
    verdictInput('alice@example.com', {
      probe: rcpt('alice@example.com', null, null, {
        kind: 'target_refused',
        stage: 'guard',
        reply: null,
        message: 'private',
      }),
    }),
    { status: 'undeliverable', subStatus: 'unroutable_ip_address', smtpValid: null },
  ],
  [
    'greylisted at the banner carries its delay',
    verdictInput('alice@example.com', {
      probe: rcpt('alice@example.com', null, null, {
        kind: 'rejected',
        stage: 'banner',
        reply: { code: 421, enhanced: '4.7.0', text: 'Greylisted, try again in 90 seconds' },
        message: 'greylisted',
      }),
    }),
    { status: 'unknown', subStatus: 'greylisted', retryAfterSeconds: 90 },
  ],
  [
    'the address is missing from the report',
    verdictInput('alice@example.com', { probe: rcpt('bob@example.com', ACCEPTED) }),
    { status: 'unknown', subStatus: 'smtp_unavailable', smtpValid: null },
  ],
  [
    'an outcome with neither reply nor failure',
    verdictInput('alice@example.com', { probe: rcpt('alice@example.com', null) }),
    { status: 'unknown', subStatus: 'smtp_unavailable' },
  ],
  [
    'the RCPT reply wins over a failure reported with it',
    verdictInput('alice@example.com', {
      probe: rcpt('alice@example.com', USER_UNKNOWN, null, {
        kind: 'disconnected',
        stage: 'rcpt',
        reply: null,
        message: 'eof',
      }),
    }),
    { status: 'undeliverable', subStatus: 'mailbox_not_found' },
  ],
  [
    'the domain matches case-insensitively',
    verdictInput('alice@example.com', { probe: rcpt('alice@EXAMPLE.COM', USER_UNKNOWN) }),
    { status: 'undeliverable', subStatus: 'mailbox_not_found' },
  ],
  [
    'the local part matches exactly (RFC 5321 §2.4)',
    verdictInput('Alice@example.com', { probe: rcpt('alice@example.com', USER_UNKNOWN) }),
    { status: 'unknown', subStatus: 'smtp_unavailable' },
  ],
  [
    'a Unicode domain matches the report by its A-label form',
    verdictInput('anna@bücher.de', {
      syntax: validSyntax('anna@xn--bcher-kva.de'),
      probe: rcpt('anna@xn--bcher-kva.de', ACCEPTED, USER_UNKNOWN),
    }),
    { status: 'deliverable', subStatus: 'accepted_email' },
  ],
  [
    'a quoted, internationalised local part carries both risk factors',
    verdictInput('"jörg smith"@example.com', {
      syntax: validSyntax('"jörg smith"@example.com', { quotedLocalPart: true, needsSmtpUtf8: true }),
      probe: rcpt('"jörg smith"@example.com', ACCEPTED, USER_UNKNOWN),
    }),
    {
      status: 'deliverable',
      subStatus: 'accepted_email',
      riskFactors: [RISK_FACTORS.quotedLocalPart, RISK_FACTORS.needsSmtpUtf8],
    },
  ],
  [
    'a server without SMTPUTF8',
    verdictInput('jörg@example.com', {
      syntax: validSyntax('jörg@example.com', { needsSmtpUtf8: true }),
      probe: rcpt('jörg@example.com', null, null, {
        kind: 'smtputf8_unsupported',
        stage: 'mail',
        reply: null,
        message: 'no SMTPUTF8',
      }),
    }),
    { status: 'unknown', subStatus: 'provider_unverifiable', riskFactors: [RISK_FACTORS.needsSmtpUtf8] },
  ],
];

describe('computeVerdict rules', () => {
  it.each(RULES)('%s', (_name, input, expected) => {
    const result = computeVerdict(input);
    expect(VerificationResult.parse(result)).toEqual(result);
    expect(result.status).toBe(expected.status);
    expect(result.subStatus).toBe(expected.subStatus);
    if (expected.isDeliverable !== undefined) expect(result.isDeliverable).toBe(expected.isDeliverable);
    if (expected.smtpValid !== undefined) expect(result.checks.smtpValid).toBe(expected.smtpValid);
    if (expected.isCatchAll !== undefined) expect(result.checks.isCatchAll).toBe(expected.isCatchAll);
    expect(result.retryAfterSeconds).toBe(expected.retryAfterSeconds);
    if (expected.riskFactors !== undefined) expect(result.riskFactors).toEqual(expected.riskFactors);
    const band = SCORE_BANDS[result.status];
    expect(result.score).toBeGreaterThanOrEqual(band.min);
    expect(result.score).toBeLessThanOrEqual(band.max);
  });

  it('gives an accepted role address a high risky score', () => {
    const result = computeVerdict(
      verdictInput('info@example.com', {
        lists: ROLE,
        probe: rcpt('info@example.com', ACCEPTED, USER_UNKNOWN),
      }),
    );
    expect(result.score).toBeGreaterThanOrEqual(70);
    expect(result.toxicity).toBe(1);
  });

  it('gives one reason per subStatus, and its own for an undeliverable typo', () => {
    const risky = computeVerdict(verdictInput('alice@gmial.com', { typo: TYPO }));
    const undeliverable = computeVerdict(
      verdictInput('alice@gmial.com', { typo: TYPO, dns: { kind: 'nxdomain' } }),
    );
    expect(risky.reason).toBe(SUB_STATUS_TABLE.possible_typo.reason);
    expect(undeliverable.reason).not.toBe(risky.reason);
    expect(undeliverable.reason).toMatch(/does not exist/);
    expect(computeVerdict(verdictInput('alice@example.com')).reason).toBe(
      SUB_STATUS_TABLE.smtp_unavailable.reason,
    );
  });
});

describe('computeVerdict checks and meta', () => {
  it('fills meta from syntax, probe, lists, DNS and the input', () => {
    const result = computeVerdict(
      verdictInput('  alice@gmail.com ', {
        syntax: validSyntax('alice@gmail.com'),
        lists: FREE,
        probe: rcpt('alice@gmail.com', ACCEPTED, USER_UNKNOWN),
        processingTimeMs: 812.6,
      }),
    );
    expect(result.email).toBe('alice@gmail.com');
    expect(result.meta).toEqual({
      domain: 'gmail.com',
      localPart: 'alice',
      mxHost: 'mx1.example.com',
      provider: 'gmail',
      dnsType: 'MX',
      verifiedAt: VERIFIED_AT,
      processingTimeMs: 813,
      verifiedVia: 'mx',
      cached: false,
    });
    expect(result.checks).toEqual({
      syntax: true,
      mxRecords: true,
      smtpValid: true,
      isDisposable: false,
      isRoleBased: false,
      isFreeProvider: true,
      isCatchAll: false,
      hasTypo: null,
    });
  });

  it.each<[string, DnsOutcome | null, ProbeOutcome, string | null, string | null, boolean]>([
    ['the session host wins', MX, report([], null, 'mx-used.example.com'), 'mx-used.example.com', 'MX', true],
    ['else the first host of the route', MX, { kind: 'timeout' }, 'mx1.example.com', 'MX', true],
    [
      'implicit MX from an A record',
      { kind: 'mx', dnsType: 'A', mx: [{ host: 'example.com', preference: 0, ips: ['192.0.2.9'] }] },
      { kind: 'timeout' },
      'example.com',
      'A',
      true,
    ],
    ['null MX', { kind: 'null_mx' }, { kind: 'skipped' }, null, 'NULL_MX', false],
    ['nxdomain', { kind: 'nxdomain' }, { kind: 'skipped' }, null, null, false],
    ['not resolved', null, { kind: 'skipped' }, null, null, false],
  ])('mxHost and dnsType: %s', (_name, dns, probe, mxHost, dnsType, mxRecords) => {
    const result = computeVerdict(verdictInput('alice@example.com', { dns, probe }));
    expect(result.meta.mxHost).toBe(mxHost);
    expect(result.meta.dnsType).toBe(dnsType);
    expect(result.checks.mxRecords).toBe(mxRecords);
  });

  it.each<[string, string, number, string, number]>([
    ['a well-formed instant is kept', VERIFIED_AT, 5, VERIFIED_AT, 5],
    [
      'an instant with an offset is normalised to UTC',
      '2025-03-04T07:06:07+02:00',
      -3,
      '2025-03-04T05:06:07.000Z',
      0,
    ],
    ['an unreadable instant becomes the epoch', 'yesterday-ish', Number.NaN, '1970-01-01T00:00:00.000Z', 0],
    ['an infinite duration becomes 0', VERIFIED_AT, Number.POSITIVE_INFINITY, VERIFIED_AT, 0],
  ])('%s', (_name, verifiedAt, processingTimeMs, expectedAt, expectedMs) => {
    const result = computeVerdict(verdictInput('alice@example.com', { verifiedAt, processingTimeMs }));
    expect(result.meta.verifiedAt).toBe(expectedAt);
    expect(result.meta.processingTimeMs).toBe(expectedMs);
  });

  it('keeps the typo suggestion, with its confidence clamped to 0..1', () => {
    const result = computeVerdict(verdictInput('alice@gmial.com', { typo: { ...TYPO, confidence: 1.7 } }));
    expect(result.checks.hasTypo).toEqual({ ...TYPO, confidence: 1 });
  });
});

describe('catchAllState', () => {
  it.each<[string, SmtpReply | null, boolean | null]>([
    ['not tested', null, null],
    ['random address accepted', ACCEPTED, true],
    ['random address unknown', USER_UNKNOWN, false],
    ['random address disabled', DISABLED, false],
    ['random address greylisted', GREYLISTED, null],
    ['random address blocked by policy', POLICY, null],
    [
      'random address refused without a reason',
      { code: 550, enhanced: null, text: 'Requested action not taken' },
      null,
    ],
  ])('%s → %s', (_name, catchAllReply, expected) => {
    const probe = rcpt('alice@example.com', ACCEPTED, catchAllReply) as Extract<
      ProbeOutcome,
      { kind: 'report' }
    >;
    expect(catchAllState(probe.report)).toBe(expected);
  });
});

describe('failureSubStatus', () => {
  const failure = (
    kind: SessionFailure['kind'],
    stage: SessionFailure['stage'] = 'connect',
    reply: SmtpReply | null = null,
  ) => ({
    kind,
    stage,
    reply,
    message: kind,
  });

  it.each<[string, SessionFailure, SubStatus]>([
    ['connection_failed', failure('connection_failed'), 'smtp_connection_failed'],
    ['timeout', failure('timeout', 'rcpt'), 'smtp_timeout'],
    ['disconnected', failure('disconnected', 'mail'), 'forcible_disconnect'],
    ['invalid_response', failure('invalid_response', 'ehlo'), 'invalid_smtp_response'],
    ['tls_failed', failure('tls_failed', 'starttls'), 'smtp_connection_failed'],
    ['smtputf8_unsupported', failure('smtputf8_unsupported', 'mail'), 'provider_unverifiable'],
    ['target_refused', failure('target_refused', 'guard'), 'unroutable_ip_address'],
    ['provider_unverifiable', failure('provider_unverifiable', 'guard'), 'provider_unverifiable'],
    ['throttled', failure('throttled', 'connect'), 'mail_server_temporary_error'],
    [
      'rejected: 554 at the banner',
      failure('rejected', 'banner', { code: 554, enhanced: null, text: 'No SMTP service here' }),
      'antispam_blocked',
    ],
    [
      'rejected: 421 at EHLO',
      failure('rejected', 'ehlo', {
        code: 421,
        enhanced: '4.7.0',
        text: 'Try again later, closing connection',
      }),
      'mail_server_temporary_error',
    ],
    [
      'rejected: 550 5.1.1 at MAIL is about our sender',
      failure('rejected', 'mail', USER_UNKNOWN),
      'antispam_blocked',
    ],
    [
      'rejected: STARTTLS refused',
      failure('rejected', 'starttls', { code: 454, enhanced: '4.7.0', text: 'TLS not available' }),
      'mail_server_temporary_error',
    ],
    ['rejected: a mailbox code at RCPT', failure('rejected', 'rcpt', USER_UNKNOWN), 'mailbox_not_found'],
    ['rejected: a 2xx contradicts itself', failure('rejected', 'mail', ACCEPTED), 'invalid_smtp_response'],
    ['rejected without its reply', failure('rejected', 'mail'), 'internal_error'],
  ])('%s', (_name, sessionFailure, expected) => {
    expect(failureSubStatus(sessionFailure)).toBe(expected);
  });
});

describe('toxicityOf', () => {
  it.each<[string, ListFacts, number]>([
    ['alice', CLEAN, 0],
    ['info', ROLE, 1],
    ['alice', DISPOSABLE, 2],
    ['abuse', ROLE, 3],
    ['postmaster+x', ROLE, 3],
    ['spamtrap', CLEAN, 3],
    ['Honey.Pot', CLEAN, 3],
    ['trap7', CLEAN, 3],
    ['trapeze', CLEAN, 0],
    ['abuse', { ...DISPOSABLE, isRoleBased: true }, 5],
    ['spamtrap', DISPOSABLE, 5],
  ])('%s → %s', (localPart, lists, expected) => {
    expect(toxicityOf(localPart, lists)).toBe(expected);
  });
});

// Arbitrary inputs: every syntax shape, list facts, typo, every DnsOutcome and ProbeOutcome kind,
// with replies drawn from real-looking texts and from noise. Weighted towards valid addresses
// with an MX and a probe report that answers them, so that the SMTP branches get most runs.
const rarely = fc.oneof(
  { weight: 4, arbitrary: fc.constant(false) },
  { weight: 1, arbitrary: fc.constant(true) },
);
const replyTexts = fc.oneof(
  fc.string({ maxLength: 60 }),
  fc.constantFrom(
    'OK',
    'User unknown',
    'Greylisted, see http://postgrey.schweikert.ch/',
    'Mailbox full',
    'blocked using zen.spamhaus.org',
    'Relay access denied',
    'Access denied. AS(201806281)',
    'try again in 120 seconds',
  ),
  fc.constantFrom(...POLICY_WORDS).map((word) => `rejected: ${word}`),
);
const enhancedCodes = fc.option(
  fc.oneof(
    fc.constantFrom('2.1.5', '5.1.1', '5.1.10', '5.2.1', '5.2.2', '4.2.0', '4.7.1', '5.7.1', '5.4.1'),
    fc
      .tuple(fc.constantFrom('2', '4', '5'), fc.integer({ min: 0, max: 7 }), fc.integer({ min: 0, max: 12 }))
      .map(([cls, subject, detail]) => `${cls}.${subject}.${detail}`),
  ),
  { nil: null },
);
const smtpReplies: fc.Arbitrary<SmtpReply> = fc.record({
  code: fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(250, 251, 421, 450, 451, 452, 550, 552, 553, 554) },
    { weight: 1, arbitrary: fc.integer({ min: 100, max: 599 }) },
  ),
  enhanced: enhancedCodes,
  text: replyTexts,
});
const sessionFailures: fc.Arbitrary<SessionFailure> = fc.record({
  kind: fc.constantFrom(...SESSION_FAILURE_KINDS),
  stage: fc.constantFrom('connect', 'banner', 'ehlo', 'starttls', 'mail', 'rcpt', 'guard'),
  reply: fc.option(smtpReplies, { nil: null }),
  message: fc.string({ maxLength: 20 }),
});
const mxTargets = fc.array(
  fc.record({
    host: fc.domain(),
    preference: fc.integer({ min: 0, max: 65535 }),
    ips: fc.array(fc.ipV4(), { maxLength: 2 }),
  }),
  { maxLength: 3 },
);
const dnsOutcomes: fc.Arbitrary<DnsOutcome | null> = fc.oneof(
  {
    weight: 12,
    arbitrary: fc.record({
      kind: fc.constant('mx' as const),
      dnsType: fc.constantFrom('MX' as const, 'A' as const, 'AAAA' as const),
      mx: mxTargets,
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'null_mx' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'no_mail_route' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'nxdomain' as const }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('unroutable' as const), mx: mxTargets }) },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('error' as const), message: fc.string({ maxLength: 20 }) }),
  },
  { weight: 1, arbitrary: fc.constant(null) },
);
const localParts = fc.oneof(
  fc.constantFrom(
    'alice',
    'Alice',
    'info',
    'abuse',
    'postmaster',
    'spamtrap',
    'honeypot',
    '"quoted one"',
    'jörg',
  ),
  fc.string({ maxLength: 20 }),
);
const domains = fc.oneof(
  fc.constantFrom('example.com', 'xn--bcher-kva.de', 'mailinator.com', 'gmial.com'),
  fc.domain(),
);
const listFacts: fc.Arbitrary<ListFacts> = fc.record({
  isDisposable: rarely,
  isRoleBased: rarely,
  isFreeProvider: rarely,
  provider: fc.option(fc.constantFrom('gmail', 'microsoft', 'yahoo'), { nil: null }),
});
const typos: fc.Arbitrary<TypoSuggestion | null> = fc.oneof(
  { weight: 4, arbitrary: fc.constant(null) },
  {
    weight: 1,
    arbitrary: fc.record({
      original: fc.string({ maxLength: 20 }),
      suggested: fc.domain(),
      confidence: fc.double(),
    }),
  },
);

const verdictInputs: fc.Arbitrary<VerdictInput> = fc
  .record({ localPart: localParts, domain: domains, otherLocalPart: localParts, upperDomain: fc.boolean() })
  .chain(({ localPart, domain, otherLocalPart, upperDomain }) => {
    const email = `${localPart}@${domain}`;
    const syntaxes: fc.Arbitrary<SyntaxResult> = fc.oneof(
      {
        weight: 6,
        arbitrary: fc
          .record({ quotedLocalPart: rarely, ipLiteral: rarely, needsSmtpUtf8: rarely })
          .map((flags) => ({ valid: true as const, email, localPart, domain, ...flags })),
      },
      {
        weight: 1,
        arbitrary: fc
          .string({ maxLength: 30 })
          .map((reason) => ({ valid: false as const, email, localPart, domain, reason })),
      },
    );
    const outcome: fc.Arbitrary<AddressOutcome> = fc.record({
      email: fc.oneof(
        { weight: 6, arbitrary: fc.constant(email) },
        { weight: 1, arbitrary: fc.constant(`${localPart}@${upperDomain ? domain.toUpperCase() : domain}`) },
        { weight: 1, arbitrary: fc.constant(`${otherLocalPart}@${domain}`) },
      ),
      reply: fc.oneof({ weight: 4, arbitrary: smtpReplies }, { weight: 1, arbitrary: fc.constant(null) }),
      failure: fc.oneof(
        { weight: 3, arbitrary: fc.constant(null) },
        { weight: 1, arbitrary: sessionFailures },
      ),
    });
    const reports: fc.Arbitrary<ProbeReport> = fc.record({
      perAddress: fc.array(outcome, { minLength: 1, maxLength: 3 }),
      catchAllReply: fc.option(smtpReplies, { nil: null }),
      session: fc.record({
        mxHost: fc.option(fc.domain(), { nil: null }),
        mxIp: fc.option(fc.ipV4(), { nil: null }),
        tls: fc.boolean(),
        tlsError: fc.constant(null),
        smtputf8: fc.boolean(),
        durationMs: fc.nat(),
      }),
    });
    const probes: fc.Arbitrary<ProbeOutcome> = fc.oneof(
      { weight: 12, arbitrary: reports.map((report) => ({ kind: 'report' as const, report })) },
      { weight: 1, arbitrary: fc.constant({ kind: 'unavailable' as const, message: 'no prober' }) },
      { weight: 1, arbitrary: fc.constant({ kind: 'timeout' as const }) },
      { weight: 1, arbitrary: fc.constant({ kind: 'skipped' as const }) },
    );
    return fc.record({
      email: fc.constantFrom(email, ` ${email} `),
      syntax: syntaxes,
      lists: listFacts,
      typo: typos,
      dns: dnsOutcomes,
      probe: probes,
      verifiedAt: fc.oneof(
        {
          weight: 4,
          arbitrary: fc
            .date({ noInvalidDate: true, min: new Date(0), max: new Date('2100-01-01T00:00:00Z') })
            .map((date) => date.toISOString()),
        },
        { weight: 1, arbitrary: fc.string({ maxLength: 30 }) },
      ),
      processingTimeMs: fc.oneof(fc.nat(), fc.double()),
    });
  });

describe('computeVerdict properties', () => {
  it('never throws and always parses as a VerificationResult', () => {
    fc.assert(
      fc.property(verdictInputs, (input) => {
        const result = computeVerdict(input);
        expect(() => VerificationResult.parse(result)).not.toThrow();
      }),
      { numRuns: 500 },
    );
  });

  it('keeps the score inside the status band and the status in line with the subStatus', () => {
    fc.assert(
      fc.property(verdictInputs, (input) => {
        const result = computeVerdict(input);
        const band = SCORE_BANDS[result.status];
        expect(result.score).toBeGreaterThanOrEqual(band.min);
        expect(result.score).toBeLessThanOrEqual(band.max);
        const undeliverableTypo = result.subStatus === 'possible_typo' && result.status === 'undeliverable';
        if (!undeliverableTypo) expect(result.status).toBe(SUB_STATUSES[result.subStatus]);
      }),
      { numRuns: 500 },
    );
  });

  it('is deliverable only when deliverable or an accepted role address, and agrees with smtpValid', () => {
    fc.assert(
      fc.property(verdictInputs, (input) => {
        const result = computeVerdict(input);
        if (result.isDeliverable) {
          expect(result.status === 'deliverable' || result.subStatus === 'role_based').toBe(true);
          expect(result.checks.smtpValid).toBe(true);
          expect(result.checks.isCatchAll).not.toBe(true);
        }
        if (result.status === 'deliverable') expect(result.isDeliverable).toBe(true);
        if (result.checks.smtpValid === false) expect(result.status).toBe('undeliverable');
        if (result.checks.smtpValid === true) expect(['deliverable', 'risky']).toContain(result.status);
        if (result.retryAfterSeconds !== undefined) expect(result.subStatus).toBe('greylisted');
      }),
      { numRuns: 500 },
    );
  });

  it('is deterministic and does not change its input', () => {
    fc.assert(
      fc.property(verdictInputs, (input) => {
        const before = structuredClone(input);
        const first = computeVerdict(input);
        expect(computeVerdict(structuredClone(input))).toEqual(first);
        expect(input).toEqual(before);
      }),
      { numRuns: 200 },
    );
  });

  it('never makes an address undeliverable from an RCPT reply that names a policy word', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...POLICY_WORDS),
        fc.constantFrom(550, 551, 553, 554),
        enhancedCodes,
        (word, code, enhanced) => {
          const reply: SmtpReply = {
            code,
            enhanced,
            text: `Recipient address rejected: user unknown (${word})`,
          };
          const result = computeVerdict(
            verdictInput('alice@example.com', { probe: rcpt('alice@example.com', reply) }),
          );
          expect(result.status).not.toBe('undeliverable');
          expect(result.checks.smtpValid).toBeNull();
        },
      ),
    );
  });
});

describe('decideVerdict policy: what a batch does with each answer', () => {
  const failure = (kind: SessionFailure['kind']): SessionFailure => ({
    kind,
    stage: 'connect',
    reply: null,
    message: kind,
  });

  it.each<
    [
      string,
      Partial<VerdictInput>,
      { retry: string; refundable: boolean; retryAfterSeconds?: number; retryAfterGuessed?: boolean },
    ]
  >([
    [
      'a mailbox answer is final and charged',
      { probe: rcpt('alice@example.com', USER_UNKNOWN) },
      { retry: 'none', refundable: false },
    ],
    [
      'an acceptance is final and charged',
      { probe: rcpt('alice@example.com', ACCEPTED) },
      { retry: 'none', refundable: false },
    ],
    [
      'greylisting is asked again after its delay and refunded when final',
      { probe: rcpt('alice@example.com', GREYLISTED) },
      { retry: 'greylist', refundable: true, retryAfterSeconds: 300, retryAfterGuessed: true },
    ],
    [
      'a permanent policy block is refunded and not asked again',
      { probe: rcpt('alice@example.com', POLICY) },
      { retry: 'none', refundable: true },
    ],
    [
      "Yahoo's [TSS04] deferral is asked again slowly and refunded when final",
      {
        probe: rcpt('alice@example.com', {
          code: 421,
          enhanced: '4.7.0',
          text: '[TSS04] Messages from 203.0.113.7 temporarily deferred due to unexpected volume or user complaints',
        }),
      },
      { retry: 'throttle', refundable: true },
    ],
    [
      'a relay denial (the host takes no mail for the domain from us) is refunded, not asked again',
      {
        probe: rcpt('alice@example.com', {
          code: 554,
          enhanced: '5.7.1',
          text: '<alice@example.com>: Relay access denied',
        }),
      },
      { retry: 'none', refundable: true },
    ],
    [
      'a prober backing off the host asks again slowly',
      { probe: rcpt('alice@example.com', null, null, failure('throttled')) },
      { retry: 'throttle', refundable: true },
    ],
    [
      'a connection failure is asked again soon and charged',
      { probe: rcpt('alice@example.com', null, null, failure('connection_failed')) },
      { retry: 'connection', refundable: false },
    ],
    [
      'a resolver failure is asked again and refunded',
      { dns: { kind: 'error', message: 'SERVFAIL' } },
      { retry: 'connection', refundable: true },
    ],
    [
      'no prober is asked again and refunded',
      { probe: { kind: 'unavailable', message: 'no prober connected' } },
      { retry: 'rcpt', refundable: true },
    ],
    [
      'a domain that does not exist is final and charged',
      { dns: { kind: 'nxdomain' } },
      { retry: 'none', refundable: false },
    ],
    [
      'a local risk decides when SMTP did not: final, whatever the SMTP answer would have done',
      { lists: { ...CLEAN, isDisposable: true }, probe: rcpt('alice@example.com', GREYLISTED) },
      { retry: 'none', refundable: false },
    ],
  ])('%s', (_name, overrides, policy) => {
    expect(decideVerdict(verdictInput('alice@example.com', overrides)).policy).toEqual(policy);
  });

  it('gives the result exactly as computeVerdict does', () => {
    const input = verdictInput('alice@example.com', { probe: rcpt('alice@example.com', GREYLISTED) });
    const { result } = decideVerdict(input);
    expect(result).toEqual(computeVerdict(input));
    expect(result.retryAfterSeconds).toBe(300);
  });

  it('tells a greylisted caller the delay rcpt measured of the server, unless the server named one', () => {
    const guessed = decideVerdict(
      verdictInput('alice@example.com', {
        probe: rcpt('alice@example.com', GREYLISTED),
        greylistDelaySeconds: 95,
      }),
    );
    expect(guessed.result.retryAfterSeconds).toBe(95);
    const named = decideVerdict(
      verdictInput('alice@example.com', {
        probe: rcpt('alice@example.com', {
          code: 451,
          enhanced: null,
          text: 'Greylisted, try again in 180 seconds',
        }),
        greylistDelaySeconds: 95,
      }),
    );
    expect(named.result.retryAfterSeconds).toBe(180);
  });

  it("follows the subStatus's row unless a reply refines the schedule", () => {
    fc.assert(
      fc.property(
        fc.record({
          code: fc.integer({ min: 200, max: 599 }),
          enhanced: fc.constant(null),
          text: fc.string({ maxLength: 40 }),
        }),
        (reply) => {
          const { result, policy } = decideVerdict(
            verdictInput('alice@example.com', { probe: rcpt('alice@example.com', reply) }),
          );
          const row = SUB_STATUS_TABLE[result.subStatus];
          expect(policy.refundable).toBe(row.refundable);
          if (row.retry === 'none' || reply.code >= 500) expect(policy.retry).toBe('none');
        },
      ),
    );
  });
});

describe('a typo domain that the disposable lists carry', () => {
  const listedTypo = { typo: TYPO, lists: { ...CLEAN, isDisposable: true } };

  it.each<[string, Partial<VerdictInput>]>([
    ['when the mailbox accepted', { ...listedTypo, probe: rcpt('alice@gmial.com', ACCEPTED) }],
    ['when SMTP gave no answer', listedTypo],
  ])(
    'is reported as the typo, not as disposable, %s; the listing stays a risk factor',
    (_name, overrides) => {
      const result = computeVerdict(verdictInput('alice@gmial.com', overrides));
      expect(result).toMatchObject({ status: 'risky', subStatus: 'possible_typo', toxicity: 0 });
      expect(result.checks.isDisposable).toBe(false);
      expect(result.riskFactors).toEqual(
        expect.arrayContaining([RISK_FACTORS.typo('gmail.com'), RISK_FACTORS.typoSquatting]),
      );
      expect(result.riskFactors).not.toContain(RISK_FACTORS.disposable);
    },
  );

  it('leaves a disposable domain with no typo disposable', () => {
    const result = computeVerdict(
      verdictInput('alice@mailinator.com', {
        lists: { ...CLEAN, isDisposable: true },
        probe: rcpt('alice@mailinator.com', ACCEPTED),
      }),
    );
    expect(result).toMatchObject({ subStatus: 'disposable', checks: { isDisposable: true } });
    expect(result.riskFactors).not.toContain(RISK_FACTORS.typoSquatting);
  });

  it('holds with the real lists: gmial.com is listed as disposable and is a typo of gmail.com', () => {
    const result = assessAddress({
      email: 'alice@gmial.com',
      dns: MX,
      probe: rcpt('alice@gmial.com', ACCEPTED),
      verifiedAt: VERIFIED_AT,
      processingTimeMs: 1,
    });
    expect(result).toMatchObject({ subStatus: 'possible_typo', checks: { isDisposable: false } });
    expect(result.riskFactors).toContain(RISK_FACTORS.typoSquatting);
  });
});

describe('a catch-all security gateway and the tenant behind it', () => {
  const GATEWAY: DnsOutcome = {
    kind: 'mx',
    dnsType: 'MX',
    mx: [{ host: 'mx0a-1.pphosted.com', preference: 10, ips: ['192.0.2.9'] }],
  };
  const email = 'alice@example.com';
  const TENANT_HOST = 'example-com.mail.protection.outlook.com';
  // Microsoft 365's reply for a recipient not in the tenant (shared/corpus/smtp-replies.json, lhost-office365-13).
  const NOT_FOUND: SmtpReply = {
    code: 550,
    enhanced: '5.1.10',
    text: 'RESOLVER.ADR.RecipientNotFound; Recipient not found by SMTP address lookup',
  };
  const RELAY_DENIED: SmtpReply = {
    code: 550,
    enhanced: '5.7.64',
    text: 'TenantAttribution; Relay Access Denied',
  };
  const tenant = (
    reply: SmtpReply | null,
    catchAll: SmtpReply | null = USER_UNKNOWN,
    failure: SessionFailure | null = null,
  ) => ({
    provider: 'microsoft',
    inboundHost: TENANT_HOST,
    probe: rcpt(email, reply, catchAll, failure),
  });
  const behindGateway = (overrides: Partial<VerdictInput>) =>
    computeVerdict(
      verdictInput(email, { dns: GATEWAY, probe: rcpt(email, ACCEPTED, ACCEPTED), ...overrides }),
    );

  it.each<[string, Partial<VerdictInput>, Record<string, unknown>]>([
    [
      'the tenant accepts the mailbox and refuses a made-up one: deliverable, the gateway still catch-all',
      { tenant: tenant(ACCEPTED) },
      {
        status: 'deliverable',
        subStatus: 'accepted_email',
        isDeliverable: true,
        checks: { smtpValid: true, isCatchAll: true },
        meta: { verifiedVia: 'tenant' },
        riskFactors: [],
      },
    ],
    [
      'the tenant does not know the mailbox: undeliverable',
      { tenant: tenant(NOT_FOUND) },
      {
        status: 'undeliverable',
        subStatus: 'mailbox_not_found',
        isDeliverable: false,
        checks: { smtpValid: false, isCatchAll: true },
        meta: { verifiedVia: 'tenant' },
      },
    ],
    [
      'the tenant refuses the check (relay denied): the gateway answer stands',
      { tenant: tenant(RELAY_DENIED) },
      { status: 'risky', subStatus: 'catch_all', checks: { isCatchAll: true }, meta: { verifiedVia: 'mx' } },
    ],
    [
      'the tenant accepts everything too: the gateway answer stands',
      { tenant: tenant(ACCEPTED, ACCEPTED) },
      { status: 'risky', subStatus: 'catch_all', meta: { verifiedVia: 'mx' } },
    ],
    [
      'the tenant accepts, but its made-up address was not asked: the gateway answer stands',
      { tenant: tenant(ACCEPTED, null) },
      { status: 'risky', subStatus: 'catch_all', meta: { verifiedVia: 'mx' } },
    ],
    [
      'the tenant could not be reached: the gateway answer stands',
      { tenant: { provider: 'microsoft', inboundHost: TENANT_HOST, probe: { kind: 'timeout' } } },
      { status: 'risky', subStatus: 'catch_all', isDeliverable: false, meta: { verifiedVia: 'mx' } },
    ],
    [
      'no tenant found',
      { tenant: null },
      {
        status: 'risky',
        subStatus: 'catch_all',
        riskFactors: [RISK_FACTORS.catchAll],
        meta: { verifiedVia: 'mx' },
      },
    ],
    [
      'a gateway that is not catch-all keeps its own answer, whatever a tenant says',
      { probe: rcpt(email, ACCEPTED, USER_UNKNOWN), tenant: tenant(NOT_FOUND) },
      { status: 'deliverable', checks: { isCatchAll: false }, meta: { verifiedVia: 'mx' } },
    ],
    [
      'a role address the tenant accepts is role_based',
      {
        email: 'info@example.com',
        syntax: validSyntax('info@example.com'),
        lists: ROLE,
        probe: rcpt('info@example.com', ACCEPTED, ACCEPTED),
        tenant: { ...tenant(null), probe: rcpt('info@example.com', ACCEPTED, USER_UNKNOWN) },
      },
      { status: 'risky', subStatus: 'role_based', isDeliverable: true, meta: { verifiedVia: 'tenant' } },
    ],
  ])('%s', (_name, overrides, expected) => {
    const result = behindGateway(overrides);
    expect(result).toMatchObject(expected);
    expect(VerificationResult.parse(result)).toEqual(result);
  });

  it('says verifiedVia null when no SMTP answer was used, and sandbox for a test key', () => {
    expect(computeVerdict(verdictInput(email)).meta.verifiedVia).toBeNull();
    expect(
      computeVerdict(verdictInput(email, { sandbox: true, probe: rcpt(email, ACCEPTED) })).meta.verifiedVia,
    ).toBe('sandbox');
  });

  it('reads a result stored before verifiedVia existed as null, and a newer one as it was', () => {
    const result = behindGateway({ tenant: tenant(ACCEPTED) });
    const { verifiedVia: _verifiedVia, ...olderMeta } = result.meta;
    const older = storedVerificationResult(JSON.stringify({ ...result, meta: olderMeta }));
    expect(older.meta.verifiedVia).toBeNull();
    expect(VerificationResult.parse(older)).toEqual(older);
    expect(storedVerificationResult(JSON.stringify(result))).toEqual(result);
  });
});

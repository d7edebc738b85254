// Test keys (rk_test_…) never touch DNS or SMTP and are never charged: magic local parts
// give fixed answers, computed by the same verdict code as real ones so that they have
// exactly the shape and meaning of production results.
import type { VerificationResult } from '@rcpt/shared/contract/api';
import type { ProbeReport, SmtpReply } from '@rcpt/shared/contract/prober';
import type { DnsOutcome, ProbeOutcome, SyntaxResult } from '@rcpt/shared/verify/inputs';
import { verdictFromFacts } from '@rcpt/shared/verify/verdict';

const SANDBOX_MX = 'mx.sandbox.rcpt.invalid';

const ACCEPTED: SmtpReply = { code: 250, enhanced: '2.1.5', text: 'OK' };

/** Magic local parts and the SMTP conversation each one stands for. */
export const SANDBOX_ADDRESSES: Record<
  string,
  { describe: string; rcpt: SmtpReply | null; catchAll?: SmtpReply }
> = {
  deliverable: {
    describe: 'deliverable / accepted_email',
    rcpt: ACCEPTED,
    catchAll: { code: 550, enhanced: '5.1.1', text: 'User unknown' },
  },
  undeliverable: {
    describe: 'undeliverable / mailbox_not_found',
    rcpt: { code: 550, enhanced: '5.1.1', text: 'User unknown' },
  },
  risky: { describe: 'risky / mailbox_full', rcpt: { code: 552, enhanced: '5.2.2', text: 'Mailbox full' } },
  catchall: { describe: 'risky / catch_all', rcpt: ACCEPTED, catchAll: ACCEPTED },
  greylisted: {
    describe: 'unknown / greylisted',
    rcpt: { code: 450, enhanced: '4.2.0', text: 'Greylisted, try again later' },
  },
  unknown: { describe: 'unknown / smtp_timeout', rcpt: null },
};

export function sandboxVerify(address: SyntaxResult, now: number): VerificationResult {
  const verifiedAt = new Date(now).toISOString();
  if (!address.valid || address.ipLiteral)
    return verdictFromFacts({
      address,
      dns: null,
      probe: { kind: 'skipped' },
      sandbox: true,
      verifiedAt,
      processingTimeMs: 0,
    }).result;
  const magic = SANDBOX_ADDRESSES[address.localPart.toLowerCase()];
  const dns: DnsOutcome = {
    kind: 'mx',
    dnsType: 'MX',
    mx: [{ host: SANDBOX_MX, preference: 10, ips: ['192.0.2.25'] }],
  };
  let probe: ProbeOutcome = { kind: 'unavailable', message: 'test keys do not probe; use a magic address' };
  if (magic)
    probe = magic.rcpt
      ? { kind: 'report', report: sandboxReport(address.email, magic.rcpt, magic.catchAll) }
      : { kind: 'timeout' };
  return verdictFromFacts({ address, dns, probe, sandbox: true, verifiedAt, processingTimeMs: 0 }).result;
}

function sandboxReport(email: string, rcpt: SmtpReply, catchAll: SmtpReply | undefined): ProbeReport {
  return {
    perAddress: [{ email, reply: rcpt, failure: null }],
    catchAllReply: catchAll ?? null,
    session: {
      mxHost: SANDBOX_MX,
      mxIp: '192.0.2.25',
      tls: true,
      tlsError: null,
      smtputf8: false,
      durationMs: 0,
    },
  };
}

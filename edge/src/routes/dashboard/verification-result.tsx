/** @jsxImportSource hono/jsx */
// A VerificationResult as people read it: the verdict, the score, each check, the risk
// factors and a typo suggestion. Colour is never the only signal: every badge has its word.
import type { Checks, LearntFact, VerificationResult, VerificationStatus } from '@rcpt/shared/contract/api';
import { RISK_FACTORS } from '@rcpt/shared/verify/verdict';
import { EvidenceView } from './evidence.tsx';
import { CsrfField, SubmitButton } from './forms.tsx';

export function StatusBadge(props: {
  status: VerificationStatus | 'processing' | 'completed' | 'failed' | 'pending';
}) {
  return <span class={`badge badge-${props.status}`}>{props.status}</span>;
}

export function readableSubStatus(subStatus: string): string {
  return subStatus.replaceAll('_', ' ');
}

/** For each check: its label, and whether `true` is the good answer. */
const CHECKS: { key: keyof Omit<Checks, 'hasTypo'>; label: string; trueIsGood: boolean }[] = [
  { key: 'syntax', label: 'Valid syntax', trueIsGood: true },
  { key: 'mxRecords', label: 'Domain accepts mail (MX)', trueIsGood: true },
  { key: 'smtpValid', label: 'Mailbox accepted (SMTP)', trueIsGood: true },
  { key: 'isCatchAll', label: 'Catch-all domain', trueIsGood: false },
  { key: 'isDisposable', label: 'Disposable provider', trueIsGood: false },
  { key: 'isRoleBased', label: 'Role address (info@, sales@ …)', trueIsGood: false },
  { key: 'isFreeProvider', label: 'Free mail provider', trueIsGood: true },
];

type CheckKey = (typeof CHECKS)[number]['key'];

/** What outcomes taught that decided the answer (docs/verdicts.md, "Learning from outcomes"), in words. */
export function LearntNote(props: { learnt: LearntFact; domain: string }) {
  const { learnt } = props;
  if (learnt.kind === 'mailbox_bounce') {
    return (
      <p class="muted" role="note" data-learnt={learnt.kind}>
        Your own send to this address hard-bounced on {learnt.bouncedAt.slice(0, 10)}
        {learnt.diagnostic ? (
          <>
            {' '}
            (<q>{learnt.diagnostic}</q>)
          </>
        ) : null}
        . It is answered from that bounce, with no SMTP session, until you report a delivery to it.
      </p>
    );
  }
  return (
    <p class="muted" role="note" data-learnt={learnt.kind}>
      The mail servers of {props.domain} accept addresses they bounce afterwards: {learnt.bounces} such
      bounces reported by {learnt.accounts} accounts, the last on {learnt.lastBounceAt.slice(0, 10)}. An
      address they accept is not known to be delivered.
    </p>
  );
}

/**
 * What the page says of one check. A check that never ran says so ("not checked": the domain
 * of an address with invalid syntax was never looked up), and the disposable row agrees with
 * the risk factor when a typo domain is on the disposable lists (docs/verdicts.md).
 */
function checkAnswer(
  result: VerificationResult,
  key: CheckKey,
): { text: string; tone: 'good' | 'bad' | 'neutral' | 'unknown' } {
  const { checks } = result;
  const check = CHECKS.find((row) => row.key === key);
  if (key !== 'syntax' && !checks.syntax) return { text: 'not checked', tone: 'unknown' };
  if (key === 'mxRecords' && result.subStatus === 'dns_error') return { text: 'unknown', tone: 'unknown' };
  if ((key === 'smtpValid' || key === 'isCatchAll') && checks[key] === null && !checks.mxRecords) {
    return { text: 'not checked', tone: 'unknown' };
  }
  if (key === 'isDisposable' && result.riskFactors.includes(RISK_FACTORS.typoSquatting)) {
    return { text: 'listed, as a likely typo domain', tone: 'bad' };
  }
  const value = checks[key];
  if (value === null) return { text: 'unknown', tone: 'unknown' };
  // A free provider is neither good nor bad: show it neutrally.
  if (key === 'isFreeProvider') return { text: value ? 'yes' : 'no', tone: 'neutral' };
  return { text: value ? 'yes' : 'no', tone: value === check?.trueIsGood ? 'good' : 'bad' };
}

const TONE_CLASS = {
  good: 'check check-good',
  bad: 'check check-bad',
  neutral: 'check',
  unknown: 'check check-unknown',
};

/**
 * One result. With `csrfToken` (the verify page), a typo suggestion is a button that verifies
 * the suggested address at once.
 */
export function VerificationResultView(props: { result: VerificationResult; csrfToken?: string }) {
  const { result } = props;
  const typo = result.checks.hasTypo;
  return (
    <section class="card result" aria-labelledby="result-heading" data-result-status={result.status}>
      <h2 id="result-heading" class="result-email">
        {result.email}
      </h2>
      <p class="verdict">
        <StatusBadge status={result.status} />{' '}
        <span class="substatus">{readableSubStatus(result.subStatus)}</span>
      </p>
      <p>{result.reason}</p>
      {result.meta.verifiedVia === 'tenant' ? (
        <p class="muted" role="note">
          The domain's security gateway accepts every address; this answer came from the Microsoft 365 or
          Google Workspace tenant behind it.
        </p>
      ) : null}
      {result.meta.learnt ? <LearntNote learnt={result.meta.learnt} domain={result.meta.domain} /> : null}
      {typo ? (
        <div class="typo" role="note">
          <p>
            Did you mean{' '}
            <strong>
              {result.meta.localPart}@{typo.suggested}
            </strong>
            ?{' '}
            <span class="muted">
              ({Math.round(typo.confidence * 100)}% confidence that {typo.original} is a typo)
            </span>
          </p>
          {props.csrfToken !== undefined ? (
            <form method="post" action="/verify" data-busy-label="Checking…">
              <CsrfField token={props.csrfToken} />
              <input type="hidden" name="email" value={`${result.meta.localPart}@${typo.suggested}`} />
              <SubmitButton kind="secondary">
                Verify {result.meta.localPart}@{typo.suggested} (1 credit)
              </SubmitButton>
            </form>
          ) : null}
        </div>
      ) : null}
      <div class="score">
        <label for="result-score">Score</label>
        <meter id="result-score" min={0} max={100} low={50} high={80} optimum={100} value={result.score}>
          {result.score}
        </meter>
        <span class="score-value">{result.score}/100</span>
      </div>
      <div class="result-columns">
        <div>
          <h3>Checks</h3>
          <table class="data-table checks">
            <tbody>
              {CHECKS.map((check) => {
                const answer = checkAnswer(result, check.key);
                return (
                  <tr>
                    <th scope="row">{check.label}</th>
                    <td>
                      <span class={TONE_CLASS[answer.tone]}>{answer.text}</span>
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
        <div>
          <h3>Risk factors</h3>
          {result.riskFactors.length === 0 ? (
            <p class="muted">None.</p>
          ) : (
            <ul class="risk-factors">
              {result.riskFactors.map((factor) => (
                <li>{factor}</li>
              ))}
            </ul>
          )}
          <h3>Details</h3>
          <dl class="details">
            <dt>Domain</dt>
            <dd>{result.meta.domain}</dd>
            <dt>Mail server</dt>
            <dd>{result.meta.mxHost ?? '—'}</dd>
            <dt>Provider</dt>
            <dd>{result.meta.provider ?? '—'}</dd>
            <dt>Toxicity</dt>
            <dd>{result.toxicity} of 5</dd>
            <dt>Checked in</dt>
            <dd>{result.meta.processingTimeMs} ms</dd>
            {result.meta.cached ? (
              <>
                <dt>Answered from</dt>
                <dd>
                  your check of {result.meta.verifiedAt} (a repeat within its lifetime is not asked again)
                </dd>
              </>
            ) : null}
            {result.retryAfterSeconds !== undefined ? (
              <>
                <dt>Retry after</dt>
                <dd>{result.retryAfterSeconds} s</dd>
              </>
            ) : null}
          </dl>
        </div>
      </div>
      {result.evidence ? <EvidenceView evidence={result.evidence} open /> : null}
    </section>
  );
}

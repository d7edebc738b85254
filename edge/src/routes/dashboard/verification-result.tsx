/** @jsxImportSource hono/jsx */
// A VerificationResult as people read it: the verdict, the score, each check, the risk
// factors and a typo suggestion. Colour is never the only signal: every badge has its word.
import type { Checks, VerificationResult, VerificationStatus } from '@rcpt/shared/contract/api';

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

function CheckAnswer(props: { value: boolean | null; trueIsGood: boolean }) {
  if (props.value === null) return <span class="check check-unknown">unknown</span>;
  const good = props.value === props.trueIsGood;
  // A free provider is neither good nor bad: show it neutrally.
  return <span class={`check ${good ? 'check-good' : 'check-bad'}`}>{props.value ? 'yes' : 'no'}</span>;
}

export function VerificationResultView(props: { result: VerificationResult }) {
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
      {typo ? (
        <p class="typo" role="note">
          Did you mean{' '}
          <strong>
            {result.meta.localPart}@{typo.suggested}
          </strong>
          ?{' '}
          <span class="muted">
            ({Math.round(typo.confidence * 100)}% confidence that {typo.original} is a typo)
          </span>
        </p>
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
              {CHECKS.map((check) => (
                <tr>
                  <th scope="row">{check.label}</th>
                  <td>
                    {check.key === 'isFreeProvider' ? (
                      <span class="check">{result.checks.isFreeProvider ? 'yes' : 'no'}</span>
                    ) : (
                      <CheckAnswer value={result.checks[check.key]} trueIsGood={check.trueIsGood} />
                    )}
                  </td>
                </tr>
              ))}
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
    </section>
  );
}

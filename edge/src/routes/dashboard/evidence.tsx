/** @jsxImportSource hono/jsx */
// The evidence behind an SMTP answer as people read it (docs/verdicts.md, "Evidence"): where
// rcpt spoke from and to, and the dialogue as a mail administrator reads a session log — what
// rcpt sent (C:) and what the server answered (S:), with the time of each step. Every address
// but the result's own is already masked in the evidence itself.
import type { Evidence, EvidenceStep } from '@rcpt/shared/contract/prober';
import { replyLine } from '@rcpt/shared/verify/evidence';

/** The dialogue as log lines, `+12 ms C: RCPT TO:<…>` and `+15 ms S: 250 2.1.5 Ok`. */
export function dialogueLines(dialogue: readonly EvidenceStep[]): string[] {
  return dialogue.flatMap((step) => [
    ...(step.command === null ? [] : [`+${step.atMs} ms C: ${step.command}`]),
    ...(step.reply ? [`+${step.atMs + (step.tookMs ?? 0)} ms S: ${replyLine(step.reply)}`] : []),
  ]);
}

/** One result's evidence, folded: the facts, then the dialogue. */
export function EvidenceView(props: { evidence: Evidence; open?: boolean }) {
  const { evidence } = props;
  return (
    <details class="evidence" open={props.open}>
      <summary>SMTP evidence</summary>
      <dl class="details">
        <dt>Mail server</dt>
        <dd>
          {evidence.mxHost ?? '—'} {evidence.mxIp ? `[${evidence.mxIp}]` : ''}
        </dd>
        <dt>Sent from</dt>
        <dd>
          {evidence.egress ?? '—'}
          {evidence.region ? ` (region ${evidence.region})` : ''}
        </dd>
        <dt>TLS</dt>
        <dd>
          {evidence.tls
            ? `${evidence.tls.version ?? 'yes'}${evidence.tls.cipher ? `, ${evidence.tls.cipher}` : ''}${
                evidence.tls.certificateVerified ? '' : ' (certificate not verified)'
              }`
            : 'none (plaintext)'}
        </dd>
        <dt>Started</dt>
        <dd>
          {evidence.startedAt}, {evidence.durationMs} ms
        </dd>
        {evidence.ended ? (
          <>
            <dt>Ended early</dt>
            <dd>{evidence.ended}</dd>
          </>
        ) : null}
      </dl>
      <pre class="dialogue">{dialogueLines(evidence.dialogue).join('\n')}</pre>
      <p class="muted">
        Other addresses in the session (rcpt's sender, the made-up address of the catch-all test, other
        recipients) are shown as ***@domain.
        {evidence.omittedSteps > 0
          ? ` ${evidence.omittedSteps} step${evidence.omittedSteps === 1 ? '' : 's'} left out to keep it short.`
          : ''}
      </p>
    </details>
  );
}

// The SMTP dialogue of one session as it happens, for the evidence behind each address's answer
// (docs/verdicts.md, "Evidence"): every command with its reply and when each was sent and
// answered. Replies come in the order of the commands (RFC 2920 §3.1 keeps that order even
// when commands are pipelined), so each reply belongs to the oldest command still owed one.
import type { SmtpReply } from '@rcpt/shared/contract/prober';
import type { DialogueStep } from '@rcpt/shared/verify/evidence';

// A session sends at most a few hundred commands (MAIL, RSET and RCPTs in transactions of 50);
// past this, a server that sends replies nobody asked for records nothing more.
const MAX_STEPS = 1_000;

export class DialogueRecorder {
  /** When the session began connecting, ms since the epoch. */
  readonly startedAt = Date.now();
  readonly steps: DialogueStep[] = [];
  /** Why the session ended early; null while it has not. */
  ended: string | null = null;
  readonly #origin = performance.now();
  #endedAt: number | null = null;
  /** Steps still owed a reply, oldest first. */
  readonly #owed: DialogueStep[] = [];

  /** The connection is up: the greeting is the first reply owed. */
  connected(): void {
    this.#owe(null);
  }

  sent(command: string, path?: string): void {
    this.#owe(command, path);
  }

  /** A reply arrived at `at` (performance.now()). */
  replied(reply: SmtpReply, at: number): void {
    const step =
      this.#owed.shift() ??
      this.#add({ atMs: this.#sinceStart(at), command: null, reply: null, tookMs: null });
    if (!step) return;
    step.reply = reply;
    step.tookMs = Math.max(0, Math.round(at - this.#origin - step.atMs));
  }

  /** The session failed: why, once. */
  failed(why: string): void {
    this.ended ??= why;
  }

  /** The session is over: its length is fixed. Idempotent. */
  finish(): void {
    this.#endedAt ??= performance.now();
  }

  get durationMs(): number {
    return Math.max(0, Math.round((this.#endedAt ?? performance.now()) - this.#origin));
  }

  #owe(command: string | null, path?: string): void {
    const step = this.#add({
      atMs: this.#sinceStart(performance.now()),
      command,
      ...(path !== undefined ? { path } : {}),
      reply: null,
      tookMs: null,
    });
    if (step) this.#owed.push(step);
  }

  #add(step: DialogueStep): DialogueStep | null {
    if (this.steps.length >= MAX_STEPS) return null;
    this.steps.push(step);
    return step;
  }

  #sinceStart(at: number): number {
    return Math.max(0, Math.round(at - this.#origin));
  }
}

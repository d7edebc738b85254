// Brakes on password guessing and sign-up floods: attempts per client IP and per account
// email, each counted by its own KeyLimiter object. The IP is checked first so that a
// flood from one address does not also use up its victims' per-email allowance.
import type { KeyLimiter } from '../objects/key-limiter.ts';
import { normaliseAccountEmail } from './dashboard-accounts.ts';

export const SIGN_IN_LIMITS = { perIp: 10, perEmail: 5, windowMs: 60_000 } as const;

/** `password`: the current password checked by a password change, a guess like any other. */
export type SignInAction = 'login' | 'signup' | 'password';

export type SignInAdmission = { allowed: true } | { allowed: false; retryAfterSeconds: number };

export async function admitSignInAttempt(
  limiters: DurableObjectNamespace<KeyLimiter>,
  attempt: { action: SignInAction; clientIp: string; email: string },
): Promise<SignInAdmission> {
  const subjects: [string, number][] = [
    [`dashboard-${attempt.action}:ip:${attempt.clientIp}`, SIGN_IN_LIMITS.perIp],
    [`dashboard-${attempt.action}:email:${normaliseAccountEmail(attempt.email)}`, SIGN_IN_LIMITS.perEmail],
  ];
  for (const [subject, limit] of subjects) {
    const decision = await limiters.get(limiters.idFromName(subject)).hit(limit, SIGN_IN_LIMITS.windowMs);
    if (!decision.allowed) return { allowed: false, retryAfterSeconds: decision.resetSeconds };
  }
  return { allowed: true };
}

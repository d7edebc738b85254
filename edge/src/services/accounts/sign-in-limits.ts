// Brakes on the dashboard's forms, each subject counted by its own KeyLimiter object: password
// guessing and sign-up floods per client network and per account email, password reset requests
// per client network only (the network is checked
// first so that a flood from one network does not also use up its victims' per-email
// allowance), and changes to a signed-in account (keys, webhook URL and secret, settings) per
// account, each of which writes to D1.
//
// The network of a sign-in or a password check is the address itself for IPv4 and its /64
// for IPv6 (one customer's allocation, client-network.ts): a wider IPv4 key would let one
// guesser lock out a whole office. Sign-ups are counted per IPv4 /24 and IPv6 /64 over an
// hour, because every account is worth its free credits: farming them takes many networks;
// reset requests too, since each sends an email.
import type { KeyLimiter } from '../../objects/key-limiter.ts';
import { normaliseAccountEmail } from './account-email.ts';
import { networkPrefix, type PrefixLengths } from './client-network.ts';

export const SIGN_IN_LIMITS = { perIp: 10, perEmail: 5, windowMs: 60_000 } as const;
export const SIGN_UP_LIMITS = { perNetwork: 10, windowMs: 3_600_000 } as const;
/** Password reset links asked for from one network (each mailbox also has its email limits). */
export const RESET_LIMITS = { perNetwork: 10, windowMs: 3_600_000 } as const;
/** Key creation and revocation, webhook URL and secret, settings: together, per account. */
export const ACCOUNT_CHANGE_LIMITS = { perAccount: 10, windowMs: 60_000 } as const;

/**
 * `password`: the current password checked by a password change, a guess like any other;
 * `reset`: a password reset link asked for.
 */
export type SignInAction = 'login' | 'signup' | 'password' | 'reset';

export type SignInAdmission = { allowed: true } | { allowed: false; retryAfterSeconds: number };

const NETWORK: Record<SignInAction, PrefixLengths> = {
  login: { v4: 32, v6: 64 },
  password: { v4: 32, v6: 64 },
  signup: { v4: 24, v6: 64 },
  reset: { v4: 24, v6: 64 },
};

/** Actions counted per network over an hour rather than per address over a minute. */
const HOURLY: Partial<Record<SignInAction, { perNetwork: number; windowMs: number }>> = {
  signup: SIGN_UP_LIMITS,
  reset: RESET_LIMITS,
};

export async function admitSignInAttempt(
  limiters: DurableObjectNamespace<KeyLimiter>,
  attempt: { action: SignInAction; clientIp: string; email: string },
): Promise<SignInAdmission> {
  const network = networkPrefix(attempt.clientIp, NETWORK[attempt.action]);
  const hourly = HOURLY[attempt.action];
  const perNetwork = hourly
    ? { limit: hourly.perNetwork, windowMs: hourly.windowMs }
    : { limit: SIGN_IN_LIMITS.perIp, windowMs: SIGN_IN_LIMITS.windowMs };
  const subjects: [string, { limit: number; windowMs: number }][] = [
    [`dashboard-${attempt.action}:net:${network}`, perNetwork],
  ];
  // A reset request is not counted per email: anyone may ask for anyone's address, so an
  // allowance per email would be one strangers spend to refuse its owner. What a reset request
  // can send to a mailbox is bounded by password-reset.ts instead.
  if (attempt.action !== 'reset') {
    subjects.push([
      `dashboard-${attempt.action}:email:${normaliseAccountEmail(attempt.email)}`,
      { limit: SIGN_IN_LIMITS.perEmail, windowMs: SIGN_IN_LIMITS.windowMs },
    ]);
  }
  return admitEach(limiters, subjects);
}

/** A signed-in account's change of its keys, webhook or settings (ACCOUNT_CHANGE_LIMITS). */
export async function admitAccountChange(
  limiters: DurableObjectNamespace<KeyLimiter>,
  accountId: string,
): Promise<SignInAdmission> {
  return admitEach(limiters, [
    [
      `dashboard-change:account:${accountId}`,
      { limit: ACCOUNT_CHANGE_LIMITS.perAccount, windowMs: ACCOUNT_CHANGE_LIMITS.windowMs },
    ],
  ]);
}

/** Counts the attempt against each subject in turn; the first one full refuses it. */
async function admitEach(
  limiters: DurableObjectNamespace<KeyLimiter>,
  subjects: readonly [string, { limit: number; windowMs: number }][],
): Promise<SignInAdmission> {
  for (const [subject, { limit, windowMs }] of subjects) {
    const decision = await limiters.get(limiters.idFromName(subject)).hit(limit, windowMs);
    if (!decision.allowed) return { allowed: false, retryAfterSeconds: decision.resetSeconds };
  }
  return { allowed: true };
}

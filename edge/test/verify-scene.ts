// A single call's world for edge tests: DNS through the shared domain facts, a scripted prober,
// a clock the test moves, and `verifyForCaller` as a route calls it, at the caller's desk.
import { env } from 'cloudflare:workers';
import type { ProbeRequest, SmtpReply } from '@rcpt/shared/contract/prober';
import type { DnsOutcome, ProbeOutcome } from '@rcpt/shared/verify/inputs';
import type { ProbeGateway, VerifyDeps } from '@rcpt/shared/verify/verify-address';
import type { Caller } from '../src/services/keys/api-keys.ts';
import { createApiKey } from '../src/services/keys/api-keys.ts';
import { deskOf, settleDesk } from '../src/services/money/account-desk.ts';
import { utcDayStart } from '../src/services/money/quotas.ts';
import type { DomainFactsStore } from '../src/services/verify/domain-facts.ts';
import { verifyForCaller } from '../src/services/verify/single-verification.ts';
import { type FactsWorld, factsWorld } from './domain-facts.ts';
import { db, newCaller, quotas } from './fixtures.ts';

export const ACCEPTED: SmtpReply = { code: 250, enhanced: '2.1.5', text: 'OK' };
export const NO_SUCH_USER: SmtpReply = { code: 550, enhanced: '5.1.1', text: 'No such user' };

/** A prober that answers every address with `rcpt` (and the made-up one with `catchAll`), and counts its probes. */
export class ScriptedProber implements ProbeGateway {
  rcpt: SmtpReply = ACCEPTED;
  catchAll: SmtpReply | null = NO_SUCH_USER;
  /** rcpt's own failure: no prober answered (the hub's `unavailable`). */
  down = false;
  readonly probes: ProbeRequest[] = [];

  /** Set: each probe answers only once the test resolves this (a server slower than any budget). */
  held: Promise<void> | null = null;

  async probe(request: ProbeRequest): Promise<ProbeOutcome> {
    this.probes.push(request);
    if (this.held) await this.held;
    if (this.down) return { kind: 'unavailable', message: 'no prober connected before the deadline' };
    return {
      kind: 'report',
      report: {
        perAddress: request.emails.map((email) => ({ email, reply: this.rcpt, failure: null })),
        catchAllReply: this.catchAll,
        session: {
          mxHost: request.mx[0]?.host ?? null,
          mxIp: request.mx[0]?.ips[0] ?? null,
          tls: true,
          tlsError: null,
          smtputf8: false,
          durationMs: 5,
        },
      },
    };
  }
}

export function routeVia(host: string): DnsOutcome {
  return { kind: 'mx', dnsType: 'MX', mx: [{ host, preference: 10, ips: ['127.0.0.1'] }] };
}

/** A domain no other test uses: the facts table is shared by the whole file. */
export function newDomain(suffix = 'cache.test'): string {
  return `d${crypto.randomUUID().slice(0, 8)}.${suffix}`;
}

export async function callerOf(mode: 'live' | 'test', accountId?: string): Promise<Caller> {
  if (accountId) {
    const maxActiveKeys = quotas().apiKeys;
    const key = await createApiKey(db(), {
      accountId,
      name: 'second key',
      mode,
      maxActiveKeys,
      now: Date.now(),
    });
    return { accountId, apiKeyId: key.id, mode, creditBalance: 0 };
  }
  const created = await newCaller({ credits: 20, mode });
  return { accountId: created.accountId, apiKeyId: created.keyId, mode, creditBalance: 20 };
}

/**
 * One scene: DNS, a prober and a clock shared by every call, a fresh facts store per call (as per
 * request). The clock starts at 10:00 UTC of today: the desk's own alarm reads the real time (it
 * gives back charges left open 5 minutes and forgets verdicts after 7 days), and a test moves it
 * hours at most within one UTC month.
 */
export function scene(route: DnsOutcome) {
  let clock = utcDayStart(Date.now()) + 10 * 3_600_000;
  const world: FactsWorld = factsWorld(route, () => clock);
  const prober = new ScriptedProber();
  const tenantProber = new ScriptedProber();
  const background: Promise<unknown>[] = [];
  const deps = (facts: DomainFactsStore): VerifyDeps => ({
    mailRoute: (domain) => facts.mailRoute(domain),
    prober: facts.probing(prober),
    tenants: { detect: (domain, mxHosts) => facts.tenant(domain, mxHosts), prober: tenantProber },
    mailFrom: 'verify@rcpt.test',
    helo: 'rcpt.test',
    timeoutMs: 3000,
    now: () => clock,
  });
  return {
    world,
    prober,
    tenantProber,
    now: () => clock,
    advance: (ms: number) => {
      clock += ms;
    },
    /** Work the call left running after its answer (its `waitUntil`). */
    background,
    verify: async (
      caller: Caller,
      email: string,
      options: { fresh?: boolean; answerWithinMs?: number } = {},
    ) => {
      const facts = world.store();
      const requestId = `req_${crypto.randomUUID()}`;
      const answer = await verifyForCaller({
        ...(options.answerWithinMs === undefined ? {} : { answerBy: clock + options.answerWithinMs }),
        background: (work) => background.push(work),
        db: db(),
        deps: deps(facts),
        facts,
        caller,
        email,
        fresh: options.fresh ?? false,
        requestId,
        quotas: quotas(),
        now: clock,
        desk: deskOf(env.ACCOUNT_DESK, caller.accountId),
      });
      // What the desk answered is written to D1, where the tests read history and the ledger, and
      // its credits given back: nothing of a scene is left to a desk's alarm after its test.
      await settleDesk(env.ACCOUNT_DESK, caller.accountId, { release: true });
      return { ...answer, requestId };
    },
  };
}

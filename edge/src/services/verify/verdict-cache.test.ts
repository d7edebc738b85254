// Stable answers on the real local D1: each account's verdicts answered again while they last,
// charged like any answer, and the domain facts every account shares. The clock is the test's.
import type { SmtpReply } from '@rcpt/shared/contract/prober';
import { TENANT_TTL_MS } from '@rcpt/shared/dns/mail-tenant';
import { describe, expect, it } from 'vitest';
import { balanceOf, db, ledgerOf } from '../../../test/fixtures.ts';
import { ACCEPTED, callerOf, NO_SUCH_USER, newDomain, routeVia, scene } from '../../../test/verify-scene.ts';
import { listHistory } from '../../storage/verifications.ts';

const GREYLISTED: SmtpReply = { code: 450, enhanced: '4.2.0', text: 'Greylisted, try again later' };
const GREYLISTED_FOR_90_S: SmtpReply = {
  code: 450,
  enhanced: '4.2.0',
  text: 'Greylisted, please try again in 90 seconds',
};
const TEMPORARY_ERROR: SmtpReply = { code: 451, enhanced: '4.3.0', text: 'Temporary lookup failure' };

describe('the account verdict cache', () => {
  it('answers a repeated address from the cache, marked, with the same verdict, and charges each call once', async () => {
    const domain = newDomain();
    const { prober, verify, advance } = scene(routeVia(`mx.${domain}`));
    const caller = await callerOf('live');
    const first = await verify(caller, `alice@${domain}`);
    advance(60_000);
    // Another spelling of the same address: the domain's case does not matter (RFC 5321 §2.4).
    const second = await verify(caller, `alice@${domain.toUpperCase()}`);

    expect(first.result.meta.cached).toBe(false);
    expect(second.result.meta.cached).toBe(true);
    expect(prober.probes).toHaveLength(1);
    const { meta: firstMeta, ...firstVerdict } = first.result;
    const { meta: secondMeta, ...secondVerdict } = second.result;
    expect(secondVerdict).toEqual(firstVerdict);
    expect(secondMeta).toEqual({ ...firstMeta, cached: true });
    expect(second.creditsRemaining).toBe(18);
    expect(await balanceOf(caller.accountId)).toBe(18);
    expect(await ledgerOf(caller.accountId)).toEqual([
      { delta: 20, reason: expect.any(String), reference: expect.any(String) },
      { delta: -1, reason: 'verify', reference: first.requestId },
      { delta: -1, reason: 'verify', reference: second.requestId },
    ]);
    const history = await listHistory(db(), caller.accountId, { mode: 'live' }, { offset: 0, limit: 10 });
    expect(history.rows.map((row) => [row.id, row.status])).toEqual([
      [second.requestId, 'deliverable'],
      [first.requestId, 'deliverable'],
    ]);
  });

  it('verifies again with fresh: true, and the fresh verdict is the one answered afterwards', async () => {
    const domain = newDomain();
    const { prober, verify, advance } = scene(routeVia(`mx.${domain}`));
    const caller = await callerOf('live');
    expect((await verify(caller, `bob@${domain}`)).result.status).toBe('deliverable');
    prober.rcpt = NO_SUCH_USER;
    advance(1_000);
    const fresh = await verify(caller, `bob@${domain}`, { fresh: true });
    expect(fresh.result).toMatchObject({ status: 'undeliverable', meta: { cached: false } });
    advance(1_000);
    const after = await verify(caller, `bob@${domain}`);
    expect(after.result).toMatchObject({ status: 'undeliverable', meta: { cached: true } });
    expect(prober.probes).toHaveLength(2);
    expect(await balanceOf(caller.accountId)).toBe(17);
  });

  it('keeps an unknown for minutes and a verdict for a day, counted from when it was reached', async () => {
    const domain = newDomain();
    const { prober, verify, advance } = scene(routeVia(`mx.${domain}`));
    const caller = await callerOf('live');
    prober.rcpt = TEMPORARY_ERROR;
    expect((await verify(caller, `carol@${domain}`)).result.status).toBe('unknown');
    expect((await verify(caller, `dave@${domain}`)).result.status).toBe('unknown');
    advance(9 * 60_000);
    expect((await verify(caller, `carol@${domain}`)).result.meta.cached).toBe(true);
    advance(60_000);
    // Ten minutes after it was reached, though it was answered again a minute ago.
    prober.rcpt = ACCEPTED;
    const later = await verify(caller, `carol@${domain}`);
    expect(later.result).toMatchObject({ status: 'deliverable', meta: { cached: false } });
    expect(prober.probes).toHaveLength(3);

    advance(24 * 3600_000 - 1);
    expect((await verify(caller, `carol@${domain}`)).result.meta.cached).toBe(true);
    advance(1);
    expect((await verify(caller, `carol@${domain}`)).result.meta.cached).toBe(false);
    expect(prober.probes).toHaveLength(4);
  });

  it("keeps a greylisting answer only until the server's retry point, so a retry as told is asked anew", async () => {
    const domain = newDomain();
    const { prober, verify, advance } = scene(routeVia(`mx.${domain}`));
    const caller = await callerOf('live');
    prober.rcpt = GREYLISTED_FOR_90_S;
    const first = await verify(caller, `erin@${domain}`);
    expect(first.result).toMatchObject({ subStatus: 'greylisted', retryAfterSeconds: 90 });
    advance(89_000);
    expect((await verify(caller, `erin@${domain}`)).result.meta.cached).toBe(true);
    advance(1_000);
    prober.rcpt = ACCEPTED;
    const retried = await verify(caller, `erin@${domain}`);
    expect(retried.result).toMatchObject({ status: 'deliverable', meta: { cached: false } });
    // Without a named delay, the usual greylisting delay rcpt knows (postgrey's 300 s).
    prober.rcpt = GREYLISTED;
    expect((await verify(caller, `frank@${domain}`)).result.retryAfterSeconds).toBe(300);
    advance(299_000);
    expect((await verify(caller, `frank@${domain}`)).result.meta.cached).toBe(true);
    advance(1_000);
    expect((await verify(caller, `frank@${domain}`)).result.meta.cached).toBe(false);
    expect(prober.probes).toHaveLength(4);
  });

  it("never keeps rcpt's own failure: a repeat asks again, charged, and gets the real answer", async () => {
    const domain = newDomain();
    const { prober, verify, advance } = scene(routeVia(`mx.${domain}`));
    const caller = await callerOf('live');
    prober.down = true;
    const failed = await verify(caller, `gina@${domain}`);
    expect(failed.result).toMatchObject({ status: 'unknown', subStatus: 'smtp_unavailable' });
    advance(1_000);
    const again = await verify(caller, `gina@${domain}`);
    expect(again.result).toMatchObject({ subStatus: 'smtp_unavailable', meta: { cached: false } });
    prober.down = false;
    advance(1_000);
    const real = await verify(caller, `gina@${domain}`);
    expect(real.result).toMatchObject({ status: 'deliverable', meta: { cached: false } });
    expect(prober.probes).toHaveLength(3);
    // SPEC: one credit per call whatever it returns.
    expect(await balanceOf(caller.accountId)).toBe(17);
    // A failure with `fresh` does not displace a verdict still within its lifetime.
    prober.down = true;
    advance(1_000);
    expect((await verify(caller, `gina@${domain}`, { fresh: true })).result.subStatus).toBe(
      'smtp_unavailable',
    );
    const kept = await verify(caller, `gina@${domain}`);
    expect(kept.result).toMatchObject({ status: 'deliverable', meta: { cached: true } });
    expect(kept.result.meta.verifiedAt).toBe(real.result.meta.verifiedAt);
  });

  it("charges a call the caller's budget cut short, and answers the verdict it went on to reach to the next call", async () => {
    const domain = newDomain();
    const { prober, verify, advance, background } = scene(routeVia(`mx.${domain}`));
    const caller = await callerOf('live');
    let release: () => void = () => {};
    prober.held = new Promise<void>((resolve) => {
      release = resolve;
    });
    // The scene's clock stands still: the budget is the real 20 ms the timer waits.
    const cut = await verify(caller, `ivy@${domain}`, { answerWithinMs: 20 });
    expect(cut.result).toMatchObject({ status: 'unknown', subStatus: 'timeout_exceeded' });
    // SPEC §1: a single verification costs 1 credit whatever status it returns.
    expect(cut.creditsRemaining).toBe(19);
    expect(await balanceOf(caller.accountId)).toBe(19);
    expect(await ledgerOf(caller.accountId)).toEqual([
      { delta: 20, reason: expect.any(String), reference: expect.any(String) },
      { delta: -1, reason: 'verify', reference: cut.requestId },
    ]);
    // Not a verdict: asked again before the check ends, the address is verified anew.
    expect(background).toHaveLength(1);
    release();
    await Promise.all(background);
    advance(1_000);
    const next = await verify(caller, `ivy@${domain}`);
    expect(next.result).toMatchObject({ status: 'deliverable', meta: { cached: true } });
    expect(next.creditsRemaining).toBe(18);
    expect(prober.probes).toHaveLength(1);
    const history = await listHistory(db(), caller.accountId, { mode: 'live' }, { offset: 0, limit: 10 });
    expect(history.rows.map((row) => [row.id, row.status])).toEqual([
      [next.requestId, 'deliverable'],
      [cut.requestId, 'deliverable'],
    ]);
  });

  it('never keeps a resolver failure: neither the verdict nor the route, and DNS is asked again', async () => {
    const domain = newDomain();
    const { world, prober, verify, advance } = scene({ kind: 'error', message: 'SERVFAIL' });
    const caller = await callerOf('live');
    const failed = await verify(caller, `hal@${domain}`);
    expect(failed.result).toMatchObject({ status: 'unknown', subStatus: 'dns_error' });
    expect(await world.store().facts(domain)).toBeNull();
    world.route = routeVia(`mx.${domain}`);
    advance(1_000);
    const real = await verify(caller, `hal@${domain}`);
    expect(real.result).toMatchObject({ status: 'deliverable', meta: { cached: false } });
    expect(world.resolutions).toEqual([domain, domain]);
    expect(prober.probes).toHaveLength(1);
  });

  it('keeps test-mode and live-mode verdicts apart', async () => {
    const domain = newDomain();
    const { prober, verify } = scene(routeVia(`mx.${domain}`));
    const live = await callerOf('live');
    const test = await callerOf('test', live.accountId);
    prober.rcpt = NO_SUCH_USER;
    // The magic local part answers `deliverable` to a test key, whatever the live world says.
    const email = `deliverable@${domain}`;
    const answers = [];
    for (const caller of [live, test, test, live]) {
      const { result } = await verify(caller, email);
      answers.push([result.status, result.meta.cached]);
    }
    expect(answers).toEqual([
      ['undeliverable', false],
      ['deliverable', false],
      ['deliverable', true],
      ['undeliverable', true],
    ]);
    expect(prober.probes).toHaveLength(1);
  });

  it('keeps each account to its own verdicts, while every account shares the domain facts', async () => {
    const domain = newDomain();
    const { prober, verify, world } = scene(routeVia(`mx.${domain}`));
    const first = await callerOf('live');
    const second = await callerOf('live');
    prober.catchAll = ACCEPTED;
    expect((await verify(first, `erin@${domain}`)).result).toMatchObject({
      subStatus: 'catch_all',
      meta: { cached: false },
    });
    expect((await verify(first, `erin@${domain}`)).result.meta.cached).toBe(true);
    // This probe does not test a made-up address (as a prober that remembers the domain does
    // not): the catch-all answer comes from the shared facts.
    prober.catchAll = null;
    const other = await verify(second, `erin@${domain}`);
    expect(other.result).toMatchObject({
      subStatus: 'catch_all',
      checks: { isCatchAll: true },
      meta: { cached: false },
    });
    expect(prober.probes).toHaveLength(2);
    expect(world.resolutions).toEqual([domain]);
    expect(await balanceOf(first.accountId)).toBe(18);
    expect(await balanceOf(second.accountId)).toBe(19);
  });

  it('resolves an expired route again before answering from the cache, and verifies again when the route moved', async () => {
    const domain = newDomain();
    const { prober, verify, advance, world } = scene(routeVia(`mx1.${domain}`));
    const caller = await callerOf('live');
    await verify(caller, `frank@${domain}`);
    advance(world.ttlSeconds * 1000);
    // The route's TTL has run out; DNS says the same: the verdict stands.
    expect((await verify(caller, `frank@${domain}`)).result.meta.cached).toBe(true);
    expect(world.resolutions).toEqual([domain, domain]);
    advance(60_000);
    expect((await verify(caller, `frank@${domain}`)).result.meta.cached).toBe(true);
    expect(world.resolutions).toHaveLength(2);

    world.route = routeVia(`mx2.${domain}`);
    advance(world.ttlSeconds * 1000);
    const moved = await verify(caller, `frank@${domain}`);
    expect(moved.result).toMatchObject({ meta: { cached: false, mxHost: `mx2.${domain}` } });
    expect(world.resolutions).toHaveLength(3);
    expect(prober.probes.map((probe) => probe.mx[0]?.host)).toEqual([`mx1.${domain}`, `mx2.${domain}`]);
  });
});

describe('the tenant behind a catch-all gateway, in the domain facts', () => {
  /** A domain behind Proofpoint whose gateway accepts every address. */
  function gatewayScene() {
    const domain = newDomain();
    const inboundHost = `${domain.replaceAll('.', '-')}.mail.protection.outlook.com`;
    const current = scene(routeVia(`mx0a-${domain.split('.')[0]}.pphosted.com`));
    current.prober.catchAll = ACCEPTED;
    current.world.tenant = {
      kind: 'tenant',
      tenant: { provider: 'microsoft', inboundHost },
      signal: 'SPF include:spf.protection.outlook.com',
      mx: [{ host: inboundHost, preference: 0, ips: ['192.0.2.30'] }],
    };
    return { ...current, domain, inboundHost };
  }

  it("asks the tenant's inbound host, whose answer decides, and keeps the tenant for its TTL", async () => {
    const { domain, inboundHost, world, prober, tenantProber, verify, advance } = gatewayScene();
    tenantProber.rcpt = NO_SUCH_USER;
    const caller = await callerOf('live');
    const first = await verify(caller, `alice@${domain}`);
    expect(first.result).toMatchObject({
      status: 'undeliverable',
      subStatus: 'mailbox_not_found',
      checks: { isCatchAll: true },
      meta: { verifiedVia: 'tenant' },
    });
    expect(tenantProber.probes.map((request) => request.mx[0]?.host)).toEqual([inboundHost]);

    advance(TENANT_TTL_MS - 1);
    await verify(caller, `alice@${domain}`, { fresh: true });
    expect(world.detections).toEqual([domain]);
    expect(tenantProber.probes).toHaveLength(2);

    advance(1);
    await verify(caller, `alice@${domain}`, { fresh: true });
    expect(world.detections).toEqual([domain, domain]);
    // The gateway was asked each time; the domain's catch-all fact is the gateway's, never the tenant's.
    expect(prober.probes).toHaveLength(3);
    expect((await world.store().facts(domain))?.catchAll?.value).toEqual(ACCEPTED);
  });

  it('keeps "no tenant" too, and the gateway answer stands', async () => {
    const { domain, world, tenantProber, verify } = gatewayScene();
    world.tenant = { kind: 'none', why: 'no microsoft or google tenant signal in SPF, TXT or autodiscover' };
    const caller = await callerOf('live');
    const first = await verify(caller, `alice@${domain}`);
    await verify(caller, `bob@${domain}`);
    expect(first.result).toMatchObject({
      status: 'risky',
      subStatus: 'catch_all',
      meta: { verifiedVia: 'mx' },
    });
    expect(world.detections).toEqual([domain]);
    expect(tenantProber.probes).toEqual([]);
  });

  it('does not keep a detection whose DNS failed', async () => {
    const { domain, world, verify } = gatewayScene();
    world.tenant = { kind: 'error', message: 'TXT lookup failed (servfail)' };
    const caller = await callerOf('live');
    await verify(caller, `alice@${domain}`);
    await verify(caller, `bob@${domain}`);
    expect(world.detections).toEqual([domain, domain]);
    expect((await world.store().facts(domain))?.tenant ?? null).toBeNull();
  });

  it('detects again when the kept inbound host no longer resolves', async () => {
    const { domain, world, tenantProber, verify } = gatewayScene();
    const caller = await callerOf('live');
    await verify(caller, `alice@${domain}`);
    world.hostRoute = () => ({ kind: 'nxdomain' });
    world.tenant = { kind: 'none', why: 'the tenant moved away' };
    const second = await verify(caller, `bob@${domain}`);
    expect(world.detections).toEqual([domain, domain]);
    expect(tenantProber.probes).toHaveLength(1);
    expect(second.result).toMatchObject({ subStatus: 'catch_all', meta: { verifiedVia: 'mx' } });
  });
});

import { runDurableObjectAlarm } from 'cloudflare:test';
import type { ProbeRequest } from '@rcpt/shared/contract/prober';
import { describe, expect, it } from 'vitest';
import { connectProber, hubOf, newProberToken, reportFor, startFakeProber } from '../../test/fake-prober.ts';
import { revokeCredentialForTest } from '../../test/fixtures.ts';

const request: ProbeRequest = {
  emails: ['alice@accept.test'],
  domain: 'accept.test',
  mx: [{ host: 'mx.accept.test', preference: 10, ips: ['127.0.0.2'] }],
  mailFrom: 'probe@rcpt.test',
  helo: 'rcpt.test',
  timeoutMs: 2000,
  transcript: false,
};

describe('ProberHub link', () => {
  it('refuses a missing, malformed, unknown or revoked token with a JSON 401', async () => {
    const token = await newProberToken();
    await revokeCredentialForTest('prober_tokens', token.id);
    for (const authorization of [
      '',
      'Bearer nope',
      `Bearer rkp_${'A'.repeat(43)}`,
      `Bearer ${token.secret}`,
    ]) {
      const response = await connectProberWith(authorization);
      expect(response.status).toBe(401);
      expect(await response.json()).toMatchObject({ success: false, code: 'UNAUTHORIZED' });
    }
  });

  it('refuses a request that is not a WebSocket upgrade', async () => {
    const token = await newProberToken();
    const response = await connectProberWith(`Bearer ${token.secret}`, false);
    expect(response.status).toBe(400);
  });

  it('accepts a valid token with 101 Switching Protocols', async () => {
    const token = await newProberToken();
    const response = await connectProber(token.secret, 'hub-accept');
    expect(response.status).toBe(101);
    response.webSocket?.accept();
    response.webSocket?.close(1000, 'done');
  });
});

describe('ProberHub probes', () => {
  it('forwards a probe to a connected prober and returns its report', async () => {
    const prober = await startFakeProber('hub-roundtrip', (probe) =>
      reportFor(probe, 250, '2.1.5', 'OK', 550),
    );
    const outcome = await hubOf('hub-roundtrip').probe(request, 3000);
    expect(outcome.kind).toBe('report');
    if (outcome.kind !== 'report') return;
    expect(outcome.report.perAddress[0]?.reply?.code).toBe(250);
    expect(prober.probes[0]).toMatchObject({ type: 'probe', emails: request.emails, mx: request.mx });
    // The prober gets less time than the hub waits, so its answer can still arrive.
    expect(prober.probes[0]?.timeoutMs).toBeLessThan(3000);
    prober.close();
  });

  it('answers unavailable at once when no prober is connected', async () => {
    expect(await hubOf('hub-empty').probe(request, 3000)).toEqual({
      kind: 'unavailable',
      message: 'no prober connected',
    });
  });

  it('times out when the prober never answers', async () => {
    const prober = await startFakeProber('hub-silent', () => 'ignore');
    expect(await hubOf('hub-silent').probe(request, 600)).toEqual({ kind: 'timeout' });
    prober.close();
  });

  it("answers unavailable, not timeout, when no prober was free before the deadline (rcpt's failure)", async () => {
    const busy = await startFakeProber('hub-busy', () => 'ignore', 1);
    const hub = hubOf('hub-busy');
    const holding = hub.probe(request, 5000);
    for (let tries = 0; tries < 200 && (await hub.status())[0]?.inFlight !== 1; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    expect(await hub.probe(request, 600)).toEqual({
      kind: 'unavailable',
      message: 'no prober was free before the deadline',
    });
    busy.close();
    await holding;
  });

  it('retries once on another prober when the first refuses', async () => {
    const refusing = await startFakeProber('hub-retry', () => ({ error: 'over capacity' }));
    const working = await startFakeProber('hub-retry', (probe) => reportFor(probe, 250, null, 'OK'));
    const outcome = await hubOf('hub-retry').probe(request, 3000);
    expect(outcome.kind).toBe('report');
    expect(refusing.probes.length + working.probes.length).toBeGreaterThanOrEqual(1);
    expect(working.probes).toHaveLength(1);
    refusing.close();
    working.close();
  });

  it('does not send work to a draining prober', async () => {
    const draining = await startFakeProber('hub-drain', (probe) => reportFor(probe, 250, null, 'OK'));
    draining.send({ type: 'drain', id: 'drain-1' });
    // The drain is processed before the next message on the same socket; a status read orders after it.
    for (
      let tries = 0;
      tries < 200 && !(await hubOf('hub-drain').status()).every((prober) => prober.draining);
      tries++
    ) {
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    expect(await hubOf('hub-drain').probe(request, 1000)).toMatchObject({ kind: 'unavailable' });
    expect(draining.probes).toHaveLength(0);
    draining.close();
  });

  it('sends many probes at once and matches each answer to its request', async () => {
    const prober = await startFakeProber(
      'hub-many',
      (probe) => reportFor(probe, probe.emails[0]?.startsWith('bad') ? 550 : 250, null, 'x'),
      50,
    );
    const requests = Array.from({ length: 20 }, (_, index) => ({
      ...request,
      emails: [`${index % 2 ? 'bad' : 'good'}${index}@accept.test`],
    }));
    const outcomes = await hubOf('hub-many').probeMany(requests, 3000);
    outcomes.forEach((outcome, index) => {
      expect(outcome.kind).toBe('report');
      if (outcome.kind === 'report')
        expect(outcome.report.perAddress[0]?.reply?.code).toBe(index % 2 ? 550 : 250);
    });
    prober.close();
  });
});

async function connectProberWith(authorization: string, upgrade = true): Promise<Response> {
  const { exports } = await import('cloudflare:workers');
  const headers: Record<string, string> = upgrade ? { Upgrade: 'websocket' } : {};
  if (authorization) headers.Authorization = authorization;
  return exports.default.fetch('http://edge.test/internal/probers/connect', { headers });
}

describe('ProberHub token revocation', () => {
  it('drops a connected prober whose token is revoked, and keeps the others', async () => {
    const kept = await startFakeProber('hub-revoke', (probe) => reportFor(probe, 250, null, 'OK'));
    const revoked = await startFakeProber('hub-revoke', (probe) => reportFor(probe, 250, null, 'OK'));
    await revokeCredentialForTest('prober_tokens', revoked.tokenId);
    expect(await hubOf('hub-revoke').dropRevokedProbers()).toBe(1);
    expect(await revoked.closed).toMatchObject({ code: 4001 });
    const status = await hubOf('hub-revoke').status();
    expect(status.filter((prober) => prober.ready)).toHaveLength(1);
    expect((await hubOf('hub-revoke').probe(request, 2000)).kind).toBe('report');
    expect(kept.probes).toHaveLength(1);
    kept.close();
  });

  it('checks tokens on an alarm that runs while probers are connected', async () => {
    const prober = await startFakeProber('hub-alarm', (probe) => reportFor(probe, 250, null, 'OK'));
    await revokeCredentialForTest('prober_tokens', prober.tokenId);
    expect(await runDurableObjectAlarm(hubOf('hub-alarm'))).toBe(true);
    expect(await prober.closed).toMatchObject({ code: 4001, reason: 'token revoked' });
  });
});

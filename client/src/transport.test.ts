import { describe, expect, it } from 'vitest';
import { type ScriptedServer, scriptedServer } from '../test/scripted-api.ts';
import { errorOf, RcptQuotaError } from './errors.ts';
import { RetryingTransport } from './transport.ts';

function transportFor(server: ScriptedServer, maxRetries = 3) {
  const sleeps: number[] = [];
  const transport = new RetryingTransport({
    fetch: server.fetch,
    maxRetries,
    sleep: async (ms) => {
      sleeps.push(ms);
    },
    random: () => 0.5,
  });
  return { transport, sleeps };
}

const post = (headers: Record<string, string> = {}) =>
  new Request('http://127.0.0.1/api/v1/verify', { method: 'POST', body: '{"email":"a@b.test"}', headers });

describe('the client transport', () => {
  it('waits out a 429 for as long as Retry-After says, then answers', async () => {
    const server = scriptedServer([
      new Response('{}', { status: 429, headers: { 'retry-after': '7' } }),
      new Response('{"ok":true}', { status: 200 }),
    ]);
    const { transport, sleeps } = transportFor(server);
    const response = await transport.fetch(new Request('http://127.0.0.1/api/v1/account'));
    expect(response.status).toBe(200);
    expect(sleeps).toEqual([7000]);
    expect(server.requests).toHaveLength(2);
  });

  it('answers a 429 QUOTA_EXCEEDED at once: a quota frees at midnight or when a job finishes', async () => {
    const refusal = {
      success: false,
      code: 'QUOTA_EXCEEDED',
      message: 'At most 10 lists can be in progress at once.',
      requestId: 'r-1',
      details: { quota: 'jobs_in_flight', limit: 10, used: 10, requested: 1, resetAt: null },
    };
    const server = scriptedServer([
      new Response(JSON.stringify(refusal), { status: 429, headers: { 'content-type': 'application/json' } }),
      new Response('{"ok":true}', { status: 200 }),
    ]);
    const { transport, sleeps } = transportFor(server);
    const response = await transport.fetch(post({ 'Idempotency-Key': 'k-quota' }));
    expect(response.status).toBe(429);
    expect(await response.json()).toEqual(refusal);
    expect(sleeps).toEqual([]);
    expect(server.requests).toHaveLength(1);

    const error = errorOf(response, refusal);
    expect(error).toBeInstanceOf(RcptQuotaError);
    expect(error).toMatchObject({
      code: 'QUOTA_EXCEEDED',
      quota: 'jobs_in_flight',
      limit: 10,
      used: 10,
      resetAt: null,
    });
    const daily = errorOf(response, {
      ...refusal,
      details: {
        quota: 'storage_bytes_per_day',
        limit: 5,
        used: 5,
        requested: 1,
        resetAt: '2031-05-17T00:00:00.000Z',
      },
    }) as RcptQuotaError;
    expect(daily.resetAt?.getTime()).toBe(Date.UTC(2031, 4, 17));
  });

  it('reads Retry-After as an HTTP date too', async () => {
    const at = new Date(Date.now() + 60_000).toUTCString();
    const server = scriptedServer([
      new Response('{}', { status: 429, headers: { 'retry-after': at } }),
      new Response('{}', { status: 200 }),
    ]);
    const { transport, sleeps } = transportFor(server);
    await transport.fetch(new Request('http://127.0.0.1/api/v1/account'));
    expect(sleeps[0]).toBeGreaterThan(55_000);
    expect(sleeps[0]).toBeLessThanOrEqual(60_000);
  });

  it('never repeats a POST without an Idempotency-Key after a 5xx or a lost connection', async () => {
    const failing = scriptedServer([new Response('{}', { status: 503 })]);
    expect((await transportFor(failing).transport.fetch(post())).status).toBe(503);
    expect(failing.requests).toHaveLength(1);

    const lost = scriptedServer([new TypeError('connection reset')]);
    await expect(transportFor(lost).transport.fetch(post())).rejects.toThrow('connection reset');
    expect(lost.requests).toHaveLength(1);
  });

  it('repeats a POST that carries an Idempotency-Key with the same key and body, backing off', async () => {
    const server = scriptedServer([
      new TypeError('connection reset'),
      new Response('{}', { status: 502 }),
      new Response('{"ok":true}', { status: 200 }),
    ]);
    const { transport, sleeps } = transportFor(server);
    const response = await transport.fetch(post({ 'Idempotency-Key': 'k-1' }));
    expect(response.status).toBe(200);
    expect(server.requests.map((request) => request.idempotencyKey)).toEqual(['k-1', 'k-1', 'k-1']);
    expect(new Set(server.requests.map((request) => request.body))).toEqual(
      new Set(['{"email":"a@b.test"}']),
    );
    expect(sleeps[1]).toBeGreaterThan(sleeps[0] ?? Number.POSITIVE_INFINITY);
  });

  it('gives up after maxRetries and returns the last answer', async () => {
    const server = scriptedServer([
      new Response('{}', { status: 500 }),
      new Response('{}', { status: 500 }),
      new Response('{}', { status: 500 }),
    ]);
    const { transport } = transportFor(server, 2);
    expect((await transport.fetch(new Request('http://127.0.0.1/api/v1/account'))).status).toBe(500);
    expect(server.requests).toHaveLength(3);
  });

  it('does not retry answers that will not change (400, 401, 402, 404)', async () => {
    for (const status of [400, 401, 402, 404]) {
      const server = scriptedServer([new Response('{}', { status })]);
      expect((await transportFor(server).transport.fetch(new Request('http://127.0.0.1/x'))).status).toBe(
        status,
      );
      expect(server.requests).toHaveLength(1);
    }
  });

  it('holds the next request until the rate window frees a slot when none is left', async () => {
    const server = scriptedServer([
      new Response('{}', {
        status: 200,
        headers: { 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': '9' },
      }),
      new Response('{}', {
        status: 200,
        headers: { 'x-ratelimit-remaining': '99', 'x-ratelimit-reset': '60' },
      }),
      new Response('{}', { status: 200 }),
    ]);
    const { transport, sleeps } = transportFor(server);
    await transport.fetch(new Request('http://127.0.0.1/a'));
    expect(sleeps).toEqual([]);
    await transport.fetch(new Request('http://127.0.0.1/b'));
    expect(sleeps).toHaveLength(1);
    expect(sleeps[0]).toBeGreaterThan(8_000);
    expect(sleeps[0]).toBeLessThanOrEqual(9_000);
    await transport.fetch(new Request('http://127.0.0.1/c'));
    expect(sleeps).toHaveLength(1);
  });
});

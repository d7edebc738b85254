import { createExecutionContext, waitOnExecutionContext } from 'cloudflare:test';
import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { newCaller } from '../../test/fixtures.ts';
import { createApp } from '../app.ts';

/** The D1 binding, recording the sessions opened on it and where each statement went. */
function recordingD1(d1: D1Database) {
  const record = { sessions: [] as string[], direct: 0, inSession: 0, bookmarks: [] as D1DatabaseSession[] };
  const counting = <T extends object>(target: T, onCall: () => void): T =>
    new Proxy(target, {
      get(inner, property) {
        const value = Reflect.get(inner, property, inner);
        if (property === 'prepare' || property === 'batch')
          return (...args: unknown[]) => {
            onCall();
            return Reflect.apply(value as (...args: unknown[]) => unknown, inner, args);
          };
        return typeof value === 'function' ? value.bind(inner) : value;
      },
    });
  const binding = new Proxy(
    counting(d1, () => record.direct++),
    {
      get(target, property) {
        if (property === 'withSession')
          return (constraint: string) => {
            record.sessions.push(constraint);
            const session = d1.withSession(constraint);
            record.bookmarks.push(session);
            return counting(session, () => record.inSession++);
          };
        return Reflect.get(target, property, target);
      },
    },
  );
  return { binding, record };
}

async function send(DB: D1Database, request: Request): Promise<Response> {
  const ctx = createExecutionContext();
  const response = await createApp().fetch(request, { ...env, DB }, ctx);
  await waitOnExecutionContext(ctx);
  return response;
}

describe('a request reads D1 through one session anchored at the primary', () => {
  it.each([
    {
      name: 'a single verification (key lookup, cache read, history row)',
      request: (key: string) =>
        new Request('http://edge.test/api/v1/verify', {
          method: 'POST',
          headers: { 'x-api-key': key, 'content-type': 'application/json' },
          body: JSON.stringify({ email: 'deliverable@example.com' }),
        }),
    },
    {
      name: 'a read-only route',
      request: (key: string) =>
        new Request('http://edge.test/api/v1/account', { headers: { 'x-api-key': key } }),
    },
  ])('$name', async ({ request }) => {
    const caller = await newCaller({ mode: 'test' });
    const { binding, record } = recordingD1(env.DB);
    const response = await send(binding, request(caller.apiKey));
    expect(response.status).toBe(200);
    expect(record.sessions).toEqual(['first-primary']);
    expect(record.inSession).toBeGreaterThanOrEqual(2);
    expect(record.direct).toBe(0);
    // The session's queries were answered: D1 returned a bookmark for them.
    expect(record.bookmarks[0]?.getBookmark()).toEqual(expect.any(String));
  });

  it("sees the previous request's write: a verdict is answered from the cache on the next call", async () => {
    const caller = await newCaller({ mode: 'test' });
    const verify = () =>
      new Request('http://edge.test/api/v1/verify', {
        method: 'POST',
        headers: { 'x-api-key': caller.apiKey, 'content-type': 'application/json' },
        body: JSON.stringify({ email: 'deliverable@example.com' }),
      });
    const first = await send(env.DB, verify());
    const second = await send(env.DB, verify());
    const meta = async (response: Response) =>
      ((await response.json()) as { data: { meta: { cached: boolean } } }).data.meta.cached;
    expect(await meta(first)).toBe(false);
    expect(await meta(second)).toBe(true);
  });
});

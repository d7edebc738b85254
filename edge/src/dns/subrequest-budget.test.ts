import { env } from 'cloudflare:workers';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { DohClient } from './doh-client.ts';
import { SubrequestBudget } from './subrequest-budget.ts';

afterEach(() => vi.restoreAllMocks());

describe('SubrequestBudget', () => {
  it('lets a DoH client fetch as often as the budget says, then fails its lookups without fetching', async () => {
    const passThrough = globalThis.fetch.bind(globalThis);
    const fetched = vi
      .spyOn(globalThis, 'fetch')
      .mockImplementation((input, init) => passThrough(input, init));
    const budget = new SubrequestBudget(2);
    const client = new DohClient({ urls: [env.DOH_URL], fetch: budget.fetch });
    const run = crypto.randomUUID().slice(0, 8);
    for (const name of [`a-${run}.budget.test`, `b-${run}.budget.test`])
      expect((await client.query(name, 'MX')).rcode).toBe('NXDOMAIN');
    expect(budget.left).toBe(0);
    const refused = await client.query(`c-${run}.budget.test`, 'MX');
    expect(refused).toMatchObject({ rcode: 'TRANSPORT' });
    expect(refused.rcode === 'TRANSPORT' && refused.reason).toMatch(/subrequest budget \(2\) is spent/);
    expect(fetched).toHaveBeenCalledTimes(2);
  });
});

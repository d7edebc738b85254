// Single calls with the stores far away: the real edge under wrangler, a real prober and the fake
// mail world, with RCPT_METER's distances (edge/src/meter.ts) adding 150 ms to each round trip to
// D1's primary and 10 ms to each Durable Object call, as for a caller on another continent from
// the database and near its Worker. Printed: the p50 of a cached call (the account's verdict for
// an address it asked before) and of a probed one (`fresh: true`), one client at a time, each
// with the round trips to D1 and the Durable Object calls it made (the meter's count). On
// loopback everything else is near, so the p50 is the stores' share of a call far away, over the
// floor of the local Worker: printed too are a request that touches no store (`GET /healthz`)
// and one refused after its key's object only (a body without an email: 400).
// docs/capacity.md, "Measured: a single call with D1 far away", reads these figures.

import { sumMeterLines } from '../edge/src/meter-line.ts';
import { DEV_ACCOUNT_ID } from '../scripts/stack/local-stack.ts';
import { createApiKeys, grantCredits } from '../scripts/stack/operator.ts';
import { percentile, timeConcurrently } from './latency.ts';
import type { Figure } from './run.ts';
import { benchOnWorld } from './world-stack.ts';

const D1_DELAY_MS = 150;
const DO_DELAY_MS = 10;
const CALLS = 30;

const meterLines: string[] = [];
await benchOnWorld(
  async (stack) => {
    grantCredits(stack.d1, { accountId: DEV_ACCOUNT_ID, amount: 1_000 });
    // The second key's requests count against its own rate limit, not the measured calls'.
    const [key = '', other = ''] = await createApiKeys(stack.d1, {
      accountId: DEV_ACCOUNT_ID,
      count: 2,
      mode: 'live',
    });
    const verify = (email: string, options: { fresh: boolean; cached: boolean }) => async () => {
      const response = await fetch(`${stack.baseUrl}/api/v1/verify`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': key },
        body: JSON.stringify({ email, ...(options.fresh ? { fresh: true } : {}) }),
      });
      if (response.status !== 200)
        throw new Error(`verify answered ${response.status}: ${await response.text()}`);
      const { data } = (await response.json()) as { data: { meta: { cached: boolean } } };
      if (data.meta.cached !== options.cached)
        throw new Error(`verify answered cached: ${data.meta.cached}, not ${options.cached}`);
    };
    const floor = (path: string, init: RequestInit, status: number) => async () => {
      const response = await fetch(`${stack.baseUrl}${path}`, init);
      await response.arrayBuffer();
      if (response.status !== status) throw new Error(`${path} answered ${response.status}, not ${status}`);
    };
    const figures: Figure[] = [];
    const measure = async (label: string, call: () => Promise<void>, target?: string) => {
      const before = meterLines.length;
      const times = await timeConcurrently(CALLS, 1, call);
      const counts = sumMeterLines(meterLines.slice(before));
      figures.push(
        { name: `${label}: p50`, value: percentile(times, 0.5), unit: 'ms', ...(target ? { target } : {}) },
        { name: `${label}: round trips to D1 a call`, value: counts.d1Calls / CALLS, unit: '' },
        { name: `${label}: Durable Object calls a call`, value: counts.doCalls / CALLS, unit: '' },
      );
    };
    const distance = `D1 +${D1_DELAY_MS} ms, DO +${DO_DELAY_MS} ms`;
    await verify('user1@bulk-01.test', { fresh: true, cached: false })(); // warm-up, and the verdict cached
    await measure(
      `probed single call (${distance})`,
      verify('user1@bulk-01.test', { fresh: true, cached: false }),
    );
    await measure(
      `cached single call (${distance})`,
      verify('user1@bulk-01.test', { fresh: false, cached: true }),
      '≤ 60',
    );
    await measure('a request that touches no store (GET /healthz)', floor('/healthz', {}, 200));
    await measure(
      `a request refused after its key's object only (400, ${distance})`,
      floor(
        '/api/v1/verify',
        {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-api-key': other },
          body: '{}',
        },
        400,
      ),
    );
    return figures;
  },
  {
    vars: {
      RCPT_METER: 'true',
      RCPT_METER_D1_DELAY_MS: String(D1_DELAY_MS),
      RCPT_METER_DO_DELAY_MS: String(DO_DELAY_MS),
    },
    onLog: (source, line) => {
      if (source === 'edge' && line.includes('rcpt-meter ')) meterLines.push(line);
    },
  },
);

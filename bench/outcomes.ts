// Outcomes in (docs/verdicts.md, "Outcomes"): the real edge under wrangler, a real prober and the
// fake mail world. A 2,000-address list is verified; then `POST /api/v1/outcomes` takes requests
// of 1,000 outcomes (the most one request holds), one at a time as a sending service's exporter
// would post them: first outcomes of addresses the list verified (each matched to its verdict),
// then as many of addresses never verified (each looked up and kept unmatched). Printed: outcomes
// recorded a second for each, and the time an outcome took, matching included (its two lookups
// run for every outcome, matched or not). docs/capacity.md reads these figures.

import { DEV_ACCOUNT_ID } from '../scripts/stack/local-stack.ts';
import { createApiKeys, grantCredits } from '../scripts/stack/operator.ts';
import { bulkDomainNames } from '../test/world/zone.ts';
import type { Figure } from './run.ts';
import { uploadAndWait } from './upload-and-wait.ts';
import { benchOnWorld } from './world-stack.ts';

const ADDRESSES = 2_000;
const PER_REQUEST = 1_000;

await benchOnWorld(
  async (stack) => {
    grantCredits(stack.d1, { accountId: DEV_ACCOUNT_ID, amount: ADDRESSES * 2 });
    const [key = ''] = await createApiKeys(stack.d1, { accountId: DEV_ACCOUNT_ID, count: 1, mode: 'live' });
    const domains = bulkDomainNames(50);
    const list = Array.from(
      { length: ADDRESSES },
      (_, index) => `user${index}@${domains[index % domains.length]}`,
    );
    await uploadAndWait(stack, key, list);

    const at = new Date().toISOString();
    const outcomesOf = (emails: readonly string[]) =>
      emails.map((email, index) =>
        index % 10 === 0
          ? { email, outcome: 'hard_bounce', at, diagnostic: '550 5.1.1 user unknown' }
          : { email, outcome: 'delivered', at },
      );
    const ingest = async (emails: readonly string[]) => {
      const seconds: number[] = [];
      let matched = 0;
      for (let start = 0; start < emails.length; start += PER_REQUEST) {
        const started = performance.now();
        const response = await fetch(`${stack.baseUrl}/api/v1/outcomes`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-api-key': key },
          body: JSON.stringify({ outcomes: outcomesOf(emails.slice(start, start + PER_REQUEST)) }),
        });
        if (response.status !== 200)
          throw new Error(`outcomes answered ${response.status}: ${await response.text()}`);
        const body = (await response.json()) as { recorded: number; matched: number };
        if (body.recorded !== Math.min(PER_REQUEST, emails.length - start))
          throw new Error(`a request recorded ${body.recorded} outcomes`);
        matched += body.matched;
        seconds.push((performance.now() - started) / 1000);
      }
      const total = seconds.reduce((sum, value) => sum + value, 0);
      return { perSecond: emails.length / total, matched, total };
    };

    const verified = await ingest(list);
    if (verified.matched !== list.length) throw new Error(`${verified.matched} of ${list.length} matched`);
    const unverified = await ingest(list.map((email) => `never.${email}`));
    if (unverified.matched !== 0) throw new Error(`${unverified.matched} unverified addresses matched`);
    const msEach = (run: { total: number }) => (run.total * 1000) / list.length;
    return [
      { name: 'outcomes of verified addresses: recorded a second', value: verified.perSecond, unit: '/s' },
      { name: 'an outcome matched to its verdict: time', value: msEach(verified), unit: 'ms' },
      {
        name: 'outcomes of unverified addresses: recorded a second',
        value: unverified.perSecond,
        unit: '/s',
      },
      { name: 'an outcome with no verdict to match: time', value: msEach(unverified), unit: 'ms' },
    ] satisfies Figure[];
  },
  // The outcomes are kept within the account's storage budget: one that bought its credits.
  { vars: { QUOTA_STORAGE_BASE_BYTES_PER_DAY: '100000000' } },
);

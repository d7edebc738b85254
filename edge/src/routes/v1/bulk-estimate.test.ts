// The upload's estimatedTimeSeconds on a list's first upload: its domains are unknown to rcpt, so
// the upload asks one address of each through the hub (a prober the test answers for) before it
// answers, and a greylister or a tarpit among them counts as the domain facts would count it.
import { env } from 'cloudflare:workers';
import type { ProbeMessage, ProbeReport } from '@rcpt/shared/contract/prober';
import { describe, expect, it } from 'vitest';
import { until } from '../../../../test/eventually.ts';
import { type FakeProber, hubOf, reportFor, startFakeProber } from '../../../test/fake-prober.ts';
import { call, newCaller } from '../../../test/fixtures.ts';
import { configOf } from '../../config.ts';
import { domainSeconds, START_SECONDS } from '../../services/batch/estimate.ts';
import { UNMEASURED_GREYLIST_DELAY_SECONDS } from '../../services/batch/pace-sample.ts';

/** A probe the prober ran out of time on, as it reports a server that never greets. */
function timedOut(probe: ProbeMessage): ProbeReport {
  const report = reportFor(probe, 250, '2.1.5', 'unused');
  return {
    ...report,
    perAddress: probe.emails.map((email) => ({
      email,
      reply: null,
      failure: {
        kind: 'timeout',
        stage: 'banner',
        reply: null,
        message: `the probe ran out of its ${probe.timeoutMs} ms`,
      },
    })),
    session: { ...report.session, durationMs: probe.timeoutMs },
  };
}

/** The mail world's servers as a prober finds them: a postgrey greylister, a tarpit, the rest ordinary. */
function world(probe: ProbeMessage): ProbeReport {
  if (probe.domain === 'greylist.test') {
    return reportFor(
      probe,
      450,
      '4.2.0',
      'Recipient address rejected: Greylisted, see http://postgrey.example/',
      450,
    );
  }
  if (probe.domain === 'tarpit.test') return timedOut(probe);
  return reportFor(probe, 250, '2.1.5', 'OK', 550);
}

/**
 * The sample's wait of the uploads that look at what was sampled: long enough for a loaded runner
 * to resolve the domains and reach the prober within it (the deployment's is SAMPLE_WAIT_MS).
 */
const SAMPLED_WAIT_MS = 15_000;

/** The upload's samples among what the prober was asked: one address, the sample's wait as timeout. */
const samplesOf = (prober: FakeProber) =>
  prober.probes.filter((probe) => probe.emails.length === 1 && probe.timeoutMs <= SAMPLED_WAIT_MS);

/** Uploads `emails`; with `sampleWaitMs`, under that sample's wait instead of the deployment's. */
async function upload(key: string, emails: string[], sampleWaitMs?: number): Promise<number> {
  const vars = sampleWaitMs === undefined ? {} : { vars: { BATCH_SAMPLE_WAIT_MS: String(sampleWaitMs) } };
  const response = await call('/api/v1/bulk/upload', { key, json: { emails }, ...vars });
  expect(response.status).toBe(200);
  return (await response.json<{ estimatedTimeSeconds: number }>()).estimatedTimeSeconds;
}

const addresses = (domain: string, count: number, tag: string) =>
  Array.from({ length: count }, (_, index) => `${tag}${index}@${domain}`);

describe('POST /api/v1/bulk/upload: the estimate of a list whose domains rcpt has not met', () => {
  it('a greylister and a tarpit found by the sample count on the first upload; known domains are not asked again', async () => {
    const prober = await startFakeProber('default', world);
    try {
      const caller = await newCaller({ credits: 200 });
      const first = await upload(
        caller.apiKey,
        [
          ...addresses('accept.test', 20, 'first'),
          ...addresses('tarpit.test', 5, 'first'),
          ...addresses('greylist.test', 5, 'first'),
        ],
        SAMPLED_WAIT_MS,
      );
      // Each domain asked once, the one with the most addresses among them.
      expect(
        samplesOf(prober)
          .map((probe) => probe.domain)
          .sort(),
      ).toEqual(['accept.test', 'greylist.test', 'tarpit.test']);
      const tarpit = domainSeconds({
        greylistDelaySeconds: null,
        slowProbe: { seconds: configOf(env).BATCH_PROBE_TIMEOUT_MS / 1000, timedOut: true },
      });
      const greylister = domainSeconds({
        greylistDelaySeconds: UNMEASURED_GREYLIST_DELAY_SECONDS,
        slowProbe: null,
      });
      expect(first).toBe(Math.ceil(START_SECONDS + Math.max(tarpit, greylister)));

      // accept.test answered at once, and its catch-all answer is kept: known, it is not asked
      // again, and a list of it alone is ordinary work.
      const asked = samplesOf(prober).length;
      const ordinary = await upload(caller.apiKey, addresses('accept.test', 20, 'again'), SAMPLED_WAIT_MS);
      expect(samplesOf(prober)).toHaveLength(asked);
      expect(ordinary).toBeLessThan(START_SECONDS + 5);
    } finally {
      prober.close();
    }
  });

  it('a prober that never answers leaves the estimate as before, and the upload is answered', async () => {
    const silent = await startFakeProber('default', () => 'ignore');
    try {
      // The hub has let the file's earlier prober go: the sample can only reach the silent one.
      await until(
        async () => (await hubOf('default').status()).filter((prober) => prober.ready).length === 1,
        'the hub to hold the silent prober alone',
      );
      const caller = await newCaller({ credits: 200 });
      // Under the long wait the other tests have: under the deployment's 2 s, a loaded runner's DNS
      // and scheduling may leave the sample too little time to be asked at all (pace-sample.ts,
      // MIN_PROBE_MS), and the test would see no sample rather than a silent one.
      const estimate = await upload(
        caller.apiKey,
        addresses('greylist451.test', 10, 'silent'),
        SAMPLED_WAIT_MS,
      );
      expect(samplesOf(silent).map((probe) => probe.domain)).toEqual(['greylist451.test']);
      expect(estimate).toBeLessThan(START_SECONDS + 5);
    } finally {
      silent.close();
    }
  });
});

// Batches as fast far away as near: the 10,000-address company list (Postfix defaults, 20
// sessions per client, 200 domains on 4 MX hosts, 40 % unknown) through the real edge under
// wrangler and a real prober, with 0, 20, 60 and 150 ms of round trip between the prober and
// every MX host (the world's network path, test/world/network-path.ts). Each distance gets a
// fresh world and stack, so nothing one run learnt (host profiles, catch-all answers, domain
// facts) speeds up the next. Printed per distance: upload → completed, the share of verdicts
// right, the upload's estimatedTimeSeconds, and the machine's load average, as the machine is
// shared; then each time against the one at 0 ms. Each distance runs twice, interleaved with
// the others, and the faster run counts: on a shared machine a busy minute only ever adds.
import { loadavg } from 'node:os';
import { startWorld } from '../test/world/index.ts';
import { runCompanyList, stopRun } from './company-run.ts';
import type { Figure } from './run.ts';

const ROUND_TRIPS_MS = [0, 20, 60, 150];
const RUNS = 2;
const figures: Figure[] = [];
const seconds = new Map<number, number>();
const best = new Map<
  number,
  { seconds: number; estimatedSeconds: number; right: number; loadBefore: number; loadAfter: number }
>();

for (let pass = 0; pass < RUNS; pass++) {
  for (const roundTripMs of ROUND_TRIPS_MS) {
    const world = await startWorld({ roundTripMs });
    try {
      const loadBefore = loadavg()[0] ?? Number.NaN;
      const run = await runCompanyList(world);
      await stopRun(run);
      const kept = best.get(roundTripMs);
      // Every run must be right; the faster one counts for the time.
      const right = Math.min(run.right, kept?.right ?? 1);
      if (!kept || run.seconds < kept.seconds) {
        best.set(roundTripMs, {
          seconds: run.seconds,
          estimatedSeconds: run.estimatedSeconds,
          right,
          loadBefore,
          loadAfter: loadavg()[0] ?? Number.NaN,
        });
      } else kept.right = right;
    } finally {
      await world.close();
    }
  }
}

for (const roundTripMs of ROUND_TRIPS_MS) {
  const run = best.get(roundTripMs);
  if (!run) continue;
  seconds.set(roundTripMs, run.seconds);
  const label = `10k defended at ${roundTripMs} ms RTT`;
  figures.push(
    { name: `${label}: upload → completed (faster of ${RUNS})`, value: run.seconds, unit: 's' },
    { name: `${label}: right (every run)`, value: 100 * run.right, unit: '%', target: '100' },
    { name: `${label}: the upload's estimatedTimeSeconds`, value: run.estimatedSeconds, unit: 's' },
    {
      name: `${label}: estimate against the real time`,
      value: run.estimatedSeconds / run.seconds,
      unit: '×',
      target: '0.5–2',
    },
    { name: `${label}: load average (1 min) before`, value: run.loadBefore, unit: '' },
    { name: `${label}: load average (1 min) after`, value: run.loadAfter, unit: '' },
  );
}
const near = seconds.get(0) ?? Number.NaN;
for (const roundTripMs of ROUND_TRIPS_MS.slice(1)) {
  figures.push({
    name: `10k defended: time at ${roundTripMs} ms against 0 ms`,
    value: (seconds.get(roundTripMs) ?? Number.NaN) / near,
    unit: '×',
    ...(roundTripMs === 60 ? { target: '≤ 1.5' } : {}),
  });
}
console.log(JSON.stringify(figures));

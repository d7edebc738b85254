// Batches as fast far away as near: the 10,000-address company list (Postfix defaults, 20
// sessions per client, 200 domains on 4 MX hosts, 40 % unknown) through the real edge under
// wrangler and a real prober, with 0, 20, 60 and 150 ms of round trip between the prober and
// every MX host (the world's network path, test/world/network-path.ts). Each distance gets a
// fresh world and stack, so nothing one run learnt (host profiles, catch-all answers, domain
// facts) speeds up the next. Printed per distance: upload → completed, the share of verdicts
// right, the upload's estimatedTimeSeconds, and the machine's load average, as the machine is
// shared; then each time against the one at 0 ms.
import { loadavg } from 'node:os';
import { startWorld } from '../test/world/index.ts';
import { runCompanyList, stopRun } from './company-run.ts';
import type { Figure } from './run.ts';

const ROUND_TRIPS_MS = [0, 20, 60, 150];
const figures: Figure[] = [];
const seconds = new Map<number, number>();

for (const roundTripMs of ROUND_TRIPS_MS) {
  const world = await startWorld({ roundTripMs });
  try {
    const loadBefore = loadavg()[0] ?? Number.NaN;
    const run = await runCompanyList(world);
    await stopRun(run);
    seconds.set(roundTripMs, run.seconds);
    const label = `10k defended at ${roundTripMs} ms RTT`;
    figures.push(
      { name: `${label}: upload → completed`, value: run.seconds, unit: 's' },
      { name: `${label}: right`, value: 100 * run.right, unit: '%', target: '100' },
      { name: `${label}: the upload's estimatedTimeSeconds`, value: run.estimatedSeconds, unit: 's' },
      {
        name: `${label}: estimate against the real time`,
        value: run.estimatedSeconds / run.seconds,
        unit: '×',
        target: '0.5–2',
      },
      { name: `${label}: load average (1 min) before`, value: loadBefore, unit: '' },
      { name: `${label}: load average (1 min) after`, value: loadavg()[0] ?? Number.NaN, unit: '' },
    );
  } finally {
    await world.close();
  }
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

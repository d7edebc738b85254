// A benchmark against the whole system on loopback: the fake mail world, the real edge under
// wrangler and one prober linked to it. Prints the figures `measure` gives as the last line of
// output (bench/run.ts reads it), with the load average before and after beside them: the
// figures are only as quiet as the machine.
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LocalStack, StackOptions } from '../scripts/stack/local-stack.ts';
import { type MailWorld, startWorld } from '../test/world/index.ts';
import { startBenchStack } from './bench-stack.ts';
import type { Figure } from './run.ts';

export async function benchOnWorld(
  measure: (stack: LocalStack, world: MailWorld) => Promise<Figure[]>,
  options: { vars?: Record<string, string>; onLog?: StackOptions['onLog'] } = {},
): Promise<void> {
  const world = await startWorld();
  const persistTo = mkdtempSync(join(tmpdir(), 'rcpt-bench-'));
  // The world's MX hosts are on 127.0.0.x; the prober alone speaks SMTP, on the world's port.
  const common = { ALLOW_PRIVATE_TARGETS: 'true' };
  const stack = await startBenchStack({
    persistTo,
    vars: { DOH_URL: world.dohUrl, ...common, ...options.vars },
    proberEnv: { ...common, SMTP_PORT: String(world.smtpPort) },
    ...(options.onLog ? { onLog: options.onLog } : {}),
  });
  const figures: Figure[] = [
    { name: 'load average (1 min) before', value: loadavg()[0] ?? Number.NaN, unit: '' },
  ];
  try {
    figures.push(...(await measure(stack, world)));
    figures.push({ name: 'load average (1 min) after', value: loadavg()[0] ?? Number.NaN, unit: '' });
  } finally {
    await stack.close();
    await world.close();
    rmSync(persistTo, { recursive: true, force: true });
  }
  console.log(JSON.stringify(figures));
}

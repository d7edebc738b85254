// Runs the fake mail world and the fake Stripe for the edge tests, on the ports vitest.config.ts gave workerd.
import type { TestProject } from 'vitest/node';
import { startFakeStripe } from '../../test/world/fake-stripe.ts';
import { startWorld } from '../../test/world/index.ts';

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const ports = JSON.parse(process.env[`RCPT_EDGE_TEST_WORLD_${project.name}`] ?? '{}') as {
    smtpPort: number;
    dohPort: number;
    stripe: { port: number; secretKey: string; webhookSecret: string };
  };
  const world = await startWorld({ smtpPort: ports.smtpPort, dohPort: ports.dohPort });
  // Its events are not posted anywhere: the tests deliver them to the Worker themselves.
  const stripe = await startFakeStripe(ports.stripe);
  return async () => {
    await stripe.close();
    await world.close();
  };
}

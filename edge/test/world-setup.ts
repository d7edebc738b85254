// Runs the fake mail world for the edge tests, on the ports vitest.config.ts gave workerd.
import { startWorld } from '../../test/world/index.ts';

export default async function setup(): Promise<() => Promise<void>> {
  const ports = JSON.parse(process.env.RCPT_EDGE_TEST_WORLD ?? '{}') as { smtpPort: number; dohPort: number };
  const world = await startWorld({ smtpPort: ports.smtpPort, dohPort: ports.dohPort });
  return () => world.close();
}

import { execSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WebSocket } from 'ws';
import { DEV_ACCOUNT_ID, startLocalStack } from '../scripts/stack/local-stack.ts';
import { createApiKeys, grantCredits } from '../scripts/stack/operator.ts';
import { companyList } from '../test/world/expected-verdicts.ts';
import { startWorld } from '../test/world/index.ts';

const world = await startWorld({ greylistDelayMs: 60_000 });
const persistTo = mkdtempSync(join(tmpdir(), 'rcpt-prof-'));
const common = { ALLOW_PRIVATE_TARGETS: 'true' };
const stack = await startLocalStack({
  persistTo,
  vars: { DOH_URL: world.dohUrl, ...common },
  proberEnv: { ...common, SMTP_PORT: String(world.smtpPort), CAPACITY: '200', PER_MX_CONCURRENCY: '20' },
});
grantCredits(stack.d1, { accountId: DEV_ACCOUNT_ID, amount: 20000 });
const [key] = await createApiKeys(stack.d1, { accountId: DEV_ACCOUNT_ID, count: 1, mode: 'live' });
const ps = execSync(`ps -o args= -p ${stack.edge.pid}`).toString();
const inspectorPort = ps.match(/--inspector-port (\d+)/)![1];
const targets = (await (await fetch(`http://127.0.0.1:${inspectorPort}/json`)).json()) as any[];
console.log(targets.map((t) => t.title + ' ' + t.webSocketDebuggerUrl));
const sessions = targets.map((t) => {
  const ws = new WebSocket(t.webSocketDebuggerUrl);
  let id = 0;
  const pending = new Map<number, (v: any) => void>();
  ws.on('message', (d) => {
    const m = JSON.parse(String(d));
    if (m.id && pending.has(m.id)) {
      pending.get(m.id)!(m.result);
      pending.delete(m.id);
    }
  });
  const send = (method: string, params = {}) =>
    new Promise<any>((res) => {
      const i = ++id;
      pending.set(i, res);
      ws.send(JSON.stringify({ id: i, method, params }));
    });
  return { title: t.title, ready: new Promise((r) => ws.once('open', r)), send };
});
for (const s of sessions) {
  await s.ready;
  await s.send('Profiler.enable');
  await s.send('Profiler.setSamplingInterval', { interval: 500 });
  await s.send('Profiler.start');
}
const headers = { 'content-type': 'application/json', 'x-api-key': key! };
const t0 = performance.now();
const up = (await (
  await fetch(`${stack.baseUrl}/api/v1/bulk/upload`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ emails: companyList({ count: 10000, domains: 200 }).map((e) => e.address) }),
  })
).json()) as any;
for (;;) {
  await new Promise((r) => setTimeout(r, 500));
  const s = (await (
    await fetch(`${stack.baseUrl}/api/v1/bulk/status/${up.jobId}`, { headers })
  ).json()) as any;
  if (s.job.status === 'completed') break;
}
console.log('10k seconds', (performance.now() - t0) / 1000);
for (const [i, s] of sessions.entries()) {
  const { profile } = await s.send('Profiler.stop');
  writeFileSync(`/tmp/prof-${i}.cpuprofile`, JSON.stringify(profile));
}
await stack.close();
await world.close();

import { env, exports } from 'cloudflare:workers';
import { issueSecret } from '@rcpt/shared/secret-tokens';
import { describe, expect, it } from 'vitest';
import { untilValue } from '../../../../test/eventually.ts';
import { announceEgresses, blockAt, reportFor, startFakeProber } from '../../../test/fake-prober.ts';
import { call, db, newCaller, revokeCredentialForTest } from '../../../test/fixtures.ts';
import { operatorTokens } from '../../storage/schema.ts';

async function newOperatorToken(): Promise<{ id: string; secret: string }> {
  const issued = await issueSecret('operatorToken');
  const id = crypto.randomUUID();
  await db().insert(operatorTokens).values({
    id,
    name: 'test operator',
    tokenHash: issued.hash,
    prefix: issued.prefix,
    createdAt: Date.now(),
  });
  return { id, secret: issued.secret };
}

function fleet(authorization: string, region?: string): Promise<Response> {
  return exports.default.fetch(`http://edge.test/internal/fleet${region ? `?region=${region}` : ''}`, {
    headers: authorization ? { authorization } : {},
  });
}

describe('GET /internal/fleet', () => {
  it('refuses no token, an API key, a prober token and a revoked operator token with a JSON 401', async () => {
    const caller = await newCaller();
    const revoked = await newOperatorToken();
    await revokeCredentialForTest('operator_tokens', revoked.id);
    for (const authorization of [
      '',
      `Bearer ${caller.apiKey}`,
      `Bearer rkp_${'A'.repeat(43)}`,
      `Bearer rko_${'A'.repeat(43)}`,
      `Bearer ${revoked.secret}`,
    ]) {
      const response = await fleet(authorization);
      expect(response.status, authorization).toBe(401);
      expect(await response.json()).toMatchObject({ success: false, code: 'UNAUTHORIZED' });
    }
  });

  it("shows each prober's egresses, a block with its masked reply as soon as the prober reports it, and hourly use", async () => {
    const region = 'fleet-view';
    const token = await newOperatorToken();
    const prober = await startFakeProber(region, (probe) => reportFor(probe, 250, null, 'OK'));
    announceEgresses(prober, region, [
      { id: '127.0.0.1', kind: 'direct', helo: null, label: 'fleet-view-3fa91c' },
      { id: '127.0.0.2', kind: 'direct', helo: 'out2.rcpt.test', label: 'fleet-view-7be204' },
    ]);
    prober.send({
      type: 'egress_state',
      id: 'state-1',
      // A prober that forgot to mask an address: the view masks it anyway.
      blocks: [
        blockAt(
          '127.0.0.2',
          'mx1.company.test',
          Date.now(),
          '<jane@example.test>: Client host [127.0.0.2] blocked using zen.spamhaus.org',
        ),
      ],
      uses: [{ egress: '127.0.0.1', provider: 'google', used: 7, budget: 50 }],
      sessions: 2,
    });
    type Body = {
      regions: {
        region: string;
        probers: {
          state: string;
          sessions: number;
          egresses: {
            id: string;
            label?: string;
            blocks: { scope: unknown; reply: { text: string } }[];
            hourlyUse: unknown[];
          }[];
        }[];
      }[];
    };
    const body = await untilValue(async () => {
      const response = await fleet(`Bearer ${token.secret}`, region);
      expect(response.status).toBe(200);
      const json = (await response.json()) as Body;
      return json.regions[0]?.probers[0]?.sessions === 2 ? json : undefined;
    }, 'the block reaches the view');
    const [view] = body.regions[0]?.probers ?? [];
    expect(view?.state).toBe('linked');
    expect(view?.egresses.map((egress) => egress.id)).toEqual(['127.0.0.1', '127.0.0.2']);
    // The operator sees each egress's real id beside the label customers see in evidence.
    expect(view?.egresses.map((egress) => egress.label)).toEqual(['fleet-view-3fa91c', 'fleet-view-7be204']);
    expect(view?.egresses[0]?.blocks).toEqual([]);
    expect(view?.egresses[0]?.hourlyUse).toEqual([{ provider: 'google', used: 7, budget: 50 }]);
    expect(view?.egresses[1]?.blocks.map((block) => block.scope)).toEqual([
      { kind: 'mx_host', name: 'mx1.company.test' },
    ]);
    expect(view?.egresses[1]?.blocks[0]?.reply.text).toBe(
      '<>: Client host [127.0.0.2] blocked using zen.spamhaus.org',
    );
    prober.close();
  });

  it("shows today's writes of every account to D1 against the store's daily write budget, and to every store", async () => {
    const token = await newOperatorToken();
    const storage = async () =>
      (
        await (
          await fleet(`Bearer ${token.secret}`)
        ).json<{
          storage: {
            day: string;
            usedBytes: number;
            allStoresBytes: number;
            budgetBytes: number;
            resetAt: string;
            shards: { shard: number; usedBytes: number; allStoresBytes: number }[];
          };
        }>()
      ).storage;
    const now = Date.now();
    const day = now - (now % 86_400_000);
    const before = await storage();
    expect(before).toMatchObject({
      day: new Date(day).toISOString(),
      // The default: 80 % of D1's 10 GB over the 60 days of retention.
      budgetBytes: 133_333_333,
      resetAt: new Date(day + 86_400_000).toISOString(),
    });
    const caller = await newCaller({ mode: 'test' });
    const upload = await call('/api/v1/bulk/upload', {
      key: caller.apiKey,
      json: { emails: ['deliverable@sandbox.test'] },
    });
    expect(upload.status).toBe(200);
    const written = await env.DB.prepare(
      'SELECT bytes, d1_bytes AS d1Bytes FROM storage_days WHERE account_id = ?',
    )
      .bind(caller.accountId)
      .first<{ bytes: number; d1Bytes: number }>();
    // The list lives in its job's object: D1 keeps its row, history entry and filter.
    expect(written?.d1Bytes).toBeGreaterThan(0);
    expect(written?.d1Bytes).toBeLessThan(written?.bytes ?? 0);
    const after = await storage();
    expect(after.usedBytes).toBe(before.usedBytes + (written?.d1Bytes ?? 0));
    expect(after.allStoresBytes).toBe(before.allStoresBytes + (written?.bytes ?? 0));
    // The budget is each database's: the account is in shard 0, so shard 1's count did not move.
    expect(after.shards.map((each) => each.shard)).toEqual([0, 1]);
    expect(after.shards[0]?.usedBytes).toBe(after.usedBytes);
    expect(after.shards[1]).toEqual(before.shards[1]);
  });
});

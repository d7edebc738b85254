// The prober link's front door: a token of a region the edge never sends work to is refused with
// a message the prober logs (a listed region's 101 is in objects/prober-hub.test.ts).
import { describe, expect, it } from 'vitest';
import { connectProber, newProberToken } from '../../../test/fake-prober.ts';

describe('GET /internal/probers/connect', () => {
  it('refuses a prober of a region the edge never uses, saying which regions it uses', async () => {
    const token = await newProberToken('eu-west');
    const response = await connectProber(token.secret, 'eu-west');
    expect(response.status).toBe(403);
    expect(response.webSocket).toBeNull();
    const body = await response.json<{ code: string; message: string; details: unknown }>();
    expect(body).toMatchObject({
      success: false,
      code: 'PROBER_REGION_UNUSED',
      details: { region: 'eu-west', proberRegions: ['default'] },
    });
    expect(body.message).toContain(`Region "eu-west" is not in this edge's PROBER_REGIONS ("default")`);
  });

  it('still answers a token of another region than the one asked for with FORBIDDEN', async () => {
    const token = await newProberToken('eu-west');
    const response = await connectProber(token.secret, 'default');
    expect(response.status).toBe(403);
    expect(await response.json()).toMatchObject({ code: 'FORBIDDEN' });
  });
});

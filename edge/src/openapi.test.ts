import { exports } from 'cloudflare:workers';
import { subStatusMarkdown } from '@rcpt/shared/contract/sub-statuses';
import { describe, expect, it } from 'vitest';

describe('/openapi.json', () => {
  it('describes subStatus with the vocabulary table (status, meaning, batch retry and refund)', async () => {
    const document = await (await exports.default.fetch('http://edge.test/openapi.json')).json<{
      components: { schemas: Record<string, { properties?: Record<string, { description?: string }> }> };
    }>();
    const subStatus = document.components.schemas.VerificationResult?.properties?.subStatus;
    expect(subStatus?.description).toContain(subStatusMarkdown());
  });
});

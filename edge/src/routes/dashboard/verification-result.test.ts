import { checkSyntax } from '@rcpt/shared/verify/syntax';
import { jsx } from 'hono/jsx';
import { describe, expect, it } from 'vitest';
import { sandboxVerify } from '../../services/sandbox.ts';
import { VerificationResultView } from './verification-result.tsx';

const NOTE = 'this answer came from the Microsoft 365';

async function rendered(verifiedVia: 'mx' | 'tenant' | 'sandbox' | null): Promise<string> {
  const result = sandboxVerify(checkSyntax('deliverable@example.com'), 0);
  return await jsx(VerificationResultView, {
    result: { ...result, meta: { ...result.meta, verifiedVia } },
  }).toString();
}

describe('a verification result in the dashboard', () => {
  it('says when the tenant behind a security gateway gave the answer', async () => {
    expect(await rendered('tenant')).toContain(NOTE);
  });

  it.each(['mx', 'sandbox', null] as const)(
    'says nothing of it when the answer came via %s',
    (verifiedVia) => {
      expect(rendered(verifiedVia)).not.toContain(NOTE);
    },
  );
});

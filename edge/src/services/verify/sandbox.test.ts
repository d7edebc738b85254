import { checkSyntax } from '@rcpt/shared/verify/syntax';
import { describe, expect, it } from 'vitest';
import { SANDBOX_ADDRESSES, sandboxVerify } from './sandbox.ts';

describe('sandbox answers', () => {
  it.each(Object.entries(SANDBOX_ADDRESSES))('%s@ gives %s, marked as the sandbox’s', (localPart, magic) => {
    const result = sandboxVerify(checkSyntax(`${localPart}@example.com`), Date.parse('2026-11-25T00:00:00Z'));
    expect(`${result.status} / ${result.subStatus}`).toBe(magic.describe);
    expect(result.meta.verifiedVia).toBe('sandbox');
  });

  it('marks every answer of a test key, even one without a magic address', () => {
    expect(sandboxVerify(checkSyntax('someone@example.com'), 0).meta.verifiedVia).toBe('sandbox');
  });
});

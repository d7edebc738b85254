import { exports } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';

describe('worker', () => {
  it('answers', async () => {
    const response = await exports.default.fetch('http://edge.test/');
    expect(await response.json()).toEqual({ ok: true });
  });
});

import { describe, expect, it } from 'vitest';

describe('arithmetic', () => {
  it('adds', () => expect(1 + 1).toBe(2));
  it('is wrong on purpose', () => expect(1 + 1).toBe(3));
});

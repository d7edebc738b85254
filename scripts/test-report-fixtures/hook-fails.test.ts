import { beforeAll, expect, it } from 'vitest';

beforeAll(() => {
  throw new Error('the system did not start');
});

it('first', () => expect(1).toBe(1));
it('second', () => expect(1).toBe(1));

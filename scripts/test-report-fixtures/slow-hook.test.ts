import { beforeAll, expect, it } from 'vitest';

// A file whose time is spent in its hook, as a whole-system file starting its stack is: the
// file's time must count it, though its one test takes no time.
beforeAll(() => new Promise((resolve) => setTimeout(resolve, 400)));

it('runs after its hook', () => expect(2 * 2).toBe(4));

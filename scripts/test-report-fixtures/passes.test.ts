import { expect, it } from 'vitest';

it('passes', () => expect('a').toBe('a'));

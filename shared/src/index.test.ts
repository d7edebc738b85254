import { expect, it } from 'vitest';
import { probeValue } from './index.ts';

it('loads', () => expect(probeValue).toBe(42));

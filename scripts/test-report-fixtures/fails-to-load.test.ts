import { expect, it } from 'vitest';

// A module whose import-time setup throws, as a file with a broken import or config does.
const settings = loadSettings();

it('never runs', () => expect(settings).toBe('ready'));

function loadSettings(): string {
  throw new Error('broken at load');
}

import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { configOf, proberRegionsOf } from './config.ts';

/** The test deployment's env with `vars` over it (a fresh object: configOf caches per env). */
function configWith(vars: Record<string, string | undefined>) {
  return configOf({ ...env, ...vars } as Env);
}

describe('prober regions', () => {
  it('reads PROBER_REGIONS in order, the first the primary, each with its optional location hint', () => {
    expect(proberRegionsOf(configWith({ PROBER_REGIONS: 'eu:weur, us:enam ,backup' }))).toEqual([
      { name: 'eu', locationHint: 'weur' },
      { name: 'us', locationHint: 'enam' },
      { name: 'backup' },
    ]);
  });

  it('keeps the older PROBER_REGION as a one-region list when PROBER_REGIONS is unset', () => {
    expect(proberRegionsOf(configWith({ PROBER_REGIONS: undefined, PROBER_REGION: 'eu' }))).toEqual([
      { name: 'eu' },
    ]);
    expect(proberRegionsOf(configWith({ PROBER_REGIONS: undefined }))).toEqual([{ name: 'default' }]);
  });

  it.each([
    ['eu,eu', 'names a region twice'],
    ['eu:mars', 'PROBER_REGIONS'],
    ['eu west', 'a region must be 1–64 letters'],
    [',', 'PROBER_REGIONS'],
  ])('refuses PROBER_REGIONS=%j with a clear error', (value, message) => {
    expect(() => configWith({ PROBER_REGIONS: value })).toThrow(message);
  });
});

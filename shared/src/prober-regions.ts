// Prober regions as the deployment names them: a region's name (a prober's REGION, its token's
// region) and the edge's PROBER_REGIONS list, `name[:hint],…` in order of preference, the first
// the primary; the hint places that region's hub near its probers (docs/operations.md, "Regions").
import { z } from 'zod';

/** What a region's name may hold. */
export const REGION_NAME = /^[A-Za-z0-9._-]{1,64}$/;
export const REGION_NAME_RULE = '1–64 letters, digits, dots, dashes or underscores';

/** Durable Object location hints (https://developers.cloudflare.com/durable-objects/platform/data-location/). */
const LOCATION_HINTS = ['wnam', 'enam', 'sam', 'weur', 'eeur', 'apac', 'oc', 'afr', 'me'] as const;

export const regionName = z.string().regex(REGION_NAME, `a region must be ${REGION_NAME_RULE}`);

/** PROBER_REGIONS: the regions in order, each `{ name, locationHint? }`. */
export const proberRegions = z
  .string()
  .transform((value) =>
    value
      .split(',')
      .map((entry) => entry.trim())
      .filter(Boolean),
  )
  .pipe(
    z
      .array(
        z
          .string()
          .transform((entry) => {
            const [name = '', locationHint] = entry.split(':');
            return { name, ...(locationHint === undefined ? {} : { locationHint }) };
          })
          .pipe(z.object({ name: regionName, locationHint: z.enum(LOCATION_HINTS).optional() })),
      )
      .min(1)
      .refine((regions) => new Set(regions.map((region) => region.name)).size === regions.length, {
        message: 'names a region twice',
      }),
  );

export type ProberRegion = z.infer<typeof proberRegions>[number];

/** A PROBER_REGIONS value read as the edge reads it (local tooling starts its probers by it); throws when invalid. */
export function parseProberRegions(value: string): ProberRegion[] {
  return proberRegions.parse(value);
}

/**
 * The regions a deployment's vars name, as the edge reads them: PROBER_REGIONS, else
 * PROBER_REGION alone, else `default`. Throws when the value is invalid.
 */
export function regionsOfVars(vars: Readonly<Record<string, unknown>>): ProberRegion[] {
  const text = (name: string) =>
    typeof vars[name] === 'string' && vars[name] !== '' ? vars[name] : undefined;
  const listed = text('PROBER_REGIONS');
  if (listed !== undefined) return parseProberRegions(listed);
  return [{ name: regionName.parse(text('PROBER_REGION') ?? 'default') }];
}

// What a key may do beyond its account and mode (docs/publishable-keys.md): its scopes, the client
// address blocks it may be used from, and a publishable key's origins, cap and Turnstile secret.
// Pure, so that the key's KeyLimiter object reads the same rules as the Worker.
import { type CidrBlock, isAddressInBlocks, parseCidr } from '@rcpt/shared/ip-ranges';
import type { ApiKeyRow } from '../../storage/api-keys.ts';

/**
 * What a key may call (docs/publishable-keys.md, "Scopes"): `verify` the single verify,
 * `bulk` uploading lists and reading their jobs, `read` the account, history and jobs,
 * `outcomes` reporting what happened to sends (free, and spends nothing: a sending system's key
 * needs no power to verify).
 */
export const KEY_SCOPES = ['verify', 'bulk', 'read', 'outcomes'] as const;
export type KeyScope = (typeof KEY_SCOPES)[number];

/** How a key is limited beyond its account and mode; every field null means "no limit". */
export interface KeyLimits {
  kind: 'secret' | 'publishable';
  /** The scopes it holds; null: every scope, and the account's settings. */
  scopes: readonly KeyScope[] | null;
  /** The client address blocks it may be used from; null: any address. */
  allowedCidrs: readonly CidrBlock[] | null;
  /** Publishable keys: the page origins it answers (exact `scheme://host[:port]`). */
  allowedOrigins: readonly string[] | null;
  /** Publishable keys: verifications admitted per UTC day. */
  dailyCap: number | null;
  /** Publishable keys: the customer's Turnstile secret key, sealed; null when Turnstile is off. */
  turnstileSecret: string | null;
}

/** A key's limits as stored; a column that does not parse is a bug, not a missing limit. */
export function keyLimitsOf(
  row: Pick<
    ApiKeyRow,
    'kind' | 'scopes' | 'allowedCidrs' | 'allowedOrigins' | 'dailyCap' | 'turnstileSecret'
  >,
): KeyLimits {
  const list = (json: string | null): string[] | null =>
    json === null ? null : (JSON.parse(json) as string[]);
  const cidrs = list(row.allowedCidrs);
  return {
    kind: row.kind,
    scopes: list(row.scopes) as KeyScope[] | null,
    allowedCidrs:
      cidrs?.map((text) => {
        const block = parseCidr(text);
        if (!block) throw new Error(`stored address block ${text} does not parse`);
        return block;
      }) ?? null,
    allowedOrigins: list(row.allowedOrigins),
    dailyCap: row.dailyCap,
    turnstileSecret: row.turnstileSecret,
  };
}

/** Whether a key with these limits may call an operation open to `anyOf` (docs/publishable-keys.md). */
export function keyHoldsScope(
  limits: Pick<KeyLimits, 'kind' | 'scopes'>,
  anyOf: readonly KeyScope[],
  operation: { publishableKeys: boolean },
): boolean {
  if (limits.kind === 'publishable' && !operation.publishableKeys) return false;
  if (limits.scopes === null) return true;
  return anyOf.some((scope) => limits.scopes?.includes(scope));
}

/**
 * Whether a key with these limits may be used from `address` (null: the client address is not
 * known, which a key limited to address blocks refuses).
 */
export function addressAdmitted(limits: Pick<KeyLimits, 'allowedCidrs'>, address: string | null): boolean {
  const { allowedCidrs } = limits;
  return allowedCidrs === null || (address !== null && isAddressInBlocks(address, allowedCidrs));
}

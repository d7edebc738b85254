// The mailbox an address reaches, as one string: what rcpt counts once however the address is
// spelt (docs/money.md, "Free credits": one grant per mailbox; one budget of confirmation
// emails per mailbox). Every spelling that the provider delivers to the same inbox gives the
// same string; the rules per provider are data in the registry (providers.ts, `localPart`).
import { PROVIDER_REGISTRY, type ProviderRegistry } from './providers.ts';
import { DEFAULT_SUBADDRESS_SEPARATOR, subaddressUser } from './subaddress.ts';

/**
 * `address`'s mailbox: the domain in lower case without a final dot, the local part in lower
 * case too (RFC 5321 §2.4 lets a server tell cases apart, but counting two spellings as one
 * mailbox only errs towards fewer grants and fewer emails), cut at the provider's sub-address
 * separator, and without dots where the provider ignores them. A string with no `@` is only
 * trimmed and lower-cased.
 */
export function normaliseMailbox(address: string, registry: ProviderRegistry = PROVIDER_REGISTRY): string {
  const trimmed = address.trim().toLowerCase();
  const at = trimmed.lastIndexOf('@');
  if (at < 0) return trimmed;
  const domain = trimmed.slice(at + 1).replace(/\.$/, '');
  let localPart = trimmed.slice(0, at);
  // By the domain alone (no MX): a provider's rules hold for its own domains, not for the
  // domains it hosts (a Google Workspace domain's dots matter).
  const match = registry.find(domain);
  const rules = match?.by === 'domain' ? match.provider.localPart : undefined;
  localPart = subaddressUser(
    localPart,
    rules?.subaddressSeparator === undefined ? DEFAULT_SUBADDRESS_SEPARATOR : rules.subaddressSeparator,
  );
  if (rules?.ignoresDots) localPart = localPart.replaceAll('.', '') || localPart;
  return `${localPart}@${domain}`;
}

// Sub-addressing (RFC 5233): a local part such as "ken+sieve" is a "user" ("ken") and a
// "detail" ("sieve") joined by a separator, and mail to it reaches the user's mailbox. Every
// part of rcpt that looks past the detail (the mailbox of a sign-up, the role or trap name of a
// local part) cuts it here.

/** The separator when nothing says otherwise: '+', the one RFC 5233's examples use. */
export const DEFAULT_SUBADDRESS_SEPARATOR = '+';

/**
 * The user part of `localPart`: what precedes the first `separator`. A local part that starts
 * with the separator has no user part and is returned whole; so is any local part when the
 * separator is null (the provider has no sub-addressing).
 */
export function subaddressUser(
  localPart: string,
  separator: string | null = DEFAULT_SUBADDRESS_SEPARATOR,
): string {
  if (!separator) return localPart;
  const cut = localPart.indexOf(separator);
  return cut > 0 ? localPart.slice(0, cut) : localPart;
}

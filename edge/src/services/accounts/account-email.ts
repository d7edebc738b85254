// An account's email as it is stored and looked up: the one spelling sign-up, sign-in, the reset
// request and the directory's email lookup all compare (docs/architecture.md, "Sharding what
// still grows"). Kept free of other imports, so the whole-system tests read it too.

/** The account email `email` names: trimmed, and lower-cased as every mail provider treats it. */
export function normaliseAccountEmail(email: string): string {
  return email.trim().toLowerCase();
}

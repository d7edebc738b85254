// A Bloom filter of a job's addresses (Bloom, "Space/time trade-offs in hash coding with allowable
// errors", 1970), kept beside the job's row (`job_address_filters`): matching an outcome's email
// to the account's batch verdicts asks the lists of only the jobs whose filter may hold it
// (docs/architecture.md, "Where a job's lists live"). At 1 % false positives it takes 9.6 bits an
// address, 7 hashes, built by double hashing two 32-bit FNV-1a hashes of the address's UTF-8
// bytes (Kirsch and Mitzenmacher, "Less hashing, same performance", 2006). A false positive costs
// one read of a job's lists.

const HASHES = 7;
/** Bits per address for a 1 % false-positive rate: -ln(0.01) / ln(2)². */
const BITS_PER_ADDRESS = 9.6;
const encoder = new TextEncoder();

/** The filter of these addresses (null when there are none). */
export function addressFilterOf(addresses: Iterable<string>): Uint8Array | null {
  const list = [...addresses];
  if (list.length === 0) return null;
  const filter = new Uint8Array(Math.max(8, Math.ceil((list.length * BITS_PER_ADDRESS) / 8)));
  for (const address of list)
    for (const bit of bitsOf(address, filter.length * 8)) filter[bit >>> 3]! |= 1 << (bit & 7);
  return filter;
}

/** Whether `address` may be in the filter: false is certain, true is right but for 1 % of the others. */
export function filterMayHold(filter: Uint8Array, address: string): boolean {
  for (const bit of bitsOf(address, filter.length * 8))
    if ((filter[bit >>> 3]! & (1 << (bit & 7))) === 0) return false;
  return true;
}

function bitsOf(address: string, bits: number): number[] {
  const bytes = encoder.encode(address);
  const first = fnv1a(bytes, 0x811c9dc5);
  // Odd, so that the steps of a filter of 2^n bits reach different bits.
  const second = fnv1a(bytes, 0x01000193) | 1;
  const positions: number[] = [];
  for (let i = 0; i < HASHES; i++) positions.push(((first + Math.imul(i, second)) >>> 0) % bits);
  return positions;
}

function fnv1a(bytes: Uint8Array, basis: number): number {
  let hash = basis;
  for (const byte of bytes) hash = Math.imul(hash ^ byte, 0x01000193);
  return hash >>> 0;
}

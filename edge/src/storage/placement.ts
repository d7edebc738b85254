// Where a new account goes (docs/architecture.md, "Sharding what still grows"), decided here once
// for the edge (storage/shards.ts `shardForNewAccount`) and for the operator's scripts
// (scripts/stack/operator.ts), which run the same count through wrangler. Like inserts.ts, this
// file uses no Workers types, so Node scripts can import it.

/** The directory's count of accounts in each shard that holds any (`shard`, `accounts`). */
export const ACCOUNTS_BY_SHARD = 'SELECT shard, COUNT(*) AS accounts FROM account_shards GROUP BY shard';

/**
 * The shard with the fewest accounts among the `shardCount` there are, the lowest number on a
 * tie; `rows` are what ACCOUNTS_BY_SHARD read (a shard it does not name holds none).
 */
export function shardWithFewestAccounts(
  rows: readonly { shard: number; accounts: number }[],
  shardCount: number,
): number {
  const counts = new Map(rows.map((row) => [Number(row.shard), Number(row.accounts)]));
  let chosen = 0;
  for (let shard = 1; shard < shardCount; shard++)
    if ((counts.get(shard) ?? 0) < (counts.get(chosen) ?? 0)) chosen = shard;
  return chosen;
}

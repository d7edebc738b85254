// The D1 databases of a deployment, by account (docs/architecture.md, "Sharding what still
// grows"): `DB` is the directory and shard 0, each `DB_SHARD_n` binding shard n. A shard holds every
// row of the accounts it was given; the directory holds which shard that is (`account_shards`),
// what finds an account from outside it (`account_lookups`), and what all accounts share.
//
// Every database gets every migration, so the storage modules run unchanged on any shard: a
// caller picks the account's database, and a module that writes to the directory as well asks
// `directoryOf` for it.
import { and, eq } from 'drizzle-orm';
import { createDb, createRequestDb, type Db, prepare } from './db.ts';
import { accountShardInsert, type LookupKind, lookupInsert } from './inserts.ts';
import { ACCOUNTS_BY_SHARD, shardWithFewestAccounts } from './placement.ts';
import { accountLookups, accountShards } from './schema.ts';

/** The databases of one deployment: the directory, and a database per shard. */
export interface Shards {
  /** The directory's database, shard 0's too (`DB`). */
  readonly directory: Db;
  /** How many shards the deployment binds. */
  readonly count: number;
  /** Shard `shard`'s database (0: the directory's). */
  db(shard: number): Db;
}

/** The directory of each shard database made here (the directory's own is not listed: it is its own). */
const directories = new WeakMap<Db, { shard: number; directory: Db }>();

/** The D1 bindings of the shards, shard 0 (`DB`) first, then `DB_SHARD_1`, `DB_SHARD_2`, … while bound. */
export function shardBindings(env: Env): D1Database[] {
  const bound = env as unknown as Record<string, D1Database | undefined>;
  const bindings = [env.DB];
  for (let shard = 1; bound[`DB_SHARD_${shard}`]; shard++)
    bindings.push(bound[`DB_SHARD_${shard}`] as D1Database);
  return bindings;
}

/**
 * The deployment's databases. `request`: each is read through its own D1 session for this request
 * (db.ts `createRequestDb`), made when first asked for; otherwise the isolate's.
 */
export function shardsOf(env: Env, options: { request?: boolean } = {}): Shards {
  const bindings = shardBindings(env);
  const open = options.request ? createRequestDb : createDb;
  const directory = open(env.DB);
  const opened = new Map<number, Db>([[0, directory]]);
  return {
    directory,
    count: bindings.length,
    db(shard) {
      let db = opened.get(shard);
      if (!db) {
        const binding = bindings[shard];
        if (!binding) throw new Error(`no D1 binding for shard ${shard}`);
        db = open(binding);
        directories.set(db, { shard, directory });
        opened.set(shard, db);
      }
      return db;
    },
  };
}

/** The directory of the deployment `db` belongs to: itself for the directory's (shard 0's) database. */
export function directoryOf(db: Db): Db {
  return directories.get(db)?.directory ?? db;
}

/** The shard whose database `db` is. */
export function shardNumberOf(db: Db): number {
  return directories.get(db)?.shard ?? 0;
}

/**
 * Accounts' shards this isolate has read: an account never moves, so what was read stays true.
 * Bounded as `knowStore`'s jobs are (storage/job-lists): the oldest forgotten past the limit.
 */
const knownShards = new Map<string, number>();
const KNOWN_SHARDS_LIMIT = 10_000;

export function knowShard(accountId: string, shard: number): void {
  knownShards.set(accountId, shard);
  if (knownShards.size > KNOWN_SHARDS_LIMIT) knownShards.delete(knownShards.keys().next().value as string);
}

/**
 * The shard of the account: one directory read the first time an isolate asks. An account the
 * directory does not name is in shard 0, where every account lived before the directory (its
 * migration names them all).
 */
export async function shardOfAccount(shards: Shards, accountId: string): Promise<number> {
  const known = knownShards.get(accountId);
  if (known !== undefined) return known;
  const [row] = await shards.directory
    .select({ shard: accountShards.shard })
    .from(accountShards)
    .where(eq(accountShards.accountId, accountId))
    .limit(1);
  const shard = row?.shard ?? 0;
  if (shard >= shards.count) throw new Error(`account ${accountId} is in shard ${shard}, which is not bound`);
  knowShard(accountId, shard);
  return shard;
}

/** The database holding the account's rows. */
export async function accountDb(shards: Shards, accountId: string): Promise<Db> {
  return shards.db(await shardOfAccount(shards, accountId));
}

/**
 * Records in the directory which shard holds a new account, `db`'s, before any of its rows are
 * written there (insertAccount does it in its own batch when `db` is the directory's).
 */
export async function placeAccount(db: Db, accountId: string): Promise<void> {
  const shard = shardNumberOf(db);
  const directory = directoryOf(db);
  await prepare(directory.$client, accountShardInsert(accountId, shard)).run();
  knowShard(accountId, shard);
}

/**
 * Lets `value` of `kind` find its account in the directory, before the row it finds is written to
 * `db`; whether it was written (false: `value` already finds an account, maybe another).
 */
export async function addLookup(
  db: Db,
  lookup: { kind: LookupKind; value: string; accountId: string; createdAt?: number },
): Promise<boolean> {
  const directory = directoryOf(db);
  const statement = lookupInsert(lookup.kind, lookup.value, lookup.accountId, lookup.createdAt ?? null);
  const result = await prepare(directory.$client, statement).run();
  return result.meta.changes === 1;
}

/** Removes the lookup of `value` of `kind`, if it still finds `accountId`. */
export async function removeLookup(
  db: Db,
  lookup: { kind: LookupKind; value: string; accountId: string },
): Promise<void> {
  await directoryOf(db)
    .$client.prepare('DELETE FROM account_lookups WHERE kind = ?1 AND value = ?2 AND account_id = ?3')
    .bind(lookup.kind, lookup.value, lookup.accountId)
    .run();
}

/** The account `value` of `kind` names and its shard (read with it), or null. */
export async function findLookup(
  shards: Shards,
  kind: LookupKind,
  value: string,
): Promise<{ accountId: string; shard: number } | null> {
  const [row] = await shards.directory
    .select({ accountId: accountLookups.accountId, shard: accountShards.shard })
    .from(accountLookups)
    .leftJoin(accountShards, eq(accountShards.accountId, accountLookups.accountId))
    .where(and(eq(accountLookups.kind, kind), eq(accountLookups.value, value)))
    .limit(1);
  if (!row) return null;
  const shard = row.shard ?? 0;
  if (shard >= shards.count)
    throw new Error(`account ${row.accountId} is in shard ${shard}, which is not bound`);
  knowShard(row.accountId, shard);
  return { accountId: row.accountId, shard };
}

/**
 * The shard a new account goes to: the one with the fewest accounts in the directory (one
 * grouped read), the lowest number on a tie.
 */
export async function shardForNewAccount(shards: Shards): Promise<number> {
  const { results } = await shards.directory.$client
    .prepare(ACCOUNTS_BY_SHARD)
    .all<{ shard: number; accounts: number }>();
  return shardWithFewestAccounts(results, shards.count);
}

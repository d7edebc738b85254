// The D1 databases of a deployment, by account (docs/architecture.md, "Sharding what still
// grows"): `DB` is the directory and shard 0, each `DB_SHARD_n` binding shard n. A shard holds every
// row of the accounts it was given; the directory holds which shard that is (`account_shards`),
// what finds an account from outside it (`account_lookups`), and what all accounts share.
//
// Every database gets every migration, so the storage modules run unchanged on any shard: a
// caller picks the account's database, and a module that writes to the directory as well asks
// `directoryOf` for it.
import { eq } from 'drizzle-orm';
import { createDb, createRequestDb, type Db, prepare } from './db.ts';
import { accountShardInsert, keyLookupInsert } from './inserts.ts';
import { accountShards } from './schema.ts';

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

function knowShard(accountId: string, shard: number): void {
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

/** Lets an API key's hash find its account in the directory, before the key is written to `db`. */
export async function addKeyLookup(db: Db, keyHash: string, accountId: string): Promise<void> {
  const directory = directoryOf(db);
  await prepare(directory.$client, keyLookupInsert(keyHash, accountId)).run();
}

import { drizzle } from 'drizzle-orm/d1';
import { meteredD1 } from '../meter.ts';
import type { SqlStatement } from './ledger.ts';
import * as schema from './schema.ts';

export type Db = ReturnType<typeof build>;

// drizzle derives its relational metadata from the schema on construction: build it once
// per binding (the isolate keeps the same binding object across requests).
const instances = new WeakMap<D1Database, Db>();

export function createDb(d1: D1Database): Db {
  let db = instances.get(d1);
  if (!db) {
    db = build(d1);
    instances.set(d1, db);
  }
  return db;
}

function build(d1: D1Database) {
  return drizzle(meteredD1(d1), { schema });
}

/** A built statement (e.g. a ledger movement) prepared on D1, to run in a batch. */
export function prepare(d1: D1Database, statement: SqlStatement): D1PreparedStatement {
  return d1.prepare(statement.sql).bind(...statement.params);
}

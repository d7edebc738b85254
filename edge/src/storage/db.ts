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

/**
 * drizzle for one HTTP request, over a D1 session (Sessions API) whose first query goes to the
 * primary: every later read may be answered by a read replica near the Worker once that replica
 * has caught up with the first query, so each read still sees everything committed before the
 * request began, and the request's own writes (docs/capacity.md, "D1's primary"). Writes go to
 * the primary as ever. Built per request (about 70 µs): a session is the request's own.
 */
export function createRequestDb(d1: D1Database): Db {
  return build(d1.withSession('first-primary'));
}

// A session answers prepare and batch like the binding, the only two calls drizzle makes on its
// client; its types know only the binding.
function build(d1: D1Database | D1DatabaseSession) {
  return drizzle(meteredD1(d1) as D1Database, { schema });
}

/** A built statement (e.g. a ledger movement) prepared on D1, to run in a batch. */
export function prepare(d1: D1Database, statement: SqlStatement): D1PreparedStatement {
  return d1.prepare(statement.sql).bind(...statement.params);
}

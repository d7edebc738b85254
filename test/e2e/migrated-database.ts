// The e2e project's global setup: the D1 migrations applied once per run, into a folder every
// whole-system test copies as its stack's starting database (StackOptions.migratedFrom). A
// migration run is a wrangler process a database, many seconds of CPU; once is enough.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { applyMigrations } from '../../scripts/stack/d1.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    /** A persistence folder holding only the migrated database. */
    migratedDatabase: string;
  }
}

export default async function setup(project: TestProject): Promise<() => void> {
  const folder = mkdtempSync(join(tmpdir(), 'rcpt-e2e-migrated-'));
  await applyMigrations({ persistTo: folder });
  project.provide('migratedDatabase', folder);
  return () => rmSync(folder, { recursive: true, force: true });
}

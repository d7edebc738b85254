// The bulk page's preview: what an upload would cost, computed exactly as the real upload
// plans it (same parser, same dedupe), with nothing stored and nothing charged.

import { readBalance } from '../../storage/accounts.ts';
import type { Db } from '../../storage/db.ts';
import { rowsFromCsv } from '../batch/input.ts';
import type { BatchCounts } from '../batch/plan.ts';
import { planBatch } from '../batch/plan.ts';

export interface UploadPreview extends BatchCounts {
  headers: string[] | null;
  emailColumn: number | null;
  creditsRequired: number;
  creditsAvailable: number;
}

export async function previewCsvUpload(
  db: Db,
  input: {
    accountId: string;
    file: ReadableStream<Uint8Array>;
    emailColumn: string | undefined;
    now: number;
  },
): Promise<UploadPreview> {
  const upload = await rowsFromCsv(input.file, input.emailColumn);
  const { counts } = planBatch(upload.rows, input.now);
  const creditsAvailable = (await readBalance(db, input.accountId)) ?? 0;
  return {
    ...counts,
    headers: upload.headers,
    emailColumn: upload.emailColumn,
    creditsRequired: counts.totalEmails,
    creditsAvailable,
  };
}

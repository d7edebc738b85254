import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import { BulkResultsQuery, BulkResultsResponse, JobIdParam } from '@rcpt/shared/contract/api';
import { subStatusesAdvised } from '@rcpt/shared/contract/sub-statuses';
import type { AppEnv } from '../../app-env.ts';
import { requireScope } from '../../middleware/auth.ts';
import {
  DROPPED_ROWS_HEADER,
  downloadFileName,
  droppedRowsHeader,
  resultsCsvStream,
  resultsJsonStream,
} from '../../services/batch/downloads.ts';
import { notFoundJob } from '../../services/batch/jobs.ts';
import { dataModeOf } from '../../services/keys/api-keys.ts';
import { findJob } from '../../storage/jobs.ts';
import { AUTHENTICATED_ERRORS, errorResponses, RATE_LIMIT_HEADERS } from '../openapi-errors.ts';

const route = createRoute({
  method: 'get',
  path: '/api/v1/bulk/results/{jobId}',
  tags: ['Batch'],
  summary: 'Job results',
  description:
    'Results in the original upload order (a duplicate appears at each of its positions with the same verdict), ' +
    'paginated with `offset`/`limit`, filtered by verdict with `status` and by what to send to with `advice` ' +
    '(`advice=send`: the addresses to send to). `originalCsvData` holds the uploaded header and each row by position, aligned ' +
    'with `results`. `?format=csv` or `Accept: text/csv` returns the original columns plus verdict columns; every cell ' +
    "is quoted, and a formula a spreadsheet would run (at a cell's start, or behind a `,` `;` or tab inside it) is " +
    'prefixed with an apostrophe. 400 `JOB_NOT_COMPLETED` until the job is completed. Rows that cost nothing (no ' +
    'address, or a duplicate) are dropped 7 days after upload (`FREE_ROWS_RETENTION_DAYS`): from then on the ' +
    'results hold the charged rows, `droppedRows` says how many of which were dropped, and a CSV carries the same ' +
    'counts in its `Rcpt-Dropped-Rows` header (`invalid=3, empty=1, skipped=0, duplicate=5`).',
  security: [{ ApiKeyAuth: [] }],
  middleware: [requireScope(['bulk', 'read'])] as const,
  request: { params: JobIdParam, query: BulkResultsQuery },
  responses: {
    200: {
      description: 'The results.',
      headers: {
        ...RATE_LIMIT_HEADERS,
        'Rcpt-Dropped-Rows': {
          description:
            'CSV only, once rows that cost nothing were dropped: how many of each kind, as `droppedRows` counts them.',
          schema: { type: 'string' as const },
        },
      },
      content: {
        'application/json': { schema: BulkResultsResponse },
        'text/csv': { schema: z.string() },
      },
    },
    ...errorResponses([...AUTHENTICATED_ERRORS, 'VALIDATION_ERROR', 'JOB_NOT_COMPLETED', 'NOT_FOUND']),
  },
});

export function registerBulkResults(app: OpenAPIHono<AppEnv>): void {
  app.openapi(route, async (c) => {
    const { jobId } = c.req.valid('param');
    const { offset, limit, format, status, advice, bom } = c.req.valid('query');
    const job = await findJob(c.get('db'), c.get('caller').accountId, jobId, dataModeOf(c.get('caller')));
    if (!job) throw notFoundJob();
    const query = { offset, limit, statuses: status, subStatuses: advice && subStatusesAdvised(advice) };
    const wantsCsv =
      format === 'csv' || (format === undefined && /\btext\/csv\b/.test(c.req.header('accept') ?? ''));
    if (wantsCsv) {
      const csv = resultsCsvStream(c.get('db'), job, query, { byteOrderMark: bom === '1' });
      const subset = [...(status ?? []), ...(advice ?? [])];
      c.header('Content-Disposition', `attachment; filename="${downloadFileName(job, subset, 'csv')}"`);
      const dropped = droppedRowsHeader(job);
      if (dropped) c.header(DROPPED_ROWS_HEADER, dropped);
      return c.body(csv, 200, { 'Content-Type': 'text/csv; charset=utf-8' });
    }
    // A page may be the whole job (10,000 results and their rows): streamed, never held whole.
    const json = await resultsJsonStream(c.get('db'), job, query, {
      lead: { success: true },
      pagination: true,
    });
    return c.body(json, 200, { 'Content-Type': 'application/json; charset=UTF-8' });
  });
}

import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import { BulkJobsResponse, PageQuery } from '@rcpt/shared/contract/api';
import type { AppEnv } from '../../app-env.ts';
import { requireScope } from '../../middleware/auth.ts';
import { jobView } from '../../services/batch/jobs.ts';
import { dataModeOf } from '../../services/keys/api-keys.ts';
import { countJobs, listJobs } from '../../storage/jobs.ts';
import { AUTHENTICATED_ERRORS, errorResponses, jsonReply } from '../openapi-errors.ts';

const route = createRoute({
  method: 'get',
  path: '/api/v1/bulk/jobs',
  tags: ['Batch'],
  summary: "The account's jobs",
  description: 'Newest first.',
  security: [{ ApiKeyAuth: [] }],
  middleware: [requireScope(['bulk', 'read'])] as const,
  request: { query: PageQuery },
  responses: {
    200: jsonReply('Jobs.', BulkJobsResponse),
    ...errorResponses([...AUTHENTICATED_ERRORS, 'VALIDATION_ERROR']),
  },
});

export function registerBulkJobs(app: OpenAPIHono<AppEnv>): void {
  app.openapi(route, async (c) => {
    const page = c.req.valid('query');
    const { accountId } = c.get('caller');
    const mode = dataModeOf(c.get('caller'));
    const [rows, total] = await Promise.all([
      listJobs(c.get('db'), accountId, page, mode),
      countJobs(c.get('db'), accountId, mode),
    ]);
    return c.json({ success: true as const, jobs: rows.map(jobView), pagination: { ...page, total } }, 200);
  });
}

import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import { BulkStatusResponse, JobIdParam } from '@rcpt/shared/contract/api';
import type { AppEnv } from '../../app-env.ts';
import { requireScope } from '../../middleware/auth.ts';
import { domainChangesOf } from '../../services/batch/domain-changes.ts';
import { jobView, notFoundJob } from '../../services/batch/jobs.ts';
import { dataModeOf } from '../../services/keys/api-keys.ts';
import { findJob } from '../../storage/jobs.ts';
import { AUTHENTICATED_ERRORS, errorResponses, jsonReply } from '../openapi-errors.ts';

const route = createRoute({
  method: 'get',
  path: '/api/v1/bulk/status/{jobId}',
  tags: ['Batch'],
  summary: 'Job status',
  description:
    'Progress, counts per status, the bounce estimate, the credits charged and refunded, and for a watched job ' +
    'until when it watches its domains and the changes it saw.',
  security: [{ ApiKeyAuth: [] }],
  middleware: [requireScope(['bulk', 'read'])] as const,
  request: { params: JobIdParam },
  responses: {
    200: jsonReply('The job.', BulkStatusResponse),
    ...errorResponses([...AUTHENTICATED_ERRORS, 'VALIDATION_ERROR', 'NOT_FOUND']),
  },
});

export function registerBulkStatus(app: OpenAPIHono<AppEnv>): void {
  app.openapi(route, async (c) => {
    const job = await findJob(
      c.get('db'),
      c.get('caller').accountId,
      c.req.valid('param').jobId,
      dataModeOf(c.get('caller')),
    );
    if (!job) throw notFoundJob();
    const domainChanges = job.watchDays === null ? [] : await domainChangesOf({ db: c.get('db') }, job.id);
    return c.json({ success: true as const, job: jobView(job), domainChanges }, 200);
  });
}

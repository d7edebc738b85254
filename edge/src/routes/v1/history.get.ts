import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import { HistoryQuery, HistoryResponse } from '@rcpt/shared/contract/api';
import type { AppEnv } from '../../app-env.ts';
import { requireScope } from '../../middleware/auth.ts';
import { historyPage } from '../../services/history.ts';
import { dataModeOf } from '../../services/keys/api-keys.ts';
import { AUTHENTICATED_ERRORS, errorResponses, jsonReply } from '../openapi-errors.ts';

const route = createRoute({
  method: 'get',
  path: '/api/v1/history',
  tags: ['Account'],
  summary: 'Verification history',
  description:
    'Single verifications and batch jobs, newest first; filter by kind, status (single) and date range.',
  security: [{ ApiKeyAuth: [] }],
  middleware: [requireScope(['read'])] as const,
  request: { query: HistoryQuery },
  responses: {
    200: jsonReply('History entries.', HistoryResponse),
    ...errorResponses([...AUTHENTICATED_ERRORS, 'VALIDATION_ERROR']),
  },
});

export function registerHistory(app: OpenAPIHono<AppEnv>): void {
  app.openapi(route, async (c) => {
    const { offset, limit, kind, status, from, to } = c.req.valid('query');
    const { accountId } = c.get('caller');
    const { entries, total } = await historyPage(
      c.get('db'),
      accountId,
      {
        ...(dataModeOf(c.get('caller')) ? { mode: dataModeOf(c.get('caller')) } : {}),
        ...(kind ? { kind } : {}),
        ...(status ? { status } : {}),
        ...(from ? { from: Date.parse(from) } : {}),
        ...(to ? { to: Date.parse(to) } : {}),
      },
      { offset, limit },
    );
    const history = entries.map(({ job, ...entry }) => ({
      ...entry,
      createdAt: new Date(entry.createdAt).toISOString(),
      ...(job ? { job } : {}),
    }));
    return c.json({ success: true as const, history, pagination: { offset, limit, total } }, 200);
  });
}

import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import { PageQuery, WebhookDeliveriesResponse } from '@rcpt/shared/contract/api';
import type { AppEnv } from '../../app-env.ts';
import { settingsKeyOnly } from '../../middleware/auth.ts';
import { listDeliveries } from '../../storage/webhooks.ts';
import { errorResponses, jsonReply, SETTINGS_KEY_ERRORS } from '../openapi-errors.ts';
import { deliveryView } from './webhook-delivery-view.ts';

const route = createRoute({
  method: 'get',
  path: '/api/v1/webhooks/deliveries',
  tags: ['Webhooks'],
  summary: 'Recent webhook deliveries',
  description: 'Every delivery and its attempts: state, last HTTP status or error, next retry. Newest first.',
  security: [{ ApiKeyAuth: [] }],
  middleware: [settingsKeyOnly] as const,
  request: { query: PageQuery },
  responses: {
    200: jsonReply('Deliveries.', WebhookDeliveriesResponse),
    ...errorResponses([...SETTINGS_KEY_ERRORS, 'VALIDATION_ERROR']),
  },
});

export function registerWebhookDeliveries(app: OpenAPIHono<AppEnv>): void {
  app.openapi(route, async (c) => {
    const page = c.req.valid('query');
    const rows = await listDeliveries(c.get('db'), c.get('caller').accountId, page);
    return c.json(
      {
        success: true as const,
        deliveries: rows.map(deliveryView),
        pagination: { ...page, total: page.offset + rows.length },
      },
      200,
    );
  });
}

import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import { WebhookTestResponse } from '@rcpt/shared/contract/api';
import type { AppEnv } from '../../app-env.ts';
import { settingsKeyOnly } from '../../middleware/auth.ts';
import { sendTestEvent } from '../../services/webhooks/delivery.ts';
import { AUTHENTICATED_ERRORS, errorResponses, jsonReply } from '../openapi-errors.ts';
import { deliveryView } from './webhook-delivery-view.ts';

const route = createRoute({
  method: 'post',
  path: '/api/v1/webhooks/test',
  tags: ['Webhooks'],
  summary: 'Send a test event to the default URL',
  description:
    'Sends a `webhook.test` event to the default URL once, while the request waits: its answer is the ' +
    'delivery and that one attempt. A test event is never retried (job events are). ' +
    'Each test event is stored as a delivery, which counts against the storage budget of the day ' +
    '(`QUOTA_STORAGE_BYTES_PER_DAY`): past it, 429 `QUOTA_EXCEEDED`.',
  security: [{ ApiKeyAuth: [] }],
  middleware: [settingsKeyOnly] as const,
  responses: {
    200: jsonReply('The delivery and its only attempt.', WebhookTestResponse),
    ...errorResponses([
      ...AUTHENTICATED_ERRORS,
      'FORBIDDEN',
      'EMAIL_NOT_CONFIRMED',
      'VALIDATION_ERROR',
      'QUOTA_EXCEEDED',
      'SERVICE_UNAVAILABLE',
    ]),
  },
});

export function registerWebhookTest(app: OpenAPIHono<AppEnv>): void {
  app.openapi(route, async (c) => {
    const delivery = await sendTestEvent(c.get('db'), c.get('caller').accountId, c.get('config'), Date.now());
    return c.json({ success: true as const, delivery: deliveryView(delivery) }, 200);
  });
}

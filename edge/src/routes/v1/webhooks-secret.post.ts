import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import { WebhookSecretResponse } from '@rcpt/shared/contract/api';
import type { AppEnv } from '../../app-env.ts';
import { settingsKeyOnly } from '../../middleware/auth.ts';
import { rotateWebhookSecret } from '../../services/webhooks/settings.ts';
import { errorResponses, jsonReply, SETTINGS_KEY_ERRORS } from '../openapi-errors.ts';

const route = createRoute({
  method: 'post',
  path: '/api/v1/webhooks/secret',
  tags: ['Webhooks'],
  summary: 'Create or rotate the signing secret',
  description:
    'Returns a new `whsec_…` secret, shown once; the previous one stops signing at once. Deliveries carry ' +
    '`webhook-id`, `webhook-timestamp` and `webhook-signature` (Standard Webhooks, HMAC-SHA256).',
  security: [{ ApiKeyAuth: [] }],
  middleware: [settingsKeyOnly] as const,
  responses: {
    200: jsonReply('The new secret.', WebhookSecretResponse),
    ...errorResponses([...SETTINGS_KEY_ERRORS, 'EMAIL_NOT_CONFIRMED', 'SERVICE_UNAVAILABLE']),
  },
});

export function registerWebhookSecret(app: OpenAPIHono<AppEnv>): void {
  app.openapi(route, async (c) => {
    const secret = await rotateWebhookSecret(
      c.get('db'),
      c.get('caller').accountId,
      c.get('config').SECRETS_KEY,
    );
    return c.json({ success: true as const, secret }, 200);
  });
}

import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import { WebhookSettingsRequest, WebhookSettingsResponse } from '@rcpt/shared/contract/api';
import type { AppEnv } from '../../app-env.ts';
import { settingsKeyOnly } from '../../middleware/auth.ts';
import { jsonBody } from '../../middleware/json-body.ts';
import { setDefaultWebhookUrl } from '../../services/webhooks.ts';
import { findAccount } from '../../storage/accounts.ts';
import {
  AUTHENTICATED_ERRORS,
  errorResponses,
  JSON_BODY_ERRORS,
  RATE_LIMIT_HEADERS,
} from '../openapi-errors.ts';

const route = createRoute({
  method: 'put',
  path: '/api/v1/webhooks',
  tags: ['Webhooks'],
  summary: 'Set the default webhook URL',
  description:
    "Job events (`job.completed`, `job.failed`, and `job.updated` when a recheck round, or a watched domain's " +
    "change, changed a verdict) go to the job's `webhookUrl` or this default. https only.",
  security: [{ ApiKeyAuth: [] }],
  middleware: [settingsKeyOnly, jsonBody] as const,
  request: { body: { required: true, content: { 'application/json': { schema: WebhookSettingsRequest } } } },
  responses: {
    200: {
      description: 'The settings.',
      headers: RATE_LIMIT_HEADERS,
      content: { 'application/json': { schema: WebhookSettingsResponse } },
    },
    ...errorResponses([...AUTHENTICATED_ERRORS, 'FORBIDDEN', 'EMAIL_NOT_CONFIRMED', ...JSON_BODY_ERRORS]),
  },
});

export function registerWebhookSettings(app: OpenAPIHono<AppEnv>): void {
  app.openapi(route, async (c) => {
    const { url } = c.req.valid('json');
    const { accountId } = c.get('caller');
    const webhookUrl = await setDefaultWebhookUrl(
      c.get('db'),
      accountId,
      url,
      c.get('config').ALLOW_PRIVATE_TARGETS,
    );
    const account = await findAccount(c.get('db'), accountId);
    return c.json(
      { success: true as const, url: webhookUrl, hasSecret: Boolean(account?.webhookSecret) },
      200,
    );
  });
}

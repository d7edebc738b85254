import type { OpenAPIHono } from '@hono/zod-openapi';
import { WebhookSettingsRequest, WebhookSettingsResponse } from '@rcpt/shared/contract/api';
import type { AppEnv } from '../../app-env.ts';
import { setDefaultWebhookUrl } from '../../services/webhooks/settings.ts';
import { findAccount } from '../../storage/accounts.ts';
import { settingsChangeRoute } from './settings-change-route.ts';

const route = settingsChangeRoute({
  path: '/api/v1/webhooks',
  tags: ['Webhooks'],
  summary: 'Set the default webhook URL',
  description:
    "Job events (`job.completed`, `job.failed`, and `job.updated` when a recheck round, or a watched domain's " +
    "change, changed a verdict) go to the job's `webhookUrl` or this default. https only.",
  body: WebhookSettingsRequest,
  answer: WebhookSettingsResponse,
  answered: 'The settings.',
  errors: ['EMAIL_NOT_CONFIRMED'],
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

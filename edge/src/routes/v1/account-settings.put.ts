import type { OpenAPIHono } from '@hono/zod-openapi';
import { AccountSettingsRequest, AccountSettingsResponse } from '@rcpt/shared/contract/api';
import type { AppEnv } from '../../app-env.ts';
import { changeAccountSettings } from '../../services/accounts/settings.ts';
import { settingsChangeRoute } from './settings-change-route.ts';

const route = settingsChangeRoute({
  path: '/api/v1/account/settings',
  tags: ['Account'],
  summary: "Change the account's defaults",
  description:
    '`recheck`: whether uploads that do not say ask temporary answers again over the next hours (greylist ' +
    'follow-up; see `recheck` of `POST /api/v1/bulk/upload`). `watch`: whether uploads that do not say watch ' +
    'their domains for 30 days after completion (see `watch` of the upload). `sharedFleetFallback`: whether the ' +
    'shared probers probe for the account when none of the probers it runs itself can. ' +
    'A field left out keeps its value. ' +
    'Live keys only.',
  body: AccountSettingsRequest,
  answer: AccountSettingsResponse,
  answered: 'The settings as they now are.',
});

export function registerAccountSettings(app: OpenAPIHono<AppEnv>): void {
  app.openapi(route, async (c) => {
    const settings = await changeAccountSettings(
      { db: c.get('db'), limiters: c.get('services').limiters },
      c.get('caller').accountId,
      c.req.valid('json'),
    );
    return c.json({ success: true as const, settings }, 200);
  });
}

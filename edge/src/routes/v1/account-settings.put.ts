import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import { AccountSettingsRequest, AccountSettingsResponse } from '@rcpt/shared/contract/api';
import type { AppEnv } from '../../app-env.ts';
import { settingsKeyOnly } from '../../middleware/auth.ts';
import { jsonBody } from '../../middleware/json-body.ts';
import { changeAccountSettings } from '../../services/account-settings.ts';
import {
  AUTHENTICATED_ERRORS,
  errorResponses,
  JSON_BODY_ERRORS,
  RATE_LIMIT_HEADERS,
} from '../openapi-errors.ts';

const route = createRoute({
  method: 'put',
  path: '/api/v1/account/settings',
  tags: ['Account'],
  summary: "Change the account's defaults",
  description:
    '`recheck`: whether uploads that do not say ask temporary answers again over the next hours (greylist ' +
    'follow-up; see `recheck` of `POST /api/v1/bulk/upload`). `watch`: whether uploads that do not say watch ' +
    'their domains for 30 days after completion (see `watch` of the upload). A field left out keeps its value. ' +
    'Live keys only.',
  security: [{ ApiKeyAuth: [] }],
  middleware: [settingsKeyOnly, jsonBody] as const,
  request: { body: { required: true, content: { 'application/json': { schema: AccountSettingsRequest } } } },
  responses: {
    200: {
      description: 'The settings as they now are.',
      headers: RATE_LIMIT_HEADERS,
      content: { 'application/json': { schema: AccountSettingsResponse } },
    },
    ...errorResponses([...AUTHENTICATED_ERRORS, 'FORBIDDEN', ...JSON_BODY_ERRORS]),
  },
});

export function registerAccountSettings(app: OpenAPIHono<AppEnv>): void {
  app.openapi(route, async (c) => {
    const settings = await changeAccountSettings(c.get('db'), c.get('caller').accountId, c.req.valid('json'));
    return c.json({ success: true as const, settings }, 200);
  });
}

import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import {
  PageQuery,
  WebhookDeliveriesResponse,
  WebhookSecretResponse,
  WebhookSettingsRequest,
  WebhookSettingsResponse,
  WebhookTestResponse,
} from '@rcpt/shared/contract/api';
import type { AppEnv } from '../../app-env.ts';
import { jsonBody } from '../../middleware/json-body.ts';
import { rotateWebhookSecret, sendTestEvent, validateWebhookUrl } from '../../services/webhooks.ts';
import { findAccount } from '../../storage/accounts.ts';
import { listDeliveries, setAccountWebhook, type WebhookDeliveryRow } from '../../storage/webhooks.ts';
import {
  AUTHENTICATED_ERRORS,
  errorResponses,
  JSON_BODY_ERRORS,
  RATE_LIMIT_HEADERS,
} from '../openapi-errors.ts';

const security = [{ ApiKeyAuth: [] }];

const settingsRoute = createRoute({
  method: 'put',
  path: '/api/v1/webhooks',
  tags: ['Webhooks'],
  summary: 'Set the default webhook URL',
  description:
    "Job events (`job.completed`, `job.failed`) go to the job's `webhookUrl` or this default. https only.",
  security,
  middleware: [jsonBody] as const,
  request: { body: { required: true, content: { 'application/json': { schema: WebhookSettingsRequest } } } },
  responses: {
    200: {
      description: 'The settings.',
      headers: RATE_LIMIT_HEADERS,
      content: { 'application/json': { schema: WebhookSettingsResponse } },
    },
    ...errorResponses([...AUTHENTICATED_ERRORS, ...JSON_BODY_ERRORS]),
  },
});

const secretRoute = createRoute({
  method: 'post',
  path: '/api/v1/webhooks/secret',
  tags: ['Webhooks'],
  summary: 'Create or rotate the signing secret',
  description:
    'Returns a new `whsec_…` secret, shown once; the previous one stops signing at once. Deliveries carry ' +
    '`webhook-id`, `webhook-timestamp` and `webhook-signature` (Standard Webhooks, HMAC-SHA256).',
  security,
  responses: {
    200: {
      description: 'The new secret.',
      headers: RATE_LIMIT_HEADERS,
      content: { 'application/json': { schema: WebhookSecretResponse } },
    },
    ...errorResponses([...AUTHENTICATED_ERRORS, 'SERVICE_UNAVAILABLE']),
  },
});

const testRoute = createRoute({
  method: 'post',
  path: '/api/v1/webhooks/test',
  tags: ['Webhooks'],
  summary: 'Send a test event to the default URL',
  security,
  responses: {
    200: {
      description: 'The delivery and its first attempt.',
      headers: RATE_LIMIT_HEADERS,
      content: { 'application/json': { schema: WebhookTestResponse } },
    },
    ...errorResponses([...AUTHENTICATED_ERRORS, 'VALIDATION_ERROR', 'SERVICE_UNAVAILABLE']),
  },
});

const deliveriesRoute = createRoute({
  method: 'get',
  path: '/api/v1/webhooks/deliveries',
  tags: ['Webhooks'],
  summary: 'Recent webhook deliveries',
  description: 'Every delivery and its attempts: state, last HTTP status or error, next retry. Newest first.',
  security,
  request: { query: PageQuery },
  responses: {
    200: {
      description: 'Deliveries.',
      headers: RATE_LIMIT_HEADERS,
      content: { 'application/json': { schema: WebhookDeliveriesResponse } },
    },
    ...errorResponses([...AUTHENTICATED_ERRORS, 'VALIDATION_ERROR']),
  },
});

export function deliveryView(row: WebhookDeliveryRow) {
  const iso = (at: number | null) => (at === null ? null : new Date(at).toISOString());
  return {
    id: row.id,
    eventType: row.eventType,
    jobId: row.jobId,
    url: row.url,
    state: row.state,
    attempts: row.attempts,
    lastStatus: row.lastStatus,
    lastError: row.lastError,
    nextAttemptAt: iso(row.nextAttemptAt),
    createdAt: new Date(row.createdAt).toISOString(),
    deliveredAt: iso(row.deliveredAt),
  };
}

export function registerWebhooks(app: OpenAPIHono<AppEnv>): void {
  app.openapi(settingsRoute, async (c) => {
    const { url } = c.req.valid('json');
    const { accountId } = c.get('caller');
    const webhookUrl = url === null ? null : validateWebhookUrl(url, c.get('config').ALLOW_PRIVATE_TARGETS);
    await setAccountWebhook(c.get('db'), accountId, { webhookUrl });
    const account = await findAccount(c.get('db'), accountId);
    return c.json(
      { success: true as const, url: webhookUrl, hasSecret: Boolean(account?.webhookSecret) },
      200,
    );
  });
  app.openapi(secretRoute, async (c) => {
    const secret = await rotateWebhookSecret(
      c.get('db'),
      c.get('caller').accountId,
      c.get('config').SECRETS_KEY,
    );
    return c.json({ success: true as const, secret }, 200);
  });
  app.openapi(testRoute, async (c) => {
    const delivery = await sendTestEvent(c.get('db'), c.get('caller').accountId, c.get('config'), Date.now());
    return c.json({ success: true as const, delivery: deliveryView(delivery) }, 200);
  });
  app.openapi(deliveriesRoute, async (c) => {
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

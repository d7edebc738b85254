// The account's endpoints for the sending services' webhooks: create (the credential shown once),
// list, revoke. Settings that feed live data: a live key with every scope (settingsKeyOnly).
import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import { OutcomeEndpoint, OutcomeEndpointRequest, OutcomeEndpointResponse } from '@rcpt/shared/contract/api';
import type { AppEnv } from '../../app-env.ts';
import { settingsKeyOnly } from '../../middleware/auth.ts';
import { jsonBody } from '../../middleware/json-body.ts';
import {
  createOutcomeEndpoint,
  endpointDepsOf,
  MAX_OUTCOME_ENDPOINTS,
  outcomeEndpointsOf,
  revokeEndpoint,
} from '../../services/outcomes/endpoints.ts';
import { errorResponses, JSON_BODY_ERRORS, jsonReply, SETTINGS_KEY_ERRORS } from '../openapi-errors.ts';

const create = createRoute({
  method: 'post',
  path: '/api/v1/outcomes/endpoints',
  tags: ['Outcomes'],
  summary: "Add an endpoint for a sending service's webhook",
  description:
    'Makes a URL (`/hooks/outcomes/{provider}/{id}`) to give the sending service as its event webhook; what it ' +
    'posts there is checked by the service\'s own scheme and recorded as outcomes (docs: verdicts, "Outcomes"). ' +
    '`ses`: SES notifications through SNS, signed by SNS (the certificate fetched from an SNS host), only from ' +
    '`topicArn`; the subscription is confirmed when SNS asks. `sendgrid`: the signed Event Webhook, checked with ' +
    'the verification key given as `publicKey`. `postmark`: HTTP basic auth — put the `basicAuth` credentials ' +
    '(shown once) in the webhook URL as `https://user:password@host/…`. `mailgun`: checked with the HTTP webhook ' +
    `signing key given as \`signingKey\` (kept encrypted). At most ${MAX_OUTCOME_ENDPOINTS} endpoints (409 \`CONFLICT\`). ` +
    'A refused webhook answers 401 `OUTCOME_HOOK_UNAUTHORIZED` and records nothing. The guarantee: a hard bounce ' +
    'on a mailbox reason, posted here, of a `deliverable` verdict the account was charged for within 30 days gives ' +
    'one credit back, once per verdict (a `guarantee_refund` ledger row), at most one a month per 100 charged ' +
    'verifications of the month (docs: money, "The guarantee").',
  security: [{ ApiKeyAuth: [] }],
  middleware: [settingsKeyOnly, jsonBody] as const,
  request: { body: { required: true, content: { 'application/json': { schema: OutcomeEndpointRequest } } } },
  responses: {
    200: jsonReply('The endpoint, and for Postmark its credentials (shown once).', OutcomeEndpointResponse),
    ...errorResponses([...SETTINGS_KEY_ERRORS, ...JSON_BODY_ERRORS, 'CONFLICT', 'SERVICE_UNAVAILABLE']),
  },
});

const list = createRoute({
  method: 'get',
  path: '/api/v1/outcomes/endpoints',
  tags: ['Outcomes'],
  summary: 'List the outcome endpoints',
  security: [{ ApiKeyAuth: [] }],
  middleware: [settingsKeyOnly] as const,
  responses: {
    200: jsonReply(
      'The endpoints not revoked, newest first.',
      z
        .object({ success: z.literal(true), endpoints: z.array(OutcomeEndpoint) })
        .meta({ id: 'OutcomeEndpointsResponse' }),
    ),
    ...errorResponses(SETTINGS_KEY_ERRORS),
  },
});

const revoke = createRoute({
  method: 'delete',
  path: '/api/v1/outcomes/endpoints/{id}',
  tags: ['Outcomes'],
  summary: 'Revoke an outcome endpoint',
  description: 'Its URL answers 404 from now on; the outcomes it recorded stay.',
  security: [{ ApiKeyAuth: [] }],
  middleware: [settingsKeyOnly] as const,
  request: { params: z.object({ id: z.string().max(100) }) },
  responses: {
    200: jsonReply('Revoked.', z.object({ success: z.literal(true) })),
    ...errorResponses([...SETTINGS_KEY_ERRORS, 'NOT_FOUND']),
  },
});

export function registerOutcomeEndpoints(app: OpenAPIHono<AppEnv>): void {
  app.openapi(create, async (c) => {
    const created = await createOutcomeEndpoint(
      endpointDepsOf(c.get('db'), c.get('config'), c.req.url),
      c.get('caller').accountId,
      c.req.valid('json'),
    );
    return c.json({ success: true as const, ...created }, 200);
  });
  app.openapi(list, async (c) => {
    const endpoints = await outcomeEndpointsOf(
      c.get('db'),
      c.get('caller').accountId,
      new URL(c.req.url).origin,
    );
    return c.json({ success: true as const, endpoints }, 200);
  });
  app.openapi(revoke, async (c) => {
    await revokeEndpoint(c.get('db'), c.get('caller').accountId, c.req.valid('param').id, Date.now());
    return c.json({ success: true as const }, 200);
  });
}

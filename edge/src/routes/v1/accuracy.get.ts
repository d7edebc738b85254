import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import { AccuracyQuery, AccuracyResponse, MAX_ACCURACY_DAYS } from '@rcpt/shared/contract/api';
import type { AppEnv } from '../../app-env.ts';
import { requireScope } from '../../middleware/auth.ts';
import { accuracyOf, accuracyRange } from '../../services/outcomes/accuracy.ts';
import { AUTHENTICATED_ERRORS, errorResponses, jsonReply } from '../openapi-errors.ts';

const route = createRoute({
  method: 'get',
  path: '/api/v1/accuracy',
  tags: ['Outcomes'],
  summary: "How right rcpt's verdicts were",
  description:
    "The account's reported outcomes (`POST /api/v1/outcomes` and the sending services' webhooks) against the " +
    'verdicts they were matched to, by the status rcpt gave: `matched`, `delivered`, `mailboxBounces` and the ' +
    'other counts, and `wrong` with its rate — a mailbox-reason hard bounce of a `deliverable` or `risky`, a ' +
    'delivery of an `undeliverable`. A policy bounce (blocked, spam) says nothing of the mailbox and is never ' +
    `wrong. Overall, by provider, by sub-status and by week; at most ${MAX_ACCURACY_DAYS} days, the last 30 by ` +
    'default. Scope `read`.',
  security: [{ ApiKeyAuth: [] }],
  middleware: [requireScope(['read'])] as const,
  request: { query: AccuracyQuery },
  responses: {
    200: jsonReply('The counts and rates.', AccuracyResponse),
    ...errorResponses([...AUTHENTICATED_ERRORS, 'VALIDATION_ERROR']),
  },
});

export function registerAccuracy(app: OpenAPIHono<AppEnv>): void {
  app.openapi(route, async (c) => {
    const range = accuracyRange(c.req.valid('query'), Date.now());
    return c.json(await accuracyOf(c.get('db'), c.get('caller').accountId, range), 200);
  });
}

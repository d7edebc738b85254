import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import { MAX_OUTCOMES_PER_REQUEST, OutcomesRequest, OutcomesResponse } from '@rcpt/shared/contract/api';
import type { AppEnv } from '../../app-env.ts';
import { requireScope } from '../../middleware/auth.ts';
import { jsonBody } from '../../middleware/json-body.ts';
import { quotasOf } from '../../services/money/quotas.ts';
import { recordOutcomes, reportedOutcomes } from '../../services/outcomes/record.ts';
import { AUTHENTICATED_ERRORS, errorResponses, JSON_BODY_ERRORS, jsonReply } from '../openapi-errors.ts';

const route = createRoute({
  method: 'post',
  path: '/api/v1/outcomes',
  tags: ['Outcomes'],
  summary: 'Report what happened to sends',
  description:
    `Records up to ${MAX_OUTCOMES_PER_REQUEST.toLocaleString('en-US')} outcomes of sends — \`delivered\`, \`hard_bounce\`, ` +
    "`soft_bounce`, `complaint` — each matched to the account's latest verdict for the address made before `at` " +
    'and at most 30 days before it, with keys of the same mode (a single call or the address in a job). A ' +
    "bounce's `diagnostic` (the remote server's reply) is read with rcpt's reply table: `mailbox` (5.1.1 user " +
    'unknown…), `policy` (5.7.1 blocked, block lists…) or `other`. The same address, outcome and time count once: ' +
    'a repeat answers `duplicate: true` and stores nothing. Free; counted in the storage budget (429 ' +
    '`QUOTA_EXCEEDED`, nothing stored) and kept as long as verifications. One bad outcome is a 400 and none is ' +
    "stored. What is learnt: a mailbox hard bounce makes the account's later verdicts of the address " +
    '`undeliverable` (`meta.learnt`) until a later `delivered`; accepted addresses that bounce for several ' +
    'accounts make their domain `risky / accepts_then_bounces` (docs: verdicts, "Learning from outcomes"). ' +
    'Outcomes given here never claim the guarantee (a credit back for a `deliverable` verdict that ' +
    'bounced): only signed webhooks do. Sending services can post their own webhooks instead: ' +
    '`POST /api/v1/outcomes/endpoints`. Scope `outcomes`.',
  security: [{ ApiKeyAuth: [] }],
  middleware: [requireScope(['outcomes']), jsonBody] as const,
  request: { body: { required: true, content: { 'application/json': { schema: OutcomesRequest } } } },
  responses: {
    200: jsonReply(
      'The outcomes, in the order of the request, with what they were matched to.',
      OutcomesResponse,
    ),
    ...errorResponses([...AUTHENTICATED_ERRORS, ...JSON_BODY_ERRORS, 'QUOTA_EXCEEDED']),
  },
});

export function registerOutcomes(app: OpenAPIHono<AppEnv>): void {
  app.openapi(route, async (c) => {
    const { outcomes } = c.req.valid('json');
    const caller = c.get('caller');
    // The plain API is not signed by a sending service: it never claims the guarantee.
    const { answer } = await recordOutcomes(
      { db: c.get('db'), quotas: quotasOf(c.get('config')), now: Date.now(), desks: c.get('services').desks },
      { accountId: caller.accountId, apiKeyId: caller.apiKeyId, mode: caller.mode, source: 'api' },
      reportedOutcomes(outcomes),
    );
    return c.json(answer, 200);
  });
}

import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import { VerifyRequest, VerifyResponse } from '@rcpt/shared/contract/api';
import type { AppEnv } from '../../app-env.ts';
import { jsonBody } from '../../middleware/json-body.ts';
import { verifyForCaller } from '../../services/single-verification.ts';
import { verifyDepsOf } from '../../services/verify-deps.ts';
import {
  AUTHENTICATED_ERRORS,
  errorResponses,
  JSON_BODY_ERRORS,
  RATE_LIMIT_HEADERS,
} from '../openapi-errors.ts';

const route = createRoute({
  method: 'post',
  path: '/api/v1/verify',
  tags: ['Verification'],
  summary: 'Verify one address',
  description:
    'Checks syntax, DNS (MX), the mailbox over SMTP, and disposable / role / free-provider / catch-all / typo signals. ' +
    'Costs 1 credit whatever the status. Test keys (`rk_test_…`) are free and answer the magic local parts ' +
    '`deliverable`, `undeliverable`, `risky`, `catchall`, `greylisted`, `unknown` (any domain) without DNS or SMTP.',
  security: [{ ApiKeyAuth: [] }],
  middleware: [jsonBody] as const,
  request: { body: { required: true, content: { 'application/json': { schema: VerifyRequest } } } },
  responses: {
    200: {
      description: 'The verdict, with the checks behind it.',
      headers: RATE_LIMIT_HEADERS,
      content: {
        'application/json': {
          schema: VerifyResponse,
        },
      },
    },
    ...errorResponses([...AUTHENTICATED_ERRORS, ...JSON_BODY_ERRORS, 'INSUFFICIENT_CREDITS']),
  },
});

export function registerVerify(app: OpenAPIHono<AppEnv>): void {
  // The alias without /api appears in one published usage example (SPEC §4); it is not in the document.
  for (const definition of [route, { ...route, path: '/v1/verify', hide: true }]) {
    app.openapi(definition, async (c) => {
      const { email } = c.req.valid('json');
      const { result, creditsRemaining } = await verifyForCaller({
        db: c.get('db'),
        deps: verifyDepsOf(c.env, c.get('config')),
        caller: c.get('caller'),
        email,
        requestId: c.get('requestId'),
        now: Date.now(),
      });
      return c.json({ success: true as const, data: result, creditsRemaining }, 200);
    });
  }
}

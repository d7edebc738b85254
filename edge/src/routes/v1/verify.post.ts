import { createRoute, type OpenAPIHono, z } from '@hono/zod-openapi';
import {
  IdempotencyHeaders,
  PublishableVerifyRequest,
  VerifyRequest,
  VerifyResponse,
} from '@rcpt/shared/contract/api';
import { validationError } from '@rcpt/shared/errors';
import type { AppEnv } from '../../app-env.ts';
import { requireScope } from '../../middleware/auth.ts';
import { jsonBody } from '../../middleware/json-body.ts';
import { admitPublishableVerification } from '../../middleware/publishable-keys.ts';
import { pageAnswer } from '../../services/keys/publishable-keys.ts';
import { answerRequestOnce, replyWith } from '../idempotent-reply.ts';
import { chargedPostResponses } from '../openapi-errors.ts';
import { verifyAsAsked } from '../single-call.ts';

const route = createRoute({
  method: 'post',
  path: '/api/v1/verify',
  tags: ['Verification'],
  summary: 'Verify one address',
  description:
    'Checks syntax, DNS (MX), the mailbox over SMTP, and disposable / role / free-provider / catch-all / typo signals. ' +
    'Costs 1 credit whatever the status (`timeout_exceeded` included). ' +
    "The account's recent verdict for the same address is answered again " +
    '(`meta.cached: true`, charged the same) unless `fresh: true` asks for a new one. Test keys (`rk_test_…`) are free and answer the magic local parts ' +
    '`deliverable`, `undeliverable`, `risky`, `catchall`, `greylisted`, `unknown` (any domain) without DNS or SMTP; ' +
    "every answer's history row counts against the account's storage budget of the day " +
    '(`QUOTA_STORAGE_BYTES_PER_DAY`, default 100 MB, shared with every other write): past it, 429 `QUOTA_EXCEEDED` ' +
    'with `resetAt` (midnight UTC) and `Retry-After`, nothing charged. ' +
    'Test-key history is kept 7 days. ' +
    'Publishable keys (`rk_pub_…`, for web pages) call this operation only, from the origins they list ' +
    '(403 `ORIGIN_NOT_ALLOWED` otherwise; CORS preflight answered), with `{ "email" }` only (anything else is 400 ' +
    '`VALIDATION_ERROR`), at most 10 calls a minute per client network (an IPv4 /24, an IPv6 /48), then the ' +
    "key's 100 a minute and its daily cap (429 `DAILY_CAP_REACHED` past it, until midnight UTC); each costs 1 credit. " +
    "Their answer carries no evidence and no `meta.cached` (the account's verdict cache is neither read nor fed), " +
    "and `creditsRemaining` is what is left of the key's daily cap, not the account's balance.",
  security: [{ ApiKeyAuth: [] }],
  middleware: [requireScope(['verify'], { publishableKeys: true }), jsonBody] as const,
  request: {
    headers: IdempotencyHeaders.extend({
      'x-turnstile-token': z
        .string()
        .optional()
        .meta({
          description:
            "Publishable keys with Turnstile on: the visitor's Turnstile token (good once); without a valid one, " +
            '403 `CHALLENGE_FAILED`.',
        }),
    }),
    body: { required: true, content: { 'application/json': { schema: VerifyRequest } } },
  },
  responses: chargedPostResponses(
    { description: 'The verdict, with the checks behind it.', schema: VerifyResponse },
    ['CHALLENGE_FAILED', 'DAILY_CAP_REACHED'],
  ),
});

/**
 * A publishable key's call is `{ email }` and nothing else (docs/publishable-keys.md): `fresh`,
 * `evidence` and a time budget are the customer's choices, not a page visitor's.
 */
function refuseBeyondPageRequest(request: VerifyRequest): void {
  const parsed = PublishableVerifyRequest.safeParse(request);
  if (parsed.success) return;
  throw validationError(parsed.error, 'A publishable key checks `{ "email": … }` only.');
}

export function registerVerify(app: OpenAPIHono<AppEnv>): void {
  // The alias without /api appears in one published usage example; it is not in the document.
  for (const definition of [route, { ...route, path: '/v1/verify', hide: true }]) {
    app.openapi(definition, async (c) => {
      const request = c.req.valid('json');
      const publishable = c.get('keyLimits').kind === 'publishable';
      if (publishable) refuseBeyondPageRequest(request);
      const page = await admitPublishableVerification(c);
      const now = Date.now();
      const answer = await answerRequestOnce(
        c,
        {
          operation: 'verify',
          key: c.req.valid('header')['idempotency-key'],
          bodyDigest: () => c.get('bodyDigest'),
          now,
        },
        async () => {
          const { result, creditsRemaining } = await verifyAsAsked(c, request, now);
          return page
            ? pageAnswer(result, page.capLeft)
            : { success: true as const, data: result, creditsRemaining };
        },
      );
      return replyWith<VerifyResponse>(c, answer);
    });
  }
}

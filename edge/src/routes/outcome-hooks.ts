// POST /hooks/outcomes/{provider}/{endpointId}: the sending services' event webhooks
// (docs/verdicts.md, "Outcomes"). Public, outside the API: each service authenticates by its own
// scheme (services/outcomes/), checked over the exact bytes it sent. Not in the OpenAPI document
// (nobody but those services calls it; the endpoints that make these URLs are). A 2xx tells the
// service to stop retrying; a 401 or 400 records nothing.
import type { OpenAPIHono } from '@hono/zod-openapi';
import { ApiError } from '@rcpt/shared/errors';
import type { AppEnv } from '../app-env.ts';
import { log } from '../logger.ts';
import { readBoundedBody } from '../middleware/json-body.ts';
import { enterAccountShard } from '../middleware/services.ts';
import { quotasOf } from '../services/money/quotas.ts';
import { OUTCOME_HOOK_PATH } from '../services/outcomes/endpoints.ts';
import { MAX_HOOK_BYTES, receiveOutcomeHook } from '../services/outcomes/hooks.ts';
import { findLookup } from '../storage/shards.ts';

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

export function registerOutcomeHooks(app: OpenAPIHono<AppEnv>): void {
  app.post(OUTCOME_HOOK_PATH, async (c) => {
    const body = await readBoundedBody(c.req.raw, MAX_HOOK_BYTES, (bytes) => {
      try {
        return utf8.decode(bytes);
      } catch {
        throw new ApiError('VALIDATION_ERROR', { message: 'The body is not UTF-8.' });
      }
    });
    const config = c.get('config');
    // The endpoint lives in its account's shard; an id the directory does not know is in none.
    const endpoint = await findLookup(c.get('shards'), 'endpoint', c.req.param('endpointId'));
    if (endpoint) enterAccountShard(c, endpoint.shard);
    const answer = await receiveOutcomeHook(
      {
        db: c.get('db'),
        quotas: quotasOf(config),
        secretsKey: config.SECRETS_KEY,
        fetch: (input, init) => fetch(input, init),
        snsTestOrigin: config.SNS_TEST_ORIGIN,
        now: Date.now(),
        desks: c.get('services').desks,
      },
      {
        provider: c.req.param('provider'),
        endpointId: c.req.param('endpointId'),
        headers: c.req.raw.headers,
        body,
      },
    );
    log.info('outcome webhook', { provider: c.req.param('provider'), recorded: answer.recorded });
    return c.json(answer, 200);
  });
}

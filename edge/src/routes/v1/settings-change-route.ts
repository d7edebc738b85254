// The API's changes of account settings (PUT /api/v1/account/settings, PUT /api/v1/webhooks)
// are declared one way, so each takes, refuses and documents the same things.
import { createRoute, type z } from '@hono/zod-openapi';
import type { ErrorCode } from '@rcpt/shared/errors';
import { settingsKeyOnly } from '../../middleware/auth.ts';
import { jsonBody } from '../../middleware/json-body.ts';
import { errorResponses, JSON_BODY_ERRORS, jsonReply, SETTINGS_KEY_ERRORS } from '../openapi-errors.ts';

/**
 * A PUT of some of the account's settings: a JSON body, a live key with every scope
 * (settingsKeyOnly), answered 200 with the settings as they now are.
 */
export function settingsChangeRoute<Body extends z.ZodType, Answer extends z.ZodType>(spec: {
  path: string;
  tags: string[];
  summary: string;
  description: string;
  body: Body;
  answer: Answer;
  /** What the 200 answer holds. */
  answered: string;
  /** What this change refuses beyond what every settings change does. */
  errors?: readonly ErrorCode[];
}) {
  return createRoute({
    method: 'put',
    path: spec.path,
    tags: spec.tags,
    summary: spec.summary,
    description: spec.description,
    security: [{ ApiKeyAuth: [] }],
    middleware: [settingsKeyOnly, jsonBody] as const,
    request: { body: { required: true, content: { 'application/json': { schema: spec.body } } } },
    responses: {
      200: jsonReply(spec.answered, spec.answer),
      ...errorResponses([...SETTINGS_KEY_ERRORS, ...(spec.errors ?? []), ...JSON_BODY_ERRORS]),
    },
  });
}

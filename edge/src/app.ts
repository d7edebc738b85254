// The edge app: middleware order, routes, the OpenAPI document and its reference page.
import { OpenAPIHono } from '@hono/zod-openapi';
import { validationError } from '@rcpt/shared/errors';
import type { AppEnv } from './app-env.ts';
import { apiKeyAuth } from './middleware/auth.ts';
import { balanceWatch } from './middleware/balance-watch.ts';
import { settleAccountDesk } from './middleware/desk-settle.ts';
import { earlyDesk } from './middleware/early-desk.ts';
import { handleError, notFoundHandler } from './middleware/error-handler.ts';
import { publishableCorsPreflight } from './middleware/publishable-keys.ts';
import { apiKeyRateLimit } from './middleware/rate-limit.ts';
import { requestId } from './middleware/request-id.ts';
import { requestServices } from './middleware/services.ts';
import { registerApiReference } from './routes/api-reference.tsx';
import { registerDashboard } from './routes/dashboard/index.tsx';
import { registerFleet } from './routes/internal/fleet.get.ts';
import { registerKeysForget } from './routes/internal/keys-forget.post.ts';
import { registerProbersConnect } from './routes/internal/probers-connect.ts';
import { registerOutcomeHooks } from './routes/outcome-hooks.ts';
import { registerStripeWebhook } from './routes/stripe-webhook.ts';
import { registerAccount } from './routes/v1/account.get.ts';
import { registerAccountPayments } from './routes/v1/account-payments.get.ts';
import { registerAccountSettings } from './routes/v1/account-settings.put.ts';
import { registerAccuracy } from './routes/v1/accuracy.get.ts';
import { registerBulkJobs } from './routes/v1/bulk-jobs.get.ts';
import { registerBulkResults } from './routes/v1/bulk-results.get.ts';
import { registerBulkStatus } from './routes/v1/bulk-status.get.ts';
import { registerBulkUpload } from './routes/v1/bulk-upload.post.ts';
import { registerHistory } from './routes/v1/history.get.ts';
import { registerOutcomeEndpoints } from './routes/v1/outcome-endpoints.ts';
import { registerOutcomes } from './routes/v1/outcomes.post.ts';
import { registerVerify } from './routes/v1/verify.post.ts';
import { registerWebhookDeliveries } from './routes/v1/webhooks-deliveries.get.ts';
import { registerWebhookSecret } from './routes/v1/webhooks-secret.post.ts';
import { registerWebhookSettings } from './routes/v1/webhooks-settings.put.ts';
import { registerWebhookTest } from './routes/v1/webhooks-test.post.ts';

export const API_VERSION = '1.0.1';

/** The OpenAPI document's frame: /openapi.json and /docs are both made from it and the routes. */
const OPENAPI_DOCUMENT = {
  openapi: '3.0.3',
  info: {
    title: 'rcpt email verification API',
    version: API_VERSION,
    description:
      'Verifies email addresses: syntax, DNS, an SMTP mailbox probe, and disposable, role, free-provider, ' +
      'catch-all and typo detection. Every operation needs an API key in `X-API-Key`; 100 requests per ' +
      'minute per key. Errors are JSON with a stable `code`.',
  },
  servers: [{ url: '/', description: 'this deployment' }],
  security: [{ ApiKeyAuth: [] }],
};

export function createApp(): OpenAPIHono<AppEnv> {
  const app = new OpenAPIHono<AppEnv>({
    // Schema violations answer the error table's VALIDATION_ERROR with the zod issues.
    defaultHook: (result) => {
      if (!result.success) throw validationError(result.error);
    },
  });

  app.use('*', requestId);
  app.use('*', requestServices);
  app.onError(handleError);
  app.use('*', balanceWatch);

  app.openAPIRegistry.registerComponent('securitySchemes', 'ApiKeyAuth', {
    type: 'apiKey',
    in: 'header',
    name: 'X-API-Key',
    description:
      'An API key from the dashboard: `rk_live_…` (charged), `rk_test_…` (sandbox, free) or `rk_pub_…` ' +
      '(publishable: the single verify from listed web origins only). A key may be limited to scopes ' +
      '(`verify`, `bulk`, `read`, `outcomes`: 403 `KEY_SCOPE_DENIED` outside them) and to client address blocks ' +
      '(403 `KEY_ADDRESS_DENIED` from elsewhere).',
  });

  // Before authentication: a browser's preflight carries no key (publishable-keys.ts).
  for (const path of ['/api/v1/verify', '/v1/verify']) {
    app.use(path, publishableCorsPreflight);
    // Before authentication too: the desk's lookup goes beside the key's admission.
    app.use(path, earlyDesk);
  }
  for (const prefix of ['/api/v1/*', '/v1/*']) {
    app.use(prefix, apiKeyAuth);
    app.use(prefix, apiKeyRateLimit);
    app.use(prefix, settleAccountDesk);
  }
  registerVerify(app);
  registerBulkUpload(app);
  registerBulkStatus(app);
  registerBulkResults(app);
  registerBulkJobs(app);
  registerAccount(app);
  registerAccountSettings(app);
  registerAccountPayments(app);
  registerHistory(app);
  registerWebhookSettings(app);
  registerWebhookSecret(app);
  registerWebhookTest(app);
  registerWebhookDeliveries(app);
  registerOutcomes(app);
  registerAccuracy(app);
  registerOutcomeEndpoints(app);
  registerOutcomeHooks(app);
  registerProbersConnect(app);
  registerStripeWebhook(app);
  registerFleet(app);
  registerKeysForget(app);
  registerDashboard(app);

  // A local stack names itself (LOCAL_STACK_ID, scripts/stack/local-stack.ts) so that it knows
  // the edge answering on its port is its own; deployments set no such var.
  app.get('/healthz', (c) => {
    const stack = (c.env as { LOCAL_STACK_ID?: string }).LOCAL_STACK_ID;
    return c.json({ ok: true, ...(stack ? { stack } : {}) });
  });
  app.doc('/openapi.json', OPENAPI_DOCUMENT);
  registerApiReference(app, OPENAPI_DOCUMENT);

  app.notFound(notFoundHandler((path) => allowedMethods(app, path)));
  return app;
}

/** Methods registered for a path, for 405 answers. */
function allowedMethods(app: OpenAPIHono<AppEnv>, path: string): string[] {
  const methods = new Set<string>();
  for (const route of app.routes) {
    if (route.method !== 'ALL' && route.path === path) methods.add(route.method);
  }
  return [...methods];
}

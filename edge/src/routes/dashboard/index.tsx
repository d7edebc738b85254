/** @jsxImportSource hono/jsx */
// The customer dashboard, served by the same Worker as the API: server-rendered pages that
// work without JavaScript, on paths outside /api, /v1, /internal, /openapi.json and /docs.
// The pages live in a sub-app so that their errors render as HTML pages; the two JSON
// endpoints the pages' script calls keep the API's JSON errors.
import type { OpenAPIHono } from '@hono/zod-openapi';
import { type Context, Hono } from 'hono';
import type { AppEnv } from '../../app-env.ts';
import { handleError } from '../../middleware/error-handler.ts';
import type { DashboardEnv } from '../../middleware/session.ts';
import { registerAccountPage } from './account.tsx';
import { registerAccuracyPage } from './accuracy.tsx';
import { registerAuthPages } from './auth.tsx';
import { registerBulkPages } from './bulk.tsx';
import { registerConfirmEmailPages } from './confirm-email.tsx';
import { registerCreditsPage } from './credits.tsx';
import { renderErrorPage } from './error-page.tsx';
import { registerHistoryPage } from './history.tsx';
import { registerJobPages } from './jobs.tsx';
import { registerKeysPages } from './keys.tsx';
import { registerOutcomesPage } from './outcomes.tsx';
import { registerOverviewPage } from './overview.tsx';
import { registerPasswordResetPages } from './password-reset.tsx';
import { registerProbersPage } from './probers.tsx';
import { registerVerifyPage } from './verify.tsx';
import { registerWebhooksPage } from './webhooks.tsx';

const JSON_ENDPOINTS = /^\/(bulk\/preview|jobs\/[^/]+\/status)$/;

export function registerDashboard(app: OpenAPIHono<AppEnv>): void {
  const dashboard = new Hono<DashboardEnv>();
  dashboard.onError((error, c) =>
    // The dashboard's env only adds variables to the app's, which is all handleError reads.
    JSON_ENDPOINTS.test(new URL(c.req.url).pathname)
      ? handleError(error, c as Context)
      : renderErrorPage(error, c),
  );
  registerAuthPages(dashboard);
  registerPasswordResetPages(dashboard);
  registerConfirmEmailPages(dashboard);
  registerOverviewPage(dashboard);
  registerKeysPages(dashboard);
  registerVerifyPage(dashboard);
  registerBulkPages(dashboard);
  registerJobPages(dashboard);
  registerHistoryPage(dashboard);
  registerAccuracyPage(dashboard);
  registerOutcomesPage(dashboard);
  registerWebhooksPage(dashboard);
  registerProbersPage(dashboard);
  registerAccountPage(dashboard);
  registerCreditsPage(dashboard);
  app.route('/', dashboard);
}

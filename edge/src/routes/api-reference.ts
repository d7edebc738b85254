// GET /docs: the interactive API reference (Swagger UI) over /openapi.json. Every file it
// needs is served from this origin: Swagger UI's bundle and stylesheet are static assets
// copied from the swagger-ui-dist package at build time ([build] in wrangler.toml), and
// /api-reference.js starts it — so the page works offline and under the dashboard's CSP,
// which allows no inline script or style and nothing from another origin.
import type { OpenAPIHono } from '@hono/zod-openapi';
import type { AppEnv } from '../app-env.ts';
import { securityHeaders } from '../middleware/security-headers.ts';

/** Where the build step puts swagger-ui-dist's files under the static assets. */
export const SWAGGER_UI_ASSETS = '/vendor/swagger-ui';

const PAGE = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>rcpt API reference</title>
    <link rel="icon" href="/favicon.svg" type="image/svg+xml">
    <link rel="stylesheet" href="${SWAGGER_UI_ASSETS}/swagger-ui.css">
  </head>
  <body>
    <main id="api-reference" data-openapi-url="/openapi.json">
      <noscript><p>The interactive reference needs JavaScript. The API is described in <a href="/openapi.json">/openapi.json</a> (OpenAPI 3.0).</p></noscript>
    </main>
    <script src="${SWAGGER_UI_ASSETS}/swagger-ui-bundle.js"></script>
    <script src="/api-reference.js"></script>
  </body>
</html>
`;

export function registerApiReference(app: OpenAPIHono<AppEnv>): void {
  app.get('/docs', securityHeaders, (c) => c.html(PAGE));
}

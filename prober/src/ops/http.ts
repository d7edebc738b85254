// The ops server: GET /metrics for Prometheus and GET /healthz for a supervisor or load
// balancer. It binds to 127.0.0.1 by default: neither page is meant for the internet.
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from './logger.ts';
import type { ProberMetrics } from './metrics.ts';

export interface ProberHealth {
  /** The link to the edge is up and has said hello. */
  linked: boolean;
  inFlight: number;
  draining: boolean;
}

export interface OpsServerOptions {
  host: string;
  /** 0 picks a free port (tests); the daemon does not start the server when OPS_PORT is 0. */
  port: number;
  metrics: ProberMetrics;
  health: () => ProberHealth;
  logger: Logger;
}

export interface OpsServer {
  /** The port actually bound. */
  port: number;
  close(): Promise<void>;
}

export async function startOpsServer(options: OpsServerOptions): Promise<OpsServer> {
  const server: Server = createServer((request, response) => {
    handleOpsRequest(request, response, options).catch((error: unknown) => {
      options.logger.error({ err: error, path: request.url }, 'ops request failed');
      if (!response.headersSent) response.writeHead(500, { 'content-type': 'text/plain' });
      response.end('internal error\n');
    });
  });
  server.listen(options.port, options.host);
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;
  options.logger.info({ host: options.host, port }, 'ops server listening');
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        // Scrapers keep connections alive; do not let one hold up shutdown.
        server.closeAllConnections();
      }),
  };
}

async function handleOpsRequest(
  request: IncomingMessage,
  response: ServerResponse,
  options: OpsServerOptions,
): Promise<void> {
  const path = new URL(request.url ?? '/', 'http://ops').pathname;
  if (request.method !== 'GET' && request.method !== 'HEAD') {
    response.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain' });
    response.end('method not allowed\n');
    return;
  }
  if (path === '/metrics') {
    const body = await options.metrics.scrape();
    response.writeHead(200, { 'content-type': options.metrics.contentType });
    response.end(request.method === 'HEAD' ? undefined : body);
    return;
  }
  if (path === '/healthz') {
    const health = options.health();
    // Not ready while unlinked (it can take no work) or draining (it must get no new work).
    const ok = health.linked && !health.draining;
    response.writeHead(ok ? 200 : 503, { 'content-type': 'application/json', 'cache-control': 'no-store' });
    response.end(request.method === 'HEAD' ? undefined : JSON.stringify({ ok, ...health }));
    return;
  }
  response.writeHead(404, { 'content-type': 'text/plain' });
  response.end('not found\n');
}

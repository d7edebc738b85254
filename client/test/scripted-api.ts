// A fake of the rcpt API that answers from a script, one answer per request in order, and
// records every request it was sent. The transport's tests call it as a fetch function; tests
// that run `rcpt` as its own process serve it over HTTP on 127.0.0.1, where every JSON answer
// is checked against the OpenAPI document the client was generated from — a script cannot
// answer in a shape the real API never would.
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type OpenApiDocument, OpenApiResponseChecker } from '../../test/openapi/response-check.ts';

export interface RecordedRequest {
  method: string;
  /** Path and query, e.g. `/api/v1/bulk/results/…?format=csv`. */
  path: string;
  apiKey: string | null;
  idempotencyKey: string | null;
  contentType: string | null;
  body: string;
}

export interface ScriptedServer {
  fetch: typeof globalThis.fetch;
  requests: RecordedRequest[];
  /** Answers of the script no request has taken yet. */
  readonly unanswered: number;
}

/** A server scripted answer by answer (an Error stands for a connection lost without an answer). */
export function scriptedServer(answers: (Response | Error)[]): ScriptedServer {
  const requests: RecordedRequest[] = [];
  const fetch = async (request: Request | string | URL): Promise<Response> => {
    const sent = request as Request;
    const url = new URL(sent.url);
    requests.push({
      method: sent.method,
      path: `${url.pathname}${url.search}`,
      apiKey: sent.headers.get('x-api-key'),
      idempotencyKey: sent.headers.get('idempotency-key'),
      contentType: sent.headers.get('content-type'),
      body: await sent.text(),
    });
    const answer = answers.shift();
    if (!answer) throw new Error('the script ran out of answers');
    if (answer instanceof Error) throw answer;
    return answer;
  };
  return {
    fetch: fetch as typeof globalThis.fetch,
    requests,
    get unanswered() {
      return answers.length;
    },
  };
}

/** A JSON answer as the API sends it, with the request id header its error bodies repeat. */
export function jsonAnswer(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { 'content-type': 'application/json', 'x-request-id': 'req-scripted', ...headers },
  });
}

export interface ServedApi {
  baseUrl: string;
  /** Answers that do not match the OpenAPI document; a test expects none. */
  problems: string[];
  close(): Promise<void>;
}

const CLIENT_DOCUMENT = new URL('../openapi.json', import.meta.url);

/** Serves `answer` over HTTP on 127.0.0.1 (a free port), checking each JSON answer against the document. */
export async function serveOverHttp(answer: (request: Request) => Promise<Response>): Promise<ServedApi> {
  const checker = new OpenApiResponseChecker(
    JSON.parse(readFileSync(CLIENT_DOCUMENT, 'utf8')) as OpenApiDocument,
  );
  const problems: string[] = [];
  const server = createServer((incoming, outgoing) => {
    respond(incoming, outgoing).catch((error: unknown) => {
      problems.push(`${incoming.method} ${incoming.url}: ${(error as Error).message}`);
      outgoing.destroy();
    });
  });

  async function respond(incoming: IncomingMessage, outgoing: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of incoming) chunks.push(chunk as Buffer);
    const headers = new Headers();
    for (const [name, value] of Object.entries(incoming.headers))
      if (typeof value === 'string') headers.set(name, value);
    const method = incoming.method ?? 'GET';
    const request = new Request(`http://127.0.0.1${incoming.url}`, {
      method,
      headers,
      body: method === 'GET' || method === 'HEAD' ? undefined : Buffer.concat(chunks),
    });
    let response: Response;
    try {
      response = await answer(request);
    } catch {
      // The script's Error: the connection drops without an answer, as a network failure would.
      outgoing.destroy();
      return;
    }
    const body = Buffer.from(await response.arrayBuffer());
    const contentType = response.headers.get('content-type');
    if (contentType?.startsWith('application/json'))
      problems.push(
        ...checker.problems(
          method,
          new URL(request.url).pathname,
          response.status,
          contentType,
          JSON.parse(body.toString('utf8')),
        ),
      );
    response.headers.forEach((value, name) => {
      outgoing.setHeader(name, value);
    });
    outgoing.writeHead(response.status);
    outgoing.end(body);
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    problems,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}

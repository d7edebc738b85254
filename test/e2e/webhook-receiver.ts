// A local HTTP endpoint on 127.0.0.1 that receives the edge's webhooks (the harness allows
// loopback targets with ALLOW_PRIVATE_TARGETS), answering 204 and keeping every delivery.
import { createServer, type Server } from 'node:http';
import { Webhook } from 'standardwebhooks';

export interface Delivery {
  headers: Record<string, string>;
  body: string;
}

export class WebhookReceiver {
  readonly deliveries: Delivery[] = [];
  #waiters: ((delivery: Delivery) => void)[] = [];
  readonly server: Server;

  constructor() {
    this.server = createServer((request, response) => {
      let body = '';
      request.on('data', (chunk) => {
        body += chunk;
      });
      request.on('end', () => {
        const delivery = { headers: request.headers as Record<string, string>, body };
        this.deliveries.push(delivery);
        response.writeHead(204).end();
        for (const waiter of this.#waiters.splice(0)) waiter(delivery);
      });
    });
  }

  async listen(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return this.url();
  }

  url(): string {
    const address = this.server.address();
    if (!address || typeof address === 'string') throw new Error('receiver not listening');
    return `http://127.0.0.1:${address.port}/hooks`;
  }

  /** The first delivery about this job (of this event type, if given), as soon as it arrives. */
  async next(jobId: string, type?: string): Promise<Delivery> {
    const matches = (delivery: Delivery) =>
      delivery.body.includes(jobId) && (type === undefined || delivery.body.includes(`"type":"${type}"`));
    for (;;) {
      const found = this.deliveries.find(matches);
      if (found) return found;
      await new Promise<Delivery>((resolve) => this.#waiters.push(resolve));
    }
  }
}

/** The event a delivery carries, its Standard Webhooks signature checked with `secret`. */
export function verifiedEvent<T>(secret: string, delivery: Delivery): T {
  return new Webhook(secret).verify(delivery.body, {
    'webhook-id': delivery.headers['webhook-id'] ?? '',
    'webhook-timestamp': delivery.headers['webhook-timestamp'] ?? '',
    'webhook-signature': delivery.headers['webhook-signature'] ?? '',
  }) as T;
}

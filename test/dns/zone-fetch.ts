// A `fetch` that is a DoH resolver (RFC 8484 POST) answering from a zone with the world's
// resolver, for the edge's DNS tests inside workerd (where no socket can be opened); a silent
// name's request hangs until the client's timeout aborts it.
import { answerQuery, namesThatExist } from '../world/dns-answer.ts';
import type { ZoneEntry } from '../world/zone.ts';

export function zoneFetch(zone: Readonly<Record<string, ZoneEntry>>): typeof fetch {
  const existingNames = namesThatExist(zone);
  return async (input, init) => {
    const request = new Request(input, init);
    const answer = answerQuery(new Uint8Array(await request.arrayBuffer()), zone, existingNames);
    if (answer === null) {
      const signal = init?.signal ?? request.signal;
      return new Promise<Response>((_resolve, reject) => {
        signal.addEventListener('abort', () => reject(signal.reason), { once: true });
      });
    }
    return new Response(answer, { headers: { 'content-type': 'application/dns-message' } });
  };
}

// A prober inside the test: it links to a region's hub over a WebSocket, says hello, and
// answers probes with whatever the test decides. `connectProber` goes through the real
// /internal/probers/connect route; `startFakeProber` links as that route does once it has checked
// the token and the region, since each test's hub is a region of its own that the deployment's
// PROBER_REGIONS (which the route holds to) does not list.

import { env, exports } from 'cloudflare:workers';
import {
  type EdgeMessage,
  type EgressBlockInfo,
  type EgressInfo,
  type ProbeMessage,
  type ProbeReport,
  ProberMessage,
} from '@rcpt/shared/contract/prober';
import { evidenceFor, type SessionDialogue } from '@rcpt/shared/verify/evidence';
import { until } from '../../test/eventually.ts';
import { linkToRegionHub } from '../src/services/fleet/prober-gateway.ts';
import { issueProberToken } from '../src/services/fleet/prober-token-secret.ts';
import { insertProberToken } from '../src/storage/prober-tokens.ts';
import { db } from './fixtures.ts';

export type Answer = (probe: ProbeMessage) => ProbeReport | 'ignore' | { error: string };

export interface FakeProber {
  tokenId: string;
  probes: ProbeMessage[];
  /** The hub's other messages, in order (its egress memory). */
  received: EdgeMessage[];
  /** Settles when the hub closes the link, with its close code. */
  closed: Promise<{ code: number; reason: string }>;
  send(message: ProberMessage): void;
  close(code?: number): void;
}

/** A live prober token of `region`: the shared fleet's, or with `accountId` that account's own. */
export async function newProberToken(
  region = 'default',
  accountId: string | null = null,
): Promise<{ id: string; secret: string }> {
  const { row, token } = await issueProberToken({ region, name: 'test prober', accountId, now: Date.now() });
  await insertProberToken(db(), row);
  return { id: token.id, secret: token.secret };
}

export async function connectProber(token: string, region: string): Promise<Response> {
  return exports.default.fetch(`http://edge.test/internal/probers/connect?region=${region}`, {
    headers: { Upgrade: 'websocket', Authorization: `Bearer ${token}` },
  });
}

/**
 * Links a prober's WebSocket to `region`'s hub under the token `tokenId` (of `accountId`, null for
 * the shared fleet), past the route's checks.
 */
export async function linkToHub(
  tokenId: string,
  region: string,
  accountId: string | null = null,
): Promise<Response> {
  const upgrade = new Request(`http://edge.test/internal/probers/connect?region=${region}`, {
    headers: { Upgrade: 'websocket' },
  });
  return linkToRegionHub(env.PROBER_HUB, [], { tokenId, region, accountId }, upgrade);
}

/** Connects a fake prober to `region` and waits until the hub counts it as ready. */
export async function startFakeProber(
  region: string,
  answer: Answer,
  capacity = 10,
  perMxConcurrency?: number,
  /** Links under this token (a prober linking again) instead of a new one. */
  tokenId?: string,
  /** A customer-run prober of this account (its token's), serving it only; null: the shared fleet. */
  accountId: string | null = null,
): Promise<FakeProber> {
  const token = tokenId ?? (await newProberToken(region, accountId)).id;
  const response = await linkToHub(token, region, accountId);
  const ws = response.webSocket;
  if (response.status !== 101 || !ws)
    throw new Error(`connect failed: ${response.status} ${await response.text()}`);
  ws.accept();
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    ws.addEventListener('close', (event) => resolve({ code: event.code, reason: event.reason })),
  );
  const probes: ProbeMessage[] = [];
  const received: EdgeMessage[] = [];
  ws.addEventListener('message', (event) => {
    const message = JSON.parse(String(event.data));
    if (message.type !== 'probe') {
      received.push(message);
      return;
    }
    probes.push(message);
    const reply = answer(message);
    if (reply === 'ignore') return;
    if ('error' in reply) ws.send(JSON.stringify({ type: 'error', id: message.id, message: reply.error }));
    else ws.send(JSON.stringify({ type: 'result', id: message.id, ...reply }));
  });
  const before = (await hubOf(region).status()).filter((prober) => prober.ready).length;
  ws.send(JSON.stringify({ type: 'hello', id: 'hello-1', version: 1, region, capacity, perMxConcurrency }));
  // The hello is handled asynchronously by the hub: wait until it is counted.
  await until(
    async () => (await hubOf(region).status()).filter((prober) => prober.ready).length > before,
    `a fake prober is ready in ${region}`,
  );
  return {
    tokenId: token,
    probes,
    received,
    closed,
    send: (message) => ws.send(JSON.stringify(ProberMessage.parse(message))),
    close: (code = 1000) => ws.close(code, 'test done'),
  };
}

export function hubOf(region: string) {
  return env.PROBER_HUB.get(env.PROBER_HUB.idFromName(region));
}

/** A report in which every address got `code` (and the random address `catchAllCode`). */
export function reportFor(
  probe: ProbeMessage,
  code: number,
  enhanced: string | null,
  text: string,
  catchAllCode?: number,
): ProbeReport {
  return {
    perAddress: probe.emails.map((email) => ({ email, reply: { code, enhanced, text }, failure: null })),
    catchAllReply: catchAllCode
      ? { code: catchAllCode, enhanced: catchAllCode < 300 ? '2.1.5' : '5.1.1', text: 'random' }
      : null,
    session: {
      mxHost: probe.mx[0]?.host ?? null,
      mxIp: probe.mx[0]?.ips[0] ?? null,
      tls: false,
      tlsError: null,
      smtputf8: false,
      durationMs: 3,
    },
  };
}

/** The prober says hello again, naming its egresses (as a prober with SOURCE_ADDRESSES does). */
export function announceEgresses(prober: FakeProber, region: string, egresses: EgressInfo[]): void {
  prober.send({ type: 'hello', id: 'hello-egresses', version: 1, region, capacity: 10, egresses });
}

/** A block of `egress` at the MX host `host` for ten minutes from `since`, as the prober reports it. */
export function blockAt(egress: string, host: string, since: number, text?: string): EgressBlockInfo {
  return {
    egress,
    scope: { kind: 'mx_host', name: host },
    since,
    until: since + 600_000,
    reply: {
      code: 554,
      enhanced: '5.7.1',
      text: text ?? `Service unavailable; Client host [${egress}] blocked using zen.spamhaus.org`,
    },
    level: 1,
  };
}

/**
 * `report` with each address's evidence as a prober builds it when the probe asks for it: one
 * session that asked every address of the probe, from the probe's MAIL FROM.
 */
export function withEvidence(probe: ProbeMessage, report: ProbeReport): ProbeReport {
  if (!probe.evidence) return report;
  const dialogue: SessionDialogue = {
    mxHost: report.session.mxHost ?? 'mx.unknown.test',
    mxIp: report.session.mxIp ?? '127.0.0.2',
    egress: '127.0.0.1',
    region: 'default',
    tls: null,
    startedAt: Date.now(),
    durationMs: report.session.durationMs,
    steps: [
      { atMs: 0, command: null, reply: { code: 220, enhanced: null, text: 'mx ESMTP' }, tookMs: 1 },
      { atMs: 1, command: `EHLO ${probe.helo}`, reply: { code: 250, enhanced: null, text: 'mx' }, tookMs: 1 },
      {
        atMs: 2,
        command: `MAIL FROM:<${probe.mailFrom}>`,
        path: probe.mailFrom,
        reply: { code: 250, enhanced: '2.1.0', text: `<${probe.mailFrom}> ok` },
        tookMs: 1,
      },
      ...report.perAddress.map((outcome, index) => ({
        atMs: 3 + index,
        command: `RCPT TO:<${outcome.email}>`,
        path: outcome.email,
        reply: outcome.reply && { ...outcome.reply, text: `<${outcome.email}>: ${outcome.reply.text}` },
        tookMs: 1,
      })),
    ],
    ended: null,
  };
  return {
    ...report,
    perAddress: report.perAddress.map((outcome) => ({
      ...outcome,
      evidence: evidenceFor(dialogue, outcome.email),
    })),
  };
}

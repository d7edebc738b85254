import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { validateWebhookUrl } from './settings.ts';
import { signWebhook } from './signed-post.ts';

describe('validateWebhookUrl', () => {
  it.each([
    ['https://hooks.example.com/rcpt', false, true],
    ['https://hooks.example.com:8443/rcpt?x=1', false, true],
    ['http://hooks.example.com/rcpt', false, false], // plain http outside development
    ['http://127.0.0.1:8080/hook', false, false], // loopback in production
    ['http://127.0.0.1:8080/hook', true, true], // loopback in development
    ['http://localhost/hook', true, true],
    ['http://hooks.example.com/rcpt', true, false], // http only to loopback, even in development
    ['https://10.0.0.5/hook', false, false], // RFC 1918
    ['https://192.168.1.10/hook', false, false],
    ['https://169.254.169.254/latest/meta-data', false, false], // link-local (cloud metadata)
    ['https://[::ffff:10.0.0.1]/hook', false, false], // v4-mapped private
    ['https://[fd00::1]/hook', false, false], // unique local
    ['https://user:pass@hooks.example.com/', false, false], // credentials in the URL
    ['ftp://hooks.example.com/', false, false],
    ['not a url', false, false],
  ])('%s (development: %s) → accepted %s', (url, allowPrivate, accepted) => {
    const attempt = () => validateWebhookUrl(url, allowPrivate);
    if (accepted) expect(attempt()).toBe(new URL(url).toString());
    else expect(attempt).toThrow(expect.objectContaining({ code: 'VALIDATION_ERROR' }));
  });
});

describe('signWebhook', () => {
  it('signs so that the Standard Webhooks library verifies it, and a changed body fails', async () => {
    const secret = `whsec_${btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(32))))}`;
    const timestamp = Math.floor(Date.now() / 1000);
    const body = JSON.stringify({ type: 'job.completed', data: { job: { id: 'j1' } } });
    const signature = await signWebhook(secret, 'msg_1', timestamp, body);
    const headers = {
      'webhook-id': 'msg_1',
      'webhook-timestamp': String(timestamp),
      'webhook-signature': signature,
    };
    expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
    expect(() => new Webhook(secret).verify(body.replace('j1', 'j2'), headers)).toThrow();
  });
});

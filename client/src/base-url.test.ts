import { describe, expect, it } from 'vitest';
import { checkedBaseUrl } from './base-url.ts';
import { Rcpt } from './client.ts';
import { RcptConfigurationError } from './errors.ts';

describe('checkedBaseUrl', () => {
  it.each([
    ['https://api.rcpt.example/', 'https://api.rcpt.example'],
    ['http://127.0.0.1:8787', 'http://127.0.0.1:8787'],
    ['http://127.0.0.53:8787//', 'http://127.0.0.53:8787'],
    ['http://localhost:8787', 'http://localhost:8787'],
    ['http://LOCALHOST:8787', 'http://LOCALHOST:8787'],
    ['http://edge.localhost', 'http://edge.localhost'],
    ['http://[::1]:8787', 'http://[::1]:8787'],
  ])('accepts %s', (given, expected) => {
    expect(checkedBaseUrl(given)).toBe(expected);
  });

  it.each([
    ['http://api.rcpt.example', /in clear/],
    ['http://10.0.0.7:8787', /in clear/],
    ['http://128.0.0.1', /in clear/],
    // A name that only starts like loopback is another machine.
    ['http://127.0.0.1.nip.io', /in clear/],
    ['http://localhost.rcpt.example', /in clear/],
    ['http://[::2]', /in clear/],
    ['ftp://127.0.0.1', /must be an http\(s\) URL/],
    ['api.rcpt.example', /must be an http\(s\) URL/],
  ])('refuses %s', (given, message) => {
    expect(() => checkedBaseUrl(given)).toThrow(RcptConfigurationError);
    expect(() => checkedBaseUrl(given)).toThrow(message);
  });

  it('is the rule the client itself keeps: no key is ever sent to a plain-http remote host', () => {
    let requests = 0;
    const fetch = async () => {
      requests += 1;
      return new Response('{}');
    };
    expect(() => new Rcpt({ apiKey: 'rk_live_x', baseUrl: 'http://api.rcpt.example', fetch })).toThrow(
      RcptConfigurationError,
    );
    expect(requests).toBe(0);
  });
});

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { DEFAULT_PROVIDER_RULES_PATH } from '../config.ts';
import { findProvider, loadProviderRules, parseProviderRules, providerLimitsOf } from './provider-rules.ts';

const RULES = parseProviderRules({
  providers: [
    {
      name: 'yahoo',
      domains: ['yahoo.com', 'AOL.com'],
      mxHosts: ['*.yahoodns.net'],
      acceptsEverything: true,
    },
    { name: 'google', mxHosts: ['*.google.com'], maxSessions: 20 },
  ],
});

describe('the shipped rules file', () => {
  test('parses, and names Yahoo as accepting everything', async () => {
    const rules = await loadProviderRules(DEFAULT_PROVIDER_RULES_PATH);
    expect(findProvider(rules, 'yahoo.com', [])?.acceptsEverything).toBe(true);
    expect(findProvider(rules, 'example.org', ['mta5.am0.yahoodns.net'])?.name).toBe('yahoo');
    expect(findProvider(rules, 'example.org', ['aspmx.l.google.com'])).toMatchObject({
      name: 'google',
      acceptsEverything: false,
    });
    expect(findProvider(rules, 'accept.test', ['mx.accept.test'])).toBeNull();
  });
});

describe('findProvider', () => {
  test.each([
    ['yahoo.com', [], 'yahoo'],
    ['YAHOO.COM.', [], 'yahoo'],
    ['aol.com', [], 'yahoo'],
    ['example.org', ['mta6.am0.yahoodns.net'], 'yahoo'],
    ['example.org', ['MTA6.AM0.YAHOODNS.NET.'], 'yahoo'],
    ['example.org', ['mx.example.org', 'alt1.aspmx.l.google.com'], 'google'],
    ['notyahoo.com', [], null],
    ['mail.yahoo.com', [], null], // domains match exactly unless written "*.yahoo.com"
    ['example.org', ['yahoodns.net'], null], // "*." needs at least one label before the suffix
    ['example.org', ['evilyahoodns.net'], null],
  ])('%s via %j → %s', (domain, mxHosts, expected) => {
    expect(findProvider(RULES, domain, mxHosts)?.name ?? null).toBe(expected);
  });

  test('no rules, no provider', () => {
    expect(findProvider(undefined, 'yahoo.com', [])).toBeNull();
  });
});

test('providerLimitsOf lists the providers that set maxSessions', () => {
  expect(providerLimitsOf(RULES)).toEqual(new Map([['google', 20]]));
  expect(providerLimitsOf(undefined)).toEqual(new Map());
});

describe('parseProviderRules', () => {
  test.each([
    [{ providers: [{ name: 'x', mxHost: ['*.x.net'] }] }, /providers\.0: .*mxHost/],
    [
      { providers: [{ name: 'x', domains: ['bad domain'] }] },
      /providers\.0\.domains\.0: must be a host name/,
    ],
    [{ providers: [{ name: 'x', maxSessions: 0 }] }, /providers\.0\.maxSessions/],
    [{ providers: [{ domains: ['x.com'] }] }, /providers\.0\.name/],
    [{ provider: [] }, /invalid provider rules/],
  ])('refuses %j', (value, message) => {
    expect(() => parseProviderRules(value)).toThrow(message);
  });
});

describe('loadProviderRules', () => {
  const directory = mkdtempSync(join(tmpdir(), 'rcpt-rules-'));
  afterAll(() => rmSync(directory, { recursive: true, force: true }));

  test('names the file when it is not JSON', async () => {
    const path = join(directory, 'broken.json');
    writeFileSync(path, '{ "providers": [ }');
    await expect(loadProviderRules(path)).rejects.toThrow(`${path} is not valid JSON`);
  });

  test('names the file and the field when a rule is wrong', async () => {
    const path = join(directory, 'typo.json');
    writeFileSync(path, JSON.stringify({ providers: [{ name: 'x', acceptsEverything: 'yes' }] }));
    await expect(loadProviderRules(path)).rejects.toThrow(
      `${path}: invalid provider rules: providers.0.acceptsEverything`,
    );
  });
});

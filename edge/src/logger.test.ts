import { afterEach, describe, expect, it, vi } from 'vitest';
import { errorFields, log } from './logger.ts';

afterEach(() => {
  vi.restoreAllMocks();
});

function captured(method: 'log' | 'warn' | 'error'): () => Record<string, unknown>[] {
  const lines: string[] = [];
  vi.spyOn(console, method).mockImplementation((line: string) => {
    lines.push(line);
  });
  return () => lines.map((line) => JSON.parse(line) as Record<string, unknown>);
}

describe('edge logger', () => {
  it('writes one JSON object per line: level, ISO time, name, message, then the fields', () => {
    const lines = captured('log');
    log.info('cron finished', { cron: 'retention', report: { deleted: 3 } });
    expect(lines()).toEqual([
      {
        level: 'info',
        time: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
        name: 'rcpt-edge',
        msg: 'cron finished',
        cron: 'retention',
        report: { deleted: 3 },
      },
    ]);
  });

  it('sends warnings and errors to their console streams', () => {
    const warnings = captured('warn');
    const errors = captured('error');
    log.warn('invalid prober message', { proberId: 'p1' });
    log.error('unhandled error', errorFields(new TypeError('boom')));
    expect(warnings()).toMatchObject([{ level: 'warn', msg: 'invalid prober message', proberId: 'p1' }]);
    expect(errors()).toMatchObject([
      { level: 'error', error: 'TypeError: boom', stack: expect.stringContaining('boom') },
    ]);
  });

  it('never writes a credential, wherever it sits in the fields', () => {
    const lines = captured('log');
    log.info('request', {
      headers: { Authorization: 'Bearer rkp_x', 'X-API-Key': 'rk_live_x', accept: 'text/html' },
      account: { password: 'hunter2', secret: 'whsec_x', email: 'a@b.c' },
      probers: [{ token: 'rkp_y', id: 'p1' }],
    });
    const [line] = lines();
    expect(line).toMatchObject({
      headers: { Authorization: '[redacted]', 'X-API-Key': '[redacted]', accept: 'text/html' },
      account: { password: '[redacted]', secret: '[redacted]', email: 'a@b.c' },
      probers: [{ token: '[redacted]', id: 'p1' }],
    });
    expect(JSON.stringify(line)).not.toMatch(/rkp_|rk_live|hunter2|whsec_/);
  });
});

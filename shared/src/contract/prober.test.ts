import { describe, expect, it } from 'vitest';
import { ProberMessage } from './prober.ts';

describe('egress_state', () => {
  const state = { type: 'egress_state', id: 's1', blocks: [], uses: [], sessions: 0 };
  const health = {
    egress: '198.51.100.7',
    address: '198.51.100.7',
    ptr: 'out1.example.net',
    fcrdns: 'pass',
    heloMatches: true,
    listings: [{ zone: 'zen.spamhaus.org', codes: ['127.0.0.2'], meaning: 'SBL' }],
    unchecked: [{ zone: 'bl.spamcop.net', why: 'timeout' }],
    port25: 'unknown',
    checkedAt: 1_700_000_000_000,
  };

  it('validates from a prober that predates health checks, and from one that sends them', () => {
    expect(ProberMessage.safeParse(state).success).toBe(true);
    expect(ProberMessage.safeParse({ ...state, health: [health] }).success).toBe(true);
  });

  it('refuses a health record outside its bounds', () => {
    expect(ProberMessage.safeParse({ ...state, health: [{ ...health, fcrdns: 'maybe' }] }).success).toBe(
      false,
    );
    const codes = Array.from({ length: 33 }, () => '127.0.0.2');
    const tooMany = { ...health, listings: [{ zone: 'zen.spamhaus.org', codes, meaning: 'SBL' }] };
    expect(ProberMessage.safeParse({ ...state, health: [tooMany] }).success).toBe(false);
  });
});

import type { EgressHealthInfo, EgressStateMessage } from '@rcpt/shared/contract/prober';
import { describe, expect, it } from 'vitest';
import { blockAt } from '../../test/fake-prober.ts';
import { memoryStore } from '../../test/memory-store.ts';
import { FleetEgresses } from './egress-blocks.ts';

const egress = { id: '127.0.0.2', kind: 'direct', helo: null } as const;
const block = blockAt('127.0.0.2', 'mx1.company.test', Date.now());

describe('FleetEgresses across a hibernation', () => {
  it("reads a linked prober's egresses and blocks back from storage, and drops the ones whose link ended", () => {
    const store = memoryStore();
    const before = new FleetEgresses(store, []);
    before.linked('prober-a', [egress]);
    before.reported(
      'prober-a',
      { type: 'egress_state', id: 's1', blocks: [block], uses: [], sessions: 2 },
      1,
    );
    before.linked('prober-b', [egress]);

    // The hub wakes with a fresh memory; only prober-a's link is still open.
    const after = new FleetEgresses(store, ['prober-a']);
    const now = Date.now();
    expect(after.of('prober-a', now)).toMatchObject({ egresses: [egress], blocks: [block], sessions: 2 });
    expect(after.refusalAt('prober-a', block.scope, now)).toEqual(block.reply);
    expect(after.of('prober-b', now).egresses).toEqual([]);
    expect(store.keys()).toEqual(['egresses:prober-a']);

    after.forget('prober-a');
    expect(store.keys()).toEqual([]);
    expect(new FleetEgresses(store, ['prober-a']).of('prober-a', now).egresses).toEqual([]);
  });
});

describe('FleetEgresses and health checks', () => {
  it("keeps a prober's newest health report; a report without one (an older prober) shows none", () => {
    const fleet = new FleetEgresses(memoryStore(), []);
    fleet.linked('prober-a', [egress]);
    expect(fleet.of('prober-a', 1).health).toEqual([]);
    const health: EgressHealthInfo = {
      egress: egress.id,
      address: egress.id,
      ptr: 'elsewhere.rcpt.test',
      fcrdns: 'fail',
      heloMatches: false,
      listings: [{ zone: 'zen.spamhaus.org', codes: ['127.0.0.2'], meaning: 'SBL' }],
      unchecked: [],
      port25: 'unknown',
      checkedAt: 5,
    };
    const state: EgressStateMessage = { type: 'egress_state', id: 's1', blocks: [], uses: [], sessions: 0 };
    fleet.reported('prober-a', { ...state, health: [health] }, 6);
    expect(fleet.of('prober-a', 7).health).toEqual([health]);
    fleet.reported('prober-a', state, 8);
    expect(fleet.of('prober-a', 9).health).toEqual([]);
  });
});

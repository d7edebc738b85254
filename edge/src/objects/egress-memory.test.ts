import type { EgressStateMessage } from '@rcpt/shared/contract/prober';
import { describe, expect, it } from 'vitest';
import { blockAt } from '../../test/fake-prober.ts';
import { memoryStore } from '../../test/memory-store.ts';
import { EGRESS_MEMORY_MS, EgressMemory } from './egress-memory.ts';

const HOUR_MS = 60 * 60_000;

function stateOf(parts: Partial<EgressStateMessage>): EgressStateMessage {
  return { type: 'egress_state', id: 'state', blocks: [], uses: [], sessions: 0, ...parts };
}

describe('EgressMemory', () => {
  const now = 1_800_000_000_000;

  it('gives back, from storage alone, the blocks in force, the earliest warm-up and the hours not over', () => {
    const store = memoryStore();
    const before = new EgressMemory(store);
    before.remember(
      'token-a',
      ['127.0.0.2'],
      stateOf({ warmUps: [{ egress: '127.0.0.2', since: now - 5 * HOUR_MS }] }),
      now - HOUR_MS,
    );
    before.remember(
      'token-a',
      ['127.0.0.2', '127.0.0.3'],
      stateOf({
        blocks: [
          blockAt('127.0.0.2', 'mx1.company.test', now - 60_000),
          blockAt('127.0.0.3', 'mx2.company.test', now - 900_000),
        ],
        uses: [{ egress: '127.0.0.2', provider: 'google', used: 7, budget: 100 }],
        // A later start than the one already kept: the warm-up runs from the first.
        warmUps: [{ egress: '127.0.0.2', since: now - 60_000 }],
      }),
      now - 30 * 60_000,
    );

    // A hub that restarted reads the same storage.
    const after = new EgressMemory(store);
    const memory = after.recall('token-a', ['127.0.0.2', '127.0.0.3'], now);
    expect(memory.blocks.map((block) => [block.egress, block.scope.name])).toEqual([
      ['127.0.0.2', 'mx1.company.test'],
    ]);
    expect(memory.warmUps).toEqual([{ egress: '127.0.0.2', since: now - 5 * HOUR_MS }]);
    expect(memory.uses).toEqual([
      { egress: '127.0.0.2', provider: 'google', used: 7, budget: 100, at: now - 30 * 60_000 },
    ]);
    // An hour later the use has left its window; the warm-up stays.
    const later = after.recall('token-a', ['127.0.0.2'], now + HOUR_MS);
    expect(later.uses).toEqual([]);
    expect(later.warmUps).toHaveLength(1);
  });

  it("keeps one token's egresses apart from another's of the same id", () => {
    const memory = new EgressMemory(memoryStore());
    memory.remember(
      'token-a',
      ['system'],
      stateOf({ blocks: [blockAt('system', 'mx1.company.test', now)] }),
      now,
    );
    expect(memory.recall('token-b', ['system'], now)).toEqual({ blocks: [], warmUps: [], uses: [] });
    expect(memory.recall('token-a', ['system'], now).blocks).toHaveLength(1);
  });

  it('forgets an egress not reported for a month, and deletes it from storage', () => {
    const store = memoryStore();
    const memory = new EgressMemory(store);
    memory.remember(
      'token-a',
      ['127.0.0.2'],
      stateOf({ warmUps: [{ egress: '127.0.0.2', since: now }] }),
      now,
    );
    expect(store.keys()).toHaveLength(1);
    expect(memory.recall('token-a', ['127.0.0.2'], now + EGRESS_MEMORY_MS + 1)).toEqual({
      blocks: [],
      warmUps: [],
      uses: [],
    });
    expect(store.keys()).toEqual([]);
  });
});

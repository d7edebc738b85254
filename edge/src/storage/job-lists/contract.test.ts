// The contract of a job's lists (storage/job-lists/): the same cases against both of its
// implementations, D1's and the JobStore object's (objects/job-store.ts), so either store answers
// a job's reads and writes alike.
import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { objectJobLists } from '../../objects/job-store.ts';
import { jsonChunks } from '../json-chunks.ts';
import { d1JobLists } from './d1.ts';
import type { JobLists, RoundAnswerRow } from './index.ts';

const stores: [string, (jobId: string) => JobLists][] = [
  ['D1', (jobId) => d1JobLists(env.DB, jobId)],
  ['JobStore', (jobId) => objectJobLists(env.JOB_STORE, jobId)],
];

const NOW = 1_800_000_000_000;

/** Four rows: alice, bob, alice again (a duplicate) and an invalid row without an address. */
async function uploaded(lists: JobLists) {
  return lists.storeUpload({
    rows: jsonChunks([
      [0, 'alice@a.test', 0, null],
      [1, 'bob@b.test', 1, null],
      [2, 'Alice@a.test', 0, null],
      [3, 'nope', null, JSON.stringify({ status: 'undeliverable', subStatus: 'invalid_syntax' })],
    ]).map((chunk) => ({ rows: chunk.json, cells: null, cellsOffset: 0 })),
    addresses: jsonChunks([
      [0, 'alice@a.test', 'a.test', null, null, null, 0, null],
      [1, 'bob@b.test', 'b.test', null, null, null, 0, null],
    ]),
    now: NOW,
  });
}

function answer(idx: number, status: string, subStatus: string, refundable = false) {
  return {
    idx,
    status,
    subStatus,
    catchAll: false,
    refundable,
    resultJson: JSON.stringify({ status, subStatus }),
  };
}

describe.each(stores)("a job's lists in %s", (_name, listsOf) => {
  it('stores an upload once and reports its counters with a rising write sequence', async () => {
    const lists = listsOf(crypto.randomUUID());
    const first = await uploaded(lists);
    expect(first).toMatchObject({ processed: 0, pending: 2, due: false, asking: 0 });
    const again = await uploaded(lists);
    expect(again.seq).toBeGreaterThan(first.seq);
    expect(again).toMatchObject({ processed: 0, pending: 2 });
    expect(await lists.countResultRows({})).toBe(4);
  });

  it('records a final answer once, and pages and filters the rows with their results', async () => {
    const lists = listsOf(crypto.randomUUID());
    await uploaded(lists);
    const report = await lists.recordFinal(
      [
        answer(0, 'deliverable', 'accepted_email'),
        { ...answer(1, 'unknown', 'greylisted', true), recheckable: true },
      ],
      true,
    );
    expect(report).toMatchObject({
      processed: 2,
      deliverable: 1,
      unknown: 1,
      refundable: 1,
      pending: 0,
      due: true,
    });
    const replay = await lists.recordFinal([answer(0, 'undeliverable', 'rejected_email')], true);
    expect(replay).toMatchObject({ processed: 2, deliverable: 1, undeliverable: 0 });
    const rows = await lists.resultRows({ statuses: ['deliverable'] }, { limit: 10, offset: 0 });
    expect(rows.map((row) => row.row)).toEqual([0, 2]);
    expect(await lists.countResultRows({ search: 'ALICE' })).toBe(2);
    expect(await lists.countResultRows({ subStatuses: ['invalid_syntax'] })).toBe(1);
    expect(await lists.rowsByVerdict()).toEqual(
      expect.arrayContaining([expect.objectContaining({ status: 'deliverable', total: 2 })]),
    );
    expect([...(await lists.verdicts(['alice@a.test', 'carol@c.test'])).keys()]).toEqual(['alice@a.test']);
    expect(await lists.domains()).toEqual(expect.arrayContaining(['a.test', 'b.test']));
  });

  it('keeps a provisional answer pending, and finds and requeues addresses past their lease', async () => {
    const lists = listsOf(crypto.randomUUID());
    await uploaded(lists);
    await lists.recordProvisional(
      [{ ...answer(1, 'unknown', 'greylisted'), retryAt: NOW + 60_000 }],
      NOW + 10,
    );
    expect(await lists.pending(10)).toEqual({
      total: 2,
      addresses: [
        { email: 'alice@a.test', subStatus: null, retryAt: null },
        { email: 'bob@b.test', subStatus: 'greylisted', retryAt: NOW + 60_000 },
      ],
    });
    expect((await lists.stale(NOW + 5, 10)).map((address) => address.idx)).toEqual([0]);
    await lists.markRequeued([0], NOW + 20);
    expect(await lists.stale(NOW + 10, 10)).toEqual([]);
    expect(
      (await lists.stale(NOW + 21, 10)).map((address) => [address.idx, address.attempts]).sort(),
    ).toEqual([
      [0, 1],
      [1, 1],
    ]);
    expect((await lists.unfinished()).map((address) => address.idx)).toEqual([0, 1]);
  });

  it('asks a round, records a paid and an unpaid known answer, and closes what it still asks', async () => {
    const lists = listsOf(crypto.randomUUID());
    await uploaded(lists);
    await lists.recordFinal(
      [
        { ...answer(0, 'unknown', 'greylisted', true), recheckable: true },
        { ...answer(1, 'unknown', 'greylisted', true), recheckable: true },
      ],
      true,
    );
    expect((await lists.claimDue()).map((address) => address.idx)).toEqual([0, 1]);
    expect(await lists.chargeable([0, 1])).toEqual([0, 1]);
    const known = (idx: number): RoundAnswerRow => [idx, 'deliverable', 'accepted_email', 0, '{}', null];
    const report = await lists.recordRound([known(0), known(1)], 1, [0]);
    expect(report).toMatchObject({
      deliverable: 1,
      unknown: 1,
      refundable: 1,
      asking: 0,
      changed: 1,
      due: true,
    });
    expect(await lists.chargeable([0, 1])).toEqual([]);
    expect((await lists.claimDue()).map((address) => address.idx)).toEqual([1]);
    expect(await lists.closeRound(2)).toMatchObject({ asking: 0, due: true, changed: 0 });
    expect(await lists.domainCounts([{ domain: 'a.test', round: 1 }])).toEqual([
      { domain: 'a.test', addresses: 1, changed: 1 },
    ]);
  });

  it('drops the free rows, then deletes everything', async () => {
    const lists = listsOf(crypto.randomUUID());
    await uploaded(lists);
    expect(await lists.dropFreeRows(1000)).toBe(2);
    expect(await lists.countResultRows({})).toBe(2);
    let deleted = 0;
    for (let step = 0; step < 10; step++) {
      const changes = await lists.deleteSome(1);
      if (changes === 0) break;
      deleted += changes;
    }
    expect(deleted).toBe(5);
    expect(await lists.countResultRows({})).toBe(0);
  });
});

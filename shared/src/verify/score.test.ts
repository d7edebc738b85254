import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  SUB_STATUSES,
  type SubStatus,
  VERIFICATION_STATUSES,
  type VerificationStatus,
} from '../contract/api.ts';
import { RISK_FACTOR_PENALTY, SCORE_BANDS, SCORE_BASES, scoreVerdict, TOXICITY_PENALTY } from './score.ts';

const subStatuses = Object.keys(SUB_STATUSES) as SubStatus[];

describe('SCORE_BANDS', () => {
  it('tile 0–100 in order undeliverable, unknown, risky, deliverable without gaps or overlaps', () => {
    const ordered: VerificationStatus[] = ['undeliverable', 'unknown', 'risky', 'deliverable'];
    expect(SCORE_BANDS[ordered[0]!].min).toBe(0);
    expect(SCORE_BANDS[ordered[3]!].max).toBe(100);
    for (let index = 1; index < ordered.length; index++) {
      expect(SCORE_BANDS[ordered[index]!].min).toBe(SCORE_BANDS[ordered[index - 1]!].max + 1);
    }
  });

  it.each(subStatuses)('the base of %s lies inside its status band', (subStatus) => {
    const band = SCORE_BANDS[SUB_STATUSES[subStatus]];
    expect(SCORE_BASES[subStatus]).toBeGreaterThanOrEqual(band.min);
    expect(SCORE_BASES[subStatus]).toBeLessThanOrEqual(band.max);
  });
});

describe('scoreVerdict', () => {
  it.each<[string, VerificationStatus, SubStatus, number, number, number]>([
    ['a clean accepted address', 'deliverable', 'accepted_email', 0, 0, 100],
    ['an accepted free-provider address', 'deliverable', 'accepted_email', 1, 0, 100 - RISK_FACTOR_PENALTY],
    [
      'a deliverable address with many risk factors stays deliverable',
      'deliverable',
      'accepted_email',
      10,
      0,
      80,
    ],
    [
      'an accepted role address sits high in risky',
      'risky',
      'role_based',
      1,
      1,
      79 - RISK_FACTOR_PENALTY - TOXICITY_PENALTY,
    ],
    ['a catch-all domain', 'risky', 'catch_all', 1, 0, 66],
    ['a disposable address', 'risky', 'disposable', 1, 2, 50],
    ['a toxic address is clamped to the bottom of risky', 'risky', 'toxic', 2, 5, 50],
    ['greylisting', 'unknown', 'greylisted', 1, 0, 43],
    ['an unknown with many factors is clamped to 21', 'unknown', 'internal_error', 5, 5, 21],
    ['an undeliverable typo takes the band midpoint', 'undeliverable', 'possible_typo', 0, 0, 10],
    ['invalid syntax', 'undeliverable', 'invalid_syntax', 3, 2, 0],
    ['an unknown mailbox', 'undeliverable', 'mailbox_not_found', 0, 0, 8],
  ])('%s', (_name, status, subStatus, riskFactorCount, toxicity, expected) => {
    const riskFactors = Array.from({ length: riskFactorCount }, (_, index) => `factor ${index}`);
    expect(scoreVerdict({ status, subStatus, riskFactors, toxicity })).toBe(expected);
  });

  it('ranks an accepted address above a role address above a catch-all', () => {
    const score = (status: VerificationStatus, subStatus: SubStatus) =>
      scoreVerdict({ status, subStatus, riskFactors: [], toxicity: 0 });
    expect(score('deliverable', 'accepted_email')).toBeGreaterThan(score('risky', 'role_based'));
    expect(score('risky', 'role_based')).toBeGreaterThan(score('risky', 'catch_all'));
  });

  it('always gives an integer inside the status band, for any combination', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...VERIFICATION_STATUSES),
        fc.constantFrom(...subStatuses),
        fc.array(fc.string(), { maxLength: 30 }),
        fc.oneof(fc.integer({ min: -10, max: 10 }), fc.double()),
        (status, subStatus, riskFactors, toxicity) => {
          const score = scoreVerdict({ status, subStatus, riskFactors, toxicity });
          expect(Number.isInteger(score)).toBe(true);
          expect(score).toBeGreaterThanOrEqual(SCORE_BANDS[status].min);
          expect(score).toBeLessThanOrEqual(SCORE_BANDS[status].max);
        },
      ),
    );
  });

  it('never rises when a risk factor is added', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...subStatuses),
        fc.nat({ max: 10 }),
        fc.nat({ max: 5 }),
        (subStatus, count, toxicity) => {
          const status = SUB_STATUSES[subStatus];
          const factors = Array.from({ length: count }, () => 'factor');
          const before = scoreVerdict({ status, subStatus, riskFactors: factors, toxicity });
          const after = scoreVerdict({ status, subStatus, riskFactors: [...factors, 'one more'], toxicity });
          expect(after).toBeLessThanOrEqual(before);
        },
      ),
    );
  });
});

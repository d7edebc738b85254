// From uploaded rows to work: each row is empty, invalid (answered now, never charged),
// unreadable (skipped) or an address; duplicates of an address share its verification.
import type { VerificationResult } from '@rcpt/shared/contract/api';
import type { SyntaxResult } from '@rcpt/shared/verify/inputs';
import { checkSyntax } from '@rcpt/shared/verify/syntax';
import { verdictFromFacts } from '@rcpt/shared/verify/verdict';
import type { JobCounts } from '../../storage/job-creation.ts';
import type { UploadRow } from './input.ts';

export interface PlannedRow {
  row: number;
  input: string;
  addressIdx: number | null;
  /** The final result of a row that needs no verification (empty, invalid or unreadable). */
  result: VerificationResult | null;
}

export interface PlannedAddress {
  idx: number;
  email: string; // normalised: domain lower-cased A-labels, local part as given
  domain: string;
}

export type BatchCounts = JobCounts;

export interface BatchPlan {
  rows: PlannedRow[];
  addresses: PlannedAddress[];
  counts: BatchCounts;
}

type ValidSyntax = Extract<SyntaxResult, { valid: true }>;

/** The address a row holds, to verify (and charge), or null: unreadable, empty or invalid. */
export function addressOfRow(uploadRow: UploadRow): ValidSyntax | null {
  if (uploadRow.unreadable) return null;
  const syntax = checkSyntax(uploadRow.input.trim());
  return syntax.valid ? syntax : null;
}

export function planBatch(uploadRows: readonly UploadRow[], now: number): BatchPlan {
  const verifiedAt = new Date(now).toISOString();
  const indexByEmail = new Map<string, number>();
  const addresses: PlannedAddress[] = [];
  const rows: PlannedRow[] = [];
  const counts: BatchCounts = {
    totalRows: uploadRows.length,
    totalEmails: 0,
    duplicateCount: 0,
    emptyRows: 0,
    invalidRows: 0,
    skippedRows: 0,
  };

  uploadRows.forEach((uploadRow, row) => {
    const input = uploadRow.input.trim();
    const syntax = addressOfRow(uploadRow);
    const base = { row, input };
    if (syntax === null) {
      if (uploadRow.unreadable) counts.skippedRows++;
      else if (input === '') counts.emptyRows++;
      else counts.invalidRows++;
      const { result } = verdictFromFacts({
        address: checkSyntax(input),
        dns: null,
        probe: { kind: 'skipped' },
        verifiedAt,
        processingTimeMs: 0,
      });
      rows.push({ ...base, addressIdx: null, result });
      return;
    }
    let idx = indexByEmail.get(syntax.email);
    if (idx === undefined) {
      idx = addresses.length;
      indexByEmail.set(syntax.email, idx);
      addresses.push({ idx, email: syntax.email, domain: syntax.domain });
    } else {
      counts.duplicateCount++;
    }
    rows.push({ ...base, addressIdx: idx, result: null });
  });
  counts.totalEmails = addresses.length;
  return { rows, addresses, counts };
}

/** Addresses grouped by domain in bounded groups: one queue message, one SMTP session each. */
export function groupByDomain<Address extends { domain: string }>(
  addresses: readonly Address[],
  groupSize: number,
): Address[][] {
  const byDomain = new Map<string, Address[]>();
  for (const address of addresses) {
    const group = byDomain.get(address.domain);
    if (group) group.push(address);
    else byDomain.set(address.domain, [address]);
  }
  const groups: Address[][] = [];
  for (const domainAddresses of byDomain.values()) {
    for (let start = 0; start < domainAddresses.length; start += groupSize) {
      groups.push(domainAddresses.slice(start, start + groupSize));
    }
  }
  return groups;
}

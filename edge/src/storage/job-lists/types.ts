// The words of a job's lists (index.ts): what they hold, what a write reports.
import type { JsonChunk } from '../json-chunks.ts';

/** What a write of the lists reports, for D1 to apply when `seq` is higher than the one it holds. */
export interface ListsReport {
  /** The job's write sequence number: each write of its lists takes the next one. */
  seq: number;
  /** Addresses with a final answer, by status; `refundable`: those refunded at completion. */
  processed: number;
  deliverable: number;
  undeliverable: number;
  risky: number;
  unknown: number;
  catchAll: number;
  refundable: number;
  /** Addresses still without a final answer. */
  pending: number;
  /** Whether an address is due for the next follow-up round. */
  due: boolean;
  /** Addresses the running follow-up round still asks. */
  asking: number;
  /** Addresses whose verdict the round asked about (`round`) changed; 0 without one. */
  changed: number;
}

/** One statement's worth of the upload's rows, with the chunk of the file's cells they take theirs from. */
export interface UploadRowChunk {
  /** JSON array of [row, input, addressIdx, resultJson]. */
  rows: string;
  /** The cells chunk holding these rows' cells (null for a JSON upload). */
  cells: string | null;
  /** The row number of the cells chunk's first element. */
  cellsOffset: number;
}

/** A final or temporary answer as the lists keep it. */
export interface ListAnswer {
  idx: number;
  status: string;
  subStatus: string;
  catchAll: boolean | null;
  refundable: boolean;
  resultJson: string;
}

/** A follow-up round's answer: [idx, status, subStatus, catchAll, resultJson, 'due' | null]. */
export type RoundAnswerRow = [
  number,
  string | null,
  string | null,
  0 | 1 | null,
  string | null,
  'due' | null,
];

export interface ListAddress {
  idx: number;
  email: string;
  domain: string;
}

export interface UnfinishedAddress extends ListAddress {
  /** The last temporary answer, if the address had one. */
  subStatus: string | null;
  resultJson: string | null;
}

export interface StaleListAddress extends ListAddress {
  attempts: number;
}

export interface ResultRowsFilter {
  statuses?: readonly string[] | undefined;
  subStatuses?: readonly string[] | undefined;
  search?: string | undefined;
}

export interface ResultRow {
  row: number;
  input: string;
  resultJson: string | null;
  csvValues: string | null;
}

export interface PendingListAddress {
  email: string;
  subStatus: string | null;
  retryAt: number | null;
}

/** An address's latest verdict, for matching outcomes. */
export interface ListVerdict {
  status: string;
  subStatus: string;
  resultJson: string | null;
}

export interface JobLists {
  /** Stores the upload's rows and addresses (a repeated store finds them and changes nothing). */
  storeUpload(upload: {
    rows: readonly UploadRowChunk[];
    addresses: readonly JsonChunk[];
    now: number;
  }): Promise<ListsReport>;
  /** Records final answers, each address once; `recheck`: recheckable ones become due. */
  recordFinal(
    answers: readonly (ListAnswer & { recheckable?: boolean })[],
    recheck: boolean,
  ): Promise<ListsReport>;
  /** Keeps the temporary answers of addresses asked again at `retryAt`; their lease starts at `now`. */
  recordProvisional(answers: readonly (ListAnswer & { retryAt: number })[], now: number): Promise<void>;
  /** The numbers of a report, read without writing (its `seq` is the last write's). */
  report(round?: number): Promise<ListsReport>;
  /** Rows in upload order with their results, a page of those the filter selects. */
  resultRows(filter: ResultRowsFilter, page: { limit: number; offset: number }): Promise<ResultRow[]>;
  /** How many rows the filter selects. */
  countResultRows(filter: ResultRowsFilter): Promise<number>;
  /** Rows with a verdict by status, with the catch-all count of each. */
  rowsByVerdict(): Promise<{ status: string | null; total: number; catchAll: number }[]>;
  /** Addresses without a final answer: how many, and the first `limit`. */
  pending(limit: number): Promise<{ total: number; addresses: PendingListAddress[] }>;
  /** Every address without a final answer. */
  unfinished(): Promise<UnfinishedAddress[]>;
  /** Addresses without a final answer whose lease ran out before `before`, at most `limit`. */
  stale(before: number, limit: number): Promise<StaleListAddress[]>;
  /** Marks addresses handed to the queue again and counts the attempt. */
  markRequeued(idxs: readonly number[], now: number): Promise<void>;
  /** A follow-up round's start: the due addresses become asked; returns those asked. */
  claimDue(): Promise<ListAddress[]>;
  /** A watch round's start: the addresses at these domains become asked; returns those asked. */
  claimDomains(domains: readonly string[]): Promise<ListAddress[]>;
  /** Of these answered addresses, those asked and refunded, lowest index first: the ones a known answer charges. */
  chargeable(idxs: readonly number[]): Promise<number[]>;
  /**
   * Records a round's answers (once each: only while asked); `paid`: the addresses D1 charged
   * for, recorded as paid. A known answer for an unpaid refunded address is due again.
   */
  recordRound(
    answers: readonly RoundAnswerRow[],
    round: number,
    paid: readonly number[],
  ): Promise<ListsReport>;
  /** A round's end: what it still asks is due for the next one. */
  closeRound(round: number): Promise<ListsReport>;
  /** The distinct domains of the addresses (IP literals left out): what a watch looks at. */
  domains(): Promise<string[]>;
  /** Per domain, its addresses and those whose verdict round `round` changed. */
  domainCounts(
    domains: readonly { domain: string; round: number }[],
  ): Promise<{ domain: string; addresses: number; changed: number }[]>;
  /** The latest verdict of each of these emails (a map by email; those without one are absent). */
  verdicts(emails: readonly string[]): Promise<Map<string, ListVerdict>>;
  /** Drops up to `limit` of the rows that cost nothing (no address, or a duplicate); returns how many. */
  dropFreeRows(limit: number): Promise<number>;
  /** Deletes up to `limit` of the lists' entries; returns how many (0: nothing is left). */
  deleteSome(limit: number): Promise<number>;
}

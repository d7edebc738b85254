export {
  type Account,
  type CleanedList,
  type CleanOptions,
  type Job,
  type ListInput,
  Rcpt,
  type RcptOptions,
  STATUSES,
  type Status,
  type UploadResponse,
  type VerificationResult,
} from './client.ts';
export { type ErrorCode, RcptConnectionError, RcptError, RcptJobFailedError } from './errors.ts';
export type { components, paths } from './openapi.d.ts';

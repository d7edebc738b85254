export { checkedBaseUrl } from './base-url.ts';
export {
  type Account,
  type CleanedList,
  type CleanOptions,
  type Job,
  type ListInput,
  Rcpt,
  type RcptOptions,
  type ResultsFilter,
  SEND_ADVICE,
  type SendAdvice,
  STATUSES,
  type Status,
  type UploadResponse,
  type VerificationResult,
} from './client.ts';
export {
  type ErrorCode,
  type QuotaName,
  RcptConfigurationError,
  RcptConnectionError,
  RcptError,
  RcptJobFailedError,
  RcptQuotaError,
} from './errors.ts';
export type { components, paths } from './openapi.d.ts';

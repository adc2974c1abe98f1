/**
 * `postdate/client`: a typed client of Postdate's HTTP API, its types generated from the OpenAPI
 * document the API serves (lambdas/client/openapiTypes.ts), with an Idempotency-Key on every enqueue
 * and retries that keep it.
 */
export {
  PostdateClientError,
  PostdateNetworkError,
  type PostdateProblem,
  PostdateProblemError,
  type ProblemFieldError,
} from './clientErrors.js';
export {
  type AttachmentUpload,
  type AttachmentUploadRequest,
  type BatchEnqueueRequest,
  type BatchEnqueueResponse,
  type BatchResult,
  createPostdateClient,
  type EnqueueOptions,
  type EnqueueRequest,
  type EnqueueResult,
  type GroupHead,
  type GroupVersionRequest,
  type ListQuery,
  type Message,
  type MessageList,
  type MessageStatus,
  type PostdateClient,
  type PostdateClientOptions,
  type RescheduleRequest,
} from './createPostdateClient.js';
export type { components, operations, paths } from './openapiTypes.js';
export { DEFAULT_RETRY_POLICY, type RetryPolicy } from './retryPolicy.js';

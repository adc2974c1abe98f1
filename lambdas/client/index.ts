/**
 * `postdate/client`: a typed client of Postdate's HTTP API, its types generated from the OpenAPI
 * document the API serves (lambdas/client/openapiTypes.ts), with an Idempotency-Key on every enqueue
 * and retries that keep it.
 */
export {
  PostdateClientError,
  PostdateInputError,
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
  type CallOptions,
  type CreatedWebhook,
  type CreateWebhookRequest,
  createPostdateClient,
  type EnqueueOptions,
  type EnqueueRequest,
  type EnqueueResult,
  type GroupHead,
  type GroupVersionRequest,
  type ListQuery,
  type Message,
  type MessageEvent,
  type MessageList,
  type MessageStatus,
  type PageQuery,
  type PostdateClient,
  type PostdateClientOptions,
  paginate,
  type RenderedTemplate,
  type RescheduleRequest,
  type RotatedWebhook,
  type Suppression,
  type SuppressionList,
  type SuppressionRequest,
  type Template,
  type TemplateList,
  type TemplateRenderRequest,
  type TemplateRequest,
  type TemplateVersion,
  type WebhookDelivery,
  type WebhookDeliveryList,
  type WebhookEvent,
  type WebhookList,
  type WebhookTestEvent,
  type WebhookWithCounts,
} from './createPostdateClient.js';
export type { components, operations, paths, webhooks } from './openapiTypes.js';
export { DEFAULT_RETRY_POLICY, type RetryPolicy } from './retryPolicy.js';

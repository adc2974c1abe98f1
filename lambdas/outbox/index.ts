/**
 * `postdate/outbox`: the transactional outbox for applications that keep their data in DynamoDB
 * (docs/api-resources.md, "The transactional outbox"). Everything an application needs to put a
 * message in the same transaction as its own change, and nothing else of Postdate's internals.
 */

export {
  type EnqueueContext,
  type EnqueueRequest,
  type Parsed,
  type ParsedEnqueueRequest,
  parseEnqueueRequest,
} from '../core/messageSchema.js';
export type { ProblemDetails } from '../core/problem.js';
export { readGroupHeadVersion } from '../store/groupHead.js';
export {
  buildOutboxTransactItems,
  buildOutboxWrite,
  IDEMPOTENCY_KEY_PATTERN,
  OUTBOX_ITEM_INDEX,
  type OutboxInput,
  OutboxInputError,
  type OutboxWrite,
  requestFingerprint,
  TENANT_PATTERN,
  type TransactWriteItem,
} from './outboxItems.js';
export { type OutboxTemplate, readOutboxTemplate } from './outboxTemplate.js';

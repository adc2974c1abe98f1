/**
 * `postdate dlq show | redrive | drop`: the send queue's dead-letter queue. One file per command in
 * cli/dlq/, over the one SQS dead-letter adapter (cli/deadLetters/SqsDeadLetterQueue.ts); this module
 * is what the entry point and the tests import.
 */

export type { DlqDeps, RedriveDeps } from './dlq/dlqDeps.js';
export {
  assertDropIds,
  type DropDeps,
  type DropOptions,
  type DropReport,
  type DropRow,
  dlqDrop,
  dropDecision,
} from './dlq/dlqDrop.js';
export type { MoveTaskReport } from './dlq/dlqMoveAll.js';
export {
  assertRedriveOptions,
  dlqRedrive,
  type RedriveOptions,
  type RedriveReport,
  redriveSucceeded,
  type SelectiveRedriveReport,
} from './dlq/dlqRedrive.js';
export { type DlqSampleEntry, type DlqShowOptions, type DlqShowReport, dlqShow } from './dlq/dlqShow.js';

/**
 * POST /v1/messages/batch (DESIGN §3a): up to 100 enqueues in one request, each under its own
 * `idempotency_key` and atomic on its own, exactly as a single POST /v1/messages with that key: each
 * item is judged by `judgeEnqueue` and written by `writeJudgedEnqueue` (routes/enqueue.ts), so a
 * replayed item answers its stored message, the same key with another body is that item's 422, and
 * replaying a whole batch cut short by a timeout enqueues nothing twice. A key given twice in one
 * batch is written in request order, the later item only once the earlier one is settled: it answers
 * as the single enqueue that follows would, 200 replayed for the same body, 422 for another.
 *
 * - permissive (default): every valid item is written; each result says what a single enqueue of
 *   that item would have answered (202, 200 replayed, 400/413/422, or 500/503 when its write failed);
 * - strict: every item is judged first, its attachments included (judgeEnqueue checks them and
 *   stores no byte); if one is not a valid new message or a replay, nothing is written, in the table
 *   or the bucket, and the answer is one 400 naming each failing item's fields (`/messages/3/to`).
 *
 * The answer is 200 `{results: [{index, status, replayed?, message?, problem?}]}` in request order.
 * Like Powertools' batch processing, one item's failure never fails the others; the request fails
 * as a whole (500/503) only when nothing could be done. Judging and writing run a bounded number of
 * items at a time.
 */

import {
  batchItemField,
  batchItemProblem,
  splitBatchItem,
  validateBatchEnvelope,
} from '../../core/batchEnqueueSchema.js';
import { errorForLog } from '../../core/errorForLog.js';
import { type FieldError, type ProblemDetails, validationProblem } from '../../core/problem.js';
import { LIMITS } from '../../core/requestLimits.js';
import { runWithConcurrency } from '../../core/runWithConcurrency.js';
import { messageView } from '../../store/messageView.js';
import {
  failureProblem,
  jsonResult,
  problemResult,
  type RouteDependencies,
  type RouteHandler,
  readJsonBody,
} from '../route.js';
import {
  type EnqueueAnswer,
  type EnqueueItem,
  judgeEnqueue,
  type ValidEnqueue,
  writeJudgedEnqueue,
} from './enqueue.js';

/** Items judged or written at once: each is a few DynamoDB calls, so 100 items take ~7 rounds. */
const ITEM_CONCURRENCY = 16;

/** An item's answer, or the error its store calls threw (that item's 500 or 503). */
type ItemAnswer = EnqueueAnswer | { readonly kind: 'failed'; readonly error: unknown };

/** One entry of `results`. */
interface BatchResult {
  readonly index: number;
  readonly status: number;
  readonly replayed?: boolean;
  readonly message?: ReturnType<typeof messageView>;
  readonly problem?: ProblemDetails;
}

export function enqueueBatchRoute(deps: RouteDependencies): RouteHandler {
  return async function enqueueBatch({ tenant, event }) {
    const body = readJsonBody(event, { maxBytes: LIMITS.maxBatchBodyBytes });
    if (!body.ok) return problemResult(body.problem);
    const envelope = validateBatchEnvelope(body.value);
    if (!envelope.ok) return problemResult(validationProblem(envelope.errors));
    const { messages, mode } = envelope.value;
    const now = deps.now();
    const items = messages.map((message, index) => readItem(message, index, tenant, now));

    const judged = await runWithConcurrency(items, ITEM_CONCURRENCY, async (item) =>
      'problem' in item ? item.problem : attempt(() => judgeEnqueue(deps, item.enqueue)),
    );
    if (mode === 'strict') {
      const failed = judged.find((answer) => answer.kind === 'failed');
      if (failed) throw failed.error;
      const errors = judged.flatMap((answer, index) =>
        answer.kind === 'problem' ? problemFields(index, answer.problem) : [],
      );
      if (errors.length > 0) {
        return problemResult(
          validationProblem(errors, `Nothing was enqueued (strict mode): ${countInvalid(judged)} invalid.`),
          {},
          { batch_size: items.length, mode },
        );
      }
    }
    const answers = [...judged];
    for (const round of writeRounds(items)) {
      const written = await runWithConcurrency(round, ITEM_CONCURRENCY, async (index) => {
        const [answer, item] = [judged[index], items[index]];
        if (answer?.kind !== 'valid' || item === undefined || 'problem' in item) return answer;
        return attempt(() => writeJudgedEnqueue(deps, item.enqueue, answer));
      });
      round.forEach((index, at) => {
        const answer = written[at];
        if (answer !== undefined) answers[index] = answer;
      });
    }
    const failures = answers.flatMap((answer) => (answer.kind === 'failed' ? [answer.error] : []));
    // Nothing could be done: the request fails as a whole, and the client retries it whole.
    if (failures.length === answers.length) throw failures[0];
    const results = answers.map((answer, index) => batchResult(index, answer));
    return jsonResult(200, { results }, {}, batchLog(results, mode, failures[0]));
  };
}

type ReadItem =
  | { readonly index: number; readonly enqueue: EnqueueItem }
  | { readonly index: number; problem: Extract<ItemAnswer, { kind: 'problem' }> };

/** An item's key and body, or its own problem: a body a single enqueue would refuse 413, no usable key. */
function readItem(message: unknown, index: number, tenant: string, now: Date): ReadItem {
  const split = splitBatchItem(message, LIMITS.maxBodyBytes);
  if (!split.ok) return { index, problem: { kind: 'problem', problem: split.problem } };
  return {
    index,
    enqueue: { tenant, idempotencyKey: split.value.idempotencyKey, body: split.value.body, now },
  };
}

/**
 * The items' indexes in rounds of writes: each key's first item in the first round, its second in the
 * next, and so on. A later item of a key is written after the earlier one is settled, as a second
 * single enqueue with that key would be, so it replays it or is refused 422, never racing it
 * (docs/decisions/0204-a-key-twice-in-a-batch-is-two-enqueues-in-order.md).
 */
function writeRounds(items: readonly ReadItem[]): number[][] {
  const seen = new Map<string, number>();
  const rounds: number[][] = [];
  items.forEach((item, index) => {
    const key = 'problem' in item ? undefined : item.enqueue.idempotencyKey;
    const round = key === undefined ? 0 : (seen.get(key) ?? 0);
    if (key !== undefined) seen.set(key, round + 1);
    const indexes = rounds[round] ?? [];
    indexes.push(index);
    rounds[round] = indexes;
  });
  return rounds;
}

/** Runs an item's store calls; what they throw becomes that item's failure, not the batch's. */
async function attempt<T extends ValidEnqueue | EnqueueAnswer>(
  run: () => Promise<T>,
): Promise<T | ItemAnswer> {
  try {
    return await run();
  } catch (error) {
    return { kind: 'failed', error };
  }
}

function problemFields(index: number, details: ProblemDetails): FieldError[] {
  const errors = details.errors ?? [{ field: 'body', message: details.detail }];
  return errors.map((error) => batchItemField(index, error));
}

function countInvalid(judged: readonly (ValidEnqueue | ItemAnswer)[]): string {
  const count = judged.filter((answer) => answer.kind === 'problem').length;
  return count === 1 ? 'one item is' : `${count} items are`;
}

function batchResult(index: number, answer: ValidEnqueue | ItemAnswer): BatchResult {
  switch (answer.kind) {
    case 'created':
    case 'replayed':
      return {
        index,
        status: answer.kind === 'created' ? 202 : 200,
        replayed: answer.kind === 'replayed',
        message: messageView(answer.state, { withHistory: false }),
      };
    case 'problem':
      return { index, status: answer.problem.status, problem: batchItemProblem(index, answer.problem) };
    case 'failed': {
      const failure = failureProblem(answer.error, 'batch');
      return { index, status: failure.status, problem: failure };
    }
    case 'valid':
      // Unreachable: every valid item is written before the results are built.
      throw new Error('a batch item was judged but never written');
  }
}

/** The request's log line: counts by outcome, and the first failure's safe description. */
function batchLog(results: readonly BatchResult[], mode: string, failure: unknown): Record<string, unknown> {
  const count = (test: (result: BatchResult) => boolean) => results.filter(test).length;
  return {
    batch_size: results.length,
    mode,
    created: count((result) => result.status === 202),
    replayed: count((result) => result.replayed === true),
    refused: count((result) => result.status >= 400 && result.status < 500),
    failed: count((result) => result.status >= 500),
    ...(failure === undefined ? {} : { item_error: errorForLog(failure) }),
  };
}

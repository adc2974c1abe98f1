/**
 * The `--ids` of the dead-letter commands: message ids (the `id` of a `{v, id, rev}` body, not SQS
 * message ids), checked before any queue is touched, and the walk that finds exactly their copies.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { type DispatchPayload, parseDispatchPayload } from '../../lambdas/core/dispatchPayload.js';
import { isMessageId } from '../../lambdas/core/ids.js';
import { DEAD_LETTER_SETTLE_MS } from '../../lambdas/core/staleDeadLetter.js';
import { readStateRecord } from '../../lambdas/store/stateReads.js';
import { UsageError } from '../cliErrors.js';
import type { Output } from '../output.js';
import type { DeadLetter, SqsDeadLetterQueue } from './SqsDeadLetterQueue.js';
import { type ScanOptions, scanDeadLetters } from './scanDeadLetters.js';

/**
 * Every id given is a message id, checked before anything is read or changed (the `--ids` here, and
 * `messages show|cancel|retry|discard`). An empty one is most often a shell variable that is not set.
 * @throws UsageError naming every id that is not one.
 */
export function assertMessageIds(ids: readonly string[]): void {
  const next = '(postdate messages list shows ids)';
  if (ids.includes(''))
    throw new UsageError(`the message id is empty: is the variable you gave it in set? ${next}`);
  const bad = ids.filter((id) => !isMessageId(id)).map((id) => `"${id}"`);
  if (bad.length === 0) return;
  const rule = `1 to 32 letters, digits, "-" or "_" ${next}`;
  throw new UsageError(
    bad.length === 1
      ? `${bad[0]} is not a message id: ${rule}`
      : `${bad.join(', ')} are not message ids: ${rule}`,
  );
}

/** A chosen id with no copy in the DLQ whose message is in the table and not `dead` (decision 0253). */
export interface NotDead {
  readonly id: string;
  readonly status: string;
}

/**
 * Of the chosen ids with no copy in the DLQ, those whose message is in the table and not `dead`:
 * there is nothing to redrive or drop, and the sweeper's advice for a dead one would mislead.
 */
export async function notDeadAmong(
  table: { readonly documents: DynamoDBDocumentClient; readonly tableName: string },
  notFound: readonly string[],
): Promise<NotDead[]> {
  const notDead: NotDead[] = [];
  for (const id of notFound) {
    const record = await readStateRecord(table.documents, table.tableName, id);
    if (record !== undefined && record.status !== 'dead') notDead.push({ id, status: record.status });
  }
  return notDead;
}

/**
 * The lines for chosen ids with no copy in the DLQ, and what the operator does next (docs/runbook.md
 * §1, step 6): a message that is not dead is named with its status, nothing to do; for the others
 * (dead, or not in the table) its copy was lost and the sweeper makes it again once the message has
 * been dead DEAD_LETTER_SETTLE_MS (core/staleDeadLetter.ts); else `messages retry` (a redrive) or
 * `messages discard` (a drop) does without the copy. One wording for `dlq redrive` and `dlq drop`.
 */
export function notInTheDeadLetterQueue(
  report: { readonly notFound: readonly string[]; readonly notDead: readonly NotDead[] },
  command: 'redrive' | 'drop',
): string[] {
  const lines: string[] = [];
  if (report.notDead.length > 0) {
    const each = report.notDead.map(({ id, status }) => `${id} is ${status}`).join(', ');
    lines.push(`${each}: not dead, nothing to ${command} (postdate messages show <id>)`);
  }
  const notDead = new Set(report.notDead.map(({ id }) => id));
  const missing = report.notFound.filter((id) => !notDead.has(id));
  if (missing.length > 0) {
    lines.push(
      `not in the DLQ: ${missing.join(', ')}; postdate messages show <id> says where each is: ` +
        `the sweeper makes a dead one's missing copy once it has been dead ${DEAD_LETTER_SETTLE_MS / 60_000} minutes: run again after the next sweep, ` +
        `or postdate messages ${command === 'redrive' ? 'retry' : 'discard'} <id> (docs/runbook.md §1)`,
    );
  }
  return lines;
}

/** What a handler did with one chosen copy: took it off (`done`), left it (`keep`), or was refused. */
export type ChosenOutcome = 'done' | 'keep' | 'refused';
/**
 * A copy of a chosen id that is not its message's current one (of an earlier death, or unmarked:
 * decisions 0149, 0167): taken off (`done`) or left (`keep`), and the walk looks on for the current one.
 */
export interface EarlierCopy {
  readonly earlier: 'done' | 'keep';
}

export interface ChosenScan {
  /** The chosen copies handled (done, or kept in a dry run), in the order they were found; no {@link EarlierCopy}. */
  readonly handled: Pick<DispatchPayload, 'id' | 'rev'>[];
  readonly notFound: string[];
  readonly scanned: number;
}

/**
 * Walks the queue for the copies whose payload id is one of `ids` and hands each to `handle`, one at
 * a time; every other message is left (released when the walk ends). The walk stops once every id
 * was found (a copy the handler calls {@link EarlierCopy} does not count), at an empty receive, or
 * after `maxScan` messages.
 */
export async function handleChosenCopies(
  queue: SqsDeadLetterQueue,
  ids: readonly string[],
  options: ScanOptions,
  progress: { readonly out: Output; readonly verb: string },
  handle: (letter: DeadLetter, copy: DispatchPayload) => Promise<ChosenOutcome | EarlierCopy>,
): Promise<ChosenScan> {
  const wanted = new Set(ids);
  const found = new Set<string>();
  const handled: Pick<DispatchPayload, 'id' | 'rev'>[] = [];
  const { scanned } = await scanDeadLetters(
    queue,
    { ...options, finished: () => found.size >= wanted.size },
    async (letter) => {
      const parsed = parseDispatchPayload(letter.body);
      if (!parsed.ok || !wanted.has(parsed.payload.id)) return 'keep';
      const outcome = await handle(letter, parsed.payload);
      if (typeof outcome === 'object') return outcome.earlier;
      found.add(parsed.payload.id);
      if (outcome !== 'refused') handled.push({ id: parsed.payload.id, rev: parsed.payload.rev });
      progress.out.progress(progress.verb, found.size, wanted.size);
      return outcome === 'done' ? 'done' : 'keep';
    },
  );
  return { handled, notFound: ids.filter((id) => !found.has(id)), scanned };
}

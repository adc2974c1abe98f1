/**
 * `postdate messages enqueue --file batch.jsonl`: one enqueue body per line, each with its own
 * `idempotency_key`, sent through the HTTP API's batch enqueue (DESIGN §3a) in batches of 100 with
 * the typed client (of 99 when strict over several batches). Running the same file again is safe: every item replays under its key.
 *
 * One result per line on stdout (with `--json`, one JSON object per line: `{line, index, status,
 * message?, problem?}`), progress on stderr. `index` and a problem's `/messages/N/…` count the
 * file's items (blank lines aside), not the batch's, as if the file were one batch. Lines are read
 * and parsed before anything is sent, so a malformed file sends nothing.
 *
 * When a request fails (the API refuses a batch, or does not answer), the run stops there: the
 * lines before it have their results above, and the error (with `--json`, one last line) carries
 * the API's problem with its `errors` on the file's lines, `unanswered_from_line` and
 * `maybe_stored_through_line` (docs/cli.md). `--mode strict` over several batches first has the API
 * judge every batch (see `judgeEveryBatch`, decision 0146), so a bad line anywhere sends nothing.
 */
import { readFileSync } from 'node:fs';
import {
  type BatchEnqueueRequest,
  type BatchResult,
  type PostdateClient,
  type PostdateProblem,
  PostdateProblemError,
  type ProblemFieldError,
} from '../lambdas/client/index.js';
import { LIMITS } from '../lambdas/core/requestLimits.js';
import { ApiProblemError, CliError, fromClientError, UsageError } from './cliErrors.js';
import type { Output } from './output.js';

type BatchItem = BatchEnqueueRequest['messages'][number];

export interface EnqueueFileOptions {
  /** The JSON Lines text: one enqueue body with its `idempotency_key` per non-blank line. */
  readonly text: string;
  readonly mode?: 'permissive' | 'strict';
}

export interface EnqueueFileReport {
  readonly sent: number;
  readonly created: number;
  readonly replayed: number;
  /** Answered 4xx: not stored. */
  readonly refused: number;
  /** Answered 5xx: the write may have landed with its answer lost; running the file again replays it. */
  readonly unknown: number;
  /** Every item was stored (new or replayed). */
  readonly ok: boolean;
}

/** A line of the file: its number (1-based) and the body on it. */
interface FileItem {
  readonly line: number;
  readonly body: BatchItem;
}

/** Reads a JSON Lines file; a path of `-` is stdin. */
export function readLinesFile(path: string): string {
  return readFileSync(path === '-' ? 0 : path, 'utf8');
}

export async function messagesEnqueue(
  client: Pick<PostdateClient, 'enqueueBatch'>,
  options: EnqueueFileOptions,
  out: Output,
): Promise<EnqueueFileReport> {
  const items = parseLines(options.text);
  const mode = options.mode === undefined ? {} : { mode: options.mode };
  // Strict over several batches is judged first, then written in the very batches judged (each
  // judged with one item more), so no write can meet a limit its judgement did not.
  const judged = options.mode === 'strict' && items.length > LIMITS.maxBatchMessages;
  const size = judged ? JUDGED_BATCH_SIZE : LIMITS.maxBatchMessages;
  if (judged) await judgeEveryBatch(client, items, out);
  const counts = { created: 0, replayed: 0, refused: 0, unknown: 0 };
  for (let start = 0; start < items.length; start += size) {
    const batch = items.slice(start, start + size);
    let results: readonly BatchResult[];
    try {
      ({ results } = await client.enqueueBatch({ messages: batch.map((item) => item.body), ...mode }));
    } catch (error) {
      throw stopped(error, items, { offset: start, unanswered: start, sent: batch.length }, out);
    }
    for (const answer of results) {
      const result = inFile(answer, start);
      const line = items[result.index]?.line ?? 0;
      if (result.status === 202) counts.created++;
      else if (result.status === 200) counts.replayed++;
      else if (result.status >= 500) counts.unknown++;
      else counts.refused++;
      out.line(out.json ? JSON.stringify({ line, ...result }) : describeResult(line, result));
    }
    out.progress('enqueued', Math.min(start + batch.length, items.length), items.length);
  }
  if (!out.json) {
    out.warn(
      `${items.length} ${items.length === 1 ? 'line' : 'lines'}: ${counts.created} new, ${counts.replayed} replayed, ${counts.refused} refused` +
        (counts.unknown === 0
          ? ''
          : `, ${counts.unknown} unknown (a 5xx: maybe stored; run the file again, each line replays under its key)`),
    );
  }
  return { sent: items.length, ...counts, ok: counts.refused === 0 && counts.unknown === 0 };
}

/** A judged batch's lines: one place is left for the item no enqueue accepts. */
const JUDGED_BATCH_SIZE = LIMITS.maxBatchMessages - 1;

/**
 * Strict over several batches: before anything is written, every batch (99 lines) is sent in
 * strict mode with one more item that no enqueue accepts (`null`, "must be an object"). By §3a a
 * strict batch with an invalid item stores nothing and answers 400 naming every failing item, so
 * this judges the lines exactly as the write will, attachments and templates included, and changes
 * nothing. If any line is refused, nothing is sent and the error names every refused line of the
 * file. A line can still be refused at its write if something changes in between (a template
 * archived, `not_after` passed, an upload gone): the run then stops as any failed request does.
 */
async function judgeEveryBatch(
  client: Pick<PostdateClient, 'enqueueBatch'>,
  items: readonly FileItem[],
  out: Output,
): Promise<void> {
  const repeated = repeatedKey(items);
  if (repeated !== undefined) {
    throw new UsageError(
      `line ${repeated.line} repeats the idempotency_key of line ${repeated.first}; nothing was sent`,
    );
  }
  const size = JUDGED_BATCH_SIZE;
  const errors: FileFieldError[] = [];
  let refusal: PostdateProblem | undefined;
  for (let start = 0; start < items.length; start += size) {
    const batch = items.slice(start, start + size);
    const never = `/messages/${batch.length}`;
    try {
      await client.enqueueBatch({
        messages: [...batch.map((item) => item.body), NEVER_VALID],
        mode: 'strict',
      });
    } catch (error) {
      const judged = error instanceof PostdateProblemError && error.errors.some((e) => e.field === never);
      if (!judged) throw stopped(error, items, { offset: start, unanswered: 0, sent: 0 }, out);
      refusal ??= problemOf(error);
      errors.push(
        ...rebased(
          error.errors.filter((e) => e.field !== never),
          start,
          items,
        ),
      );
      continue;
    }
    throw new CliError(
      `the API accepted a strict batch holding an invalid item (lines ${batch[0]?.line}–${batch.at(-1)?.line}), against DESIGN §3a: run the file again to see each line's result`,
    );
  }
  if (refusal === undefined || errors.length === 0) return;
  const lines = new Set(errors.map((error) => error.line)).size;
  const detail = `Nothing was enqueued (strict mode): ${lines} of ${items.length} lines ${lines === 1 ? 'is' : 'are'} invalid.`;
  const context = { unanswered_from_line: items[0]?.line ?? 0, maybe_stored_through_line: null };
  out.warn('postdate: nothing was sent');
  throw new ApiProblemError({ ...refusal, detail, errors }, { context });
}

/** The item no enqueue can accept: not an object. */
const NEVER_VALID = null as unknown as BatchItem;

/** The first line whose key an earlier line already has (the API refuses that within one batch). */
function repeatedKey(items: readonly FileItem[]): { line: number; first: number } | undefined {
  const first = new Map<unknown, number>();
  for (const { line, body } of items) {
    const key = (body as { idempotency_key?: unknown }).idempotency_key;
    if (key === undefined) continue;
    const earlier = first.get(key);
    if (earlier !== undefined) return { line, first: earlier };
    first.set(key, line);
  }
  return undefined;
}

/** Where a run stops, as positions in the file's items. */
interface Stop {
  /** The failed request's first item (its pointers count from here). */
  readonly offset: number;
  /** The first item with no result above. */
  readonly unanswered: number;
  /** How many items the failed request would have written (0 while judging). */
  readonly sent: number;
}

/**
 * The run stops at a failed request: the error carries the API's problem, its errors on the file's
 * lines (or the missing answer), and which lines are left unanswered. A refusal (4xx) stores nothing
 * of its request; a 5xx or no answer may have stored some of the `sent` items.
 */
function stopped(error: unknown, items: readonly FileItem[], stop: Stop, out: Output): unknown {
  const refused = error instanceof PostdateProblemError && error.status < 500;
  const from = items[stop.unanswered]?.line ?? 0;
  const through = refused || stop.sent === 0 ? null : (items[stop.offset + stop.sent - 1]?.line ?? null);
  const context = { unanswered_from_line: from, maybe_stored_through_line: through };
  out.warn(
    `postdate: ${stop.unanswered > 0 ? `the lines before line ${from} have their results above; ` : ''}` +
      (through === null
        ? `nothing from line ${from} on was stored`
        : `lines ${from}–${through} may be stored (run the file again: each replays under its key), nothing after them was sent`),
  );
  if (error instanceof PostdateProblemError) {
    const problem = { ...problemOf(error), errors: rebased(error.errors, stop.offset, items) };
    return new ApiProblemError(problem, { cause: error, context });
  }
  // No answer is the stack unreachable; anything else is unexpected, reported as such (`internal`).
  return fromClientError(error, context);
}

/** The problem's own fields, without the client's retry context. */
function problemOf(error: PostdateProblemError): PostdateProblem {
  const { type, title, status, detail, errors, currentStatus } = error;
  return { type, title, status, detail, errors, ...(currentStatus === undefined ? {} : { currentStatus }) };
}

/** A field error of the file: its pointer counts the file's items, and `line` is the line it names. */
type FileFieldError = ProblemFieldError & { readonly line?: number };

/** A batch's `/messages/N/…` pointers as the file's, each with the line it names. */
function rebased(
  errors: readonly ProblemFieldError[],
  start: number,
  items: readonly FileItem[],
): FileFieldError[] {
  return errors.map((error) => {
    const match = /^\/messages\/(\d+)(\/.*)?$/.exec(error.field);
    if (match === null) return error;
    const index = start + Number(match[1]);
    const line = items[index]?.line;
    return {
      field: `/messages/${index}${match[2] ?? ''}`,
      ...(line === undefined ? {} : { line }),
      message: error.message,
    };
  });
}

/** A result of the batch from `start` as the file's: `index` and its problem's pointers. */
function inFile(result: BatchResult, start: number): BatchResult {
  if (start === 0) return result;
  const index = start + result.index;
  const problem = result.problem && {
    ...result.problem,
    ...(result.problem.errors && {
      errors: result.problem.errors.map((error) => ({
        ...error,
        field: error.field.replace(/^\/messages\/(\d+)/, (_, n: string) => `/messages/${start + Number(n)}`),
      })),
    }),
  };
  return { ...result, index, ...(problem && { problem }) };
}

function parseLines(text: string): FileItem[] {
  const items: FileItem[] = [];
  text.split('\n').forEach((raw, index) => {
    if (raw.trim() === '') return;
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch {
      throw new UsageError(`line ${index + 1} is not JSON; nothing was sent`);
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      throw new UsageError(`line ${index + 1} is not a JSON object; nothing was sent`);
    }
    items.push({ line: index + 1, body: value as BatchItem });
  });
  if (items.length === 0) throw new UsageError('the file has no lines to enqueue');
  return items;
}

/** `line 3: 202 <id> scheduled`, or `line 4: 400 /messages/1/to is required`. */
function describeResult(line: number, result: BatchResult): string {
  if (result.message) {
    const word = result.replayed ? 'replayed' : result.message.status;
    return `line ${line}: ${result.status} ${result.message.id} ${word}`;
  }
  const fields = result.problem?.errors?.map((error) => `${error.field} ${error.message}`).join('; ');
  const unknown = result.status >= 500 ? ' (maybe stored: run the file again)' : '';
  return `line ${line}: ${result.status} ${fields || result.problem?.detail || 'refused'}${unknown}`;
}

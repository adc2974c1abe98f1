/**
 * `postdate messages enqueue --file batch.jsonl`: one enqueue body per line, each with its own
 * `idempotency_key`, sent through the HTTP API's batch enqueue (DESIGN §3a) in chunks of 100 with
 * the typed client. Running the same file again is safe: every item replays under its key.
 *
 * One result per line on stdout (with `--json`, one JSON object per line: `{line, index?, status,
 * message?, problem?}`), progress on stderr. Lines are read and parsed before anything is sent, so a
 * malformed file sends nothing.
 */
import { readFileSync } from 'node:fs';
import type { BatchEnqueueRequest, BatchResult, PostdateClient } from '../lambdas/client/index.js';
import { LIMITS } from '../lambdas/core/requestLimits.js';
import { UsageError } from './cliErrors.js';
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
  readonly refused: number;
  /** Every item was stored (new or replayed). */
  readonly ok: boolean;
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
  const counts = { created: 0, replayed: 0, refused: 0 };
  for (let start = 0; start < items.length; start += LIMITS.maxBatchMessages) {
    const chunk = items.slice(start, start + LIMITS.maxBatchMessages);
    const { results } = await client.enqueueBatch({
      messages: chunk.map((item) => item.body),
      ...(options.mode === undefined ? {} : { mode: options.mode }),
    });
    for (const result of results) {
      const line = chunk[result.index]?.line ?? 0;
      if (result.status === 202) counts.created++;
      else if (result.status === 200) counts.replayed++;
      else counts.refused++;
      out.line(out.json ? JSON.stringify({ line, ...result }) : describeResult(line, result));
    }
    out.progress('enqueued', Math.min(start + chunk.length, items.length), items.length);
  }
  if (!out.json) {
    out.warn(
      `${items.length} sent: ${counts.created} new, ${counts.replayed} replayed, ${counts.refused} refused`,
    );
  }
  return { sent: items.length, ...counts, ok: counts.refused === 0 };
}

function parseLines(text: string): { line: number; body: BatchItem }[] {
  const items: { line: number; body: BatchItem }[] = [];
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
  return `line ${line}: ${result.status} ${fields || result.problem?.detail || 'refused'}`;
}

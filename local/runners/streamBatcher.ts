import type { DynamoDBRecord } from 'aws-lambda';

/** How one handler invocation ended. */
export type InvocationOutcome =
  | { readonly kind: 'ok' }
  /** ReportBatchItemFailures: the item identifiers (sequence numbers) the handler reported. */
  | { readonly kind: 'partial'; readonly failedIds: readonly string[] }
  /** The handler threw (or answered an invalid batch response). */
  | { readonly kind: 'error' };

export interface DiscardedBatch {
  readonly records: readonly DynamoDBRecord[];
  /** Invocations of the last failing batch, as Lambda's approximateInvokeCount. */
  readonly invokeCount: number;
}

export interface SettleResult {
  /** The batch given up on after the retries ran out: it goes to the on-failure destination. */
  readonly discarded?: DiscardedBatch;
  /** True when the failure counted against the retry quota: the runner waits a poll interval. */
  readonly backOff: boolean;
}

/**
 * The checkpoint logic of a Lambda stream event source mapping, for one shard, without I/O.
 *
 * - Records wait in shard order; a batch is the first `window` of them (`batchSize`, or less while
 *   bisecting). With a batching window (MaximumBatchingWindowInSeconds), a batch short of
 *   `batchSize` waits until its first record has waited that long; the clock is an argument.
 * - `partial`: the checkpoint moves to the LOWEST reported sequence number; earlier records are
 *   done, that one and every later one are retried.
 * - `error`: with bisect, the batch is split in half (first half next) without using a retry;
 *   a batch of one, or any batch without bisect, uses a retry.
 * - After `maxRetries` retries of the record at the checkpoint (1 + maxRetries invocations), the
 *   whole failing batch is discarded and reported, and processing moves on.
 */
export class StreamBatcher {
  readonly #pending: DynamoDBRecord[] = [];
  /** When each pending record was read (ms), in the same order. */
  readonly #arrivals: number[] = [];
  #window: number;
  /** Failed invocations whose batch started at `#checkpointSeq`. */
  #failures = 0;
  #checkpointSeq: string | undefined;

  constructor(
    private readonly batchSize: number,
    private readonly maxRetries: number,
    private readonly bisectOnError: boolean,
    private readonly batchingWindowMs = 0,
  ) {
    this.#window = batchSize;
  }

  add(records: readonly DynamoDBRecord[], nowMs = 0): void {
    this.#pending.push(...records);
    this.#arrivals.push(...records.map(() => nowMs));
  }

  get pendingCount(): number {
    return this.#pending.length;
  }

  /** The batch to invoke now, or undefined: none pending, or a short batch still inside its window. */
  nextBatch(nowMs = 0): DynamoDBRecord[] | undefined {
    if (this.#pending.length === 0) return undefined;
    const gathering =
      this.#failures === 0 &&
      this.#window === this.batchSize &&
      this.#pending.length < this.batchSize &&
      nowMs - (this.#arrivals[0] ?? nowMs) < this.batchingWindowMs;
    return gathering ? undefined : this.#pending.slice(0, this.#window);
  }

  settle(batch: readonly DynamoDBRecord[], outcome: InvocationOutcome): SettleResult {
    if (outcome.kind === 'ok') {
      this.#advance(batch.length);
      return { backOff: false };
    }
    if (outcome.kind === 'partial') {
      const seqs = batch.map((record) => record.dynamodb?.SequenceNumber);
      const indexes = outcome.failedIds.map((id) => seqs.indexOf(id));
      if (indexes.some((index) => index < 0)) return this.settle(batch, { kind: 'error' });
      const lowest = Math.min(...indexes);
      if (lowest > 0) this.#advance(lowest);
      return this.#countFailure(batch.slice(lowest));
    }
    if (this.bisectOnError && batch.length > 1) {
      this.#window = Math.ceil(batch.length / 2);
      return { backOff: false };
    }
    return this.#countFailure(batch);
  }

  /** One failed invocation of a batch starting at the checkpoint record. */
  #countFailure(failing: readonly DynamoDBRecord[]): SettleResult {
    const seq = failing[0]?.dynamodb?.SequenceNumber;
    if (seq !== this.#checkpointSeq) {
      this.#checkpointSeq = seq;
      this.#failures = 0;
    }
    this.#failures += 1;
    if (this.#failures <= this.maxRetries) return { backOff: true };
    const invokeCount = this.#failures;
    this.#advance(failing.length);
    return { discarded: { records: failing, invokeCount }, backOff: false };
  }

  #advance(count: number): void {
    this.#pending.splice(0, count);
    this.#arrivals.splice(0, count);
    this.#window = this.batchSize;
    this.#failures = 0;
    this.#checkpointSeq = undefined;
  }
}

import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { type DynamoDBDocumentClient, GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import {
  BREAKER_STATE,
  type BreakerState,
  NEVER_OPENED,
  NOT_PAUSED,
  type PauseEntry,
  type PauseState,
  type SendingGateState,
} from '../core/relayBreaker.js';
import { DEFAULT_RELAY } from '../core/relays.js';
import type { SendingGateStore } from '../ports/SendingGate.js';
import { KEY } from './tableLayout.js';

/**
 * The sending gate's item in the outbox table (docs/reliability.md, "Relay outages"): `pk =
 * GATE#sending`, `sk = GATE`, one per table. It carries no index attribute and is no message state
 * record, so the relay's stream filter, the indexes and every message reader pass it by. The breaker
 * (`breaker`, `breaker_version`) is written by the senders, the pauses (`pause`, `pause_version`) by
 * the operator's CLI: two attributes with their own versions, so the two writers never undo each
 * other. Reads are consistent; the senders cache a read for about a second (sender/relayGate.ts).
 */
export const SENDING_GATE_KEY = { [KEY.partition]: 'GATE#sending', [KEY.sort]: 'GATE' } as const;

/**
 * Where a relay's breaker lives (DESIGN §15): the relay `default` (the one `SMTP_*` describes) keeps
 * the gate item it always had, so nothing migrates; every other relay has an item of its own beside
 * it (`sk = RELAY#{name}`) holding only its breaker. The pauses stay on the gate item, for every relay.
 */
export function breakerKeyOf(relay: string): Readonly<Record<string, string>> {
  return relay === DEFAULT_RELAY ? SENDING_GATE_KEY : { ...SENDING_GATE_KEY, [KEY.sort]: `RELAY#${relay}` };
}

type StoredItem = Record<string, unknown> | undefined;

/**
 * The gate item as one sender reads it for all its relays (docs/capacity.md, the gate's load): every
 * relay's gate needs the pauses, which live on this one item, so the relays of one sender share one
 * read of it that is at most `maxAgeMs` old — one read a period however many relays are asked (a
 * failover asks two or more). Only the pauses are taken from a shared read; the default relay's
 * breaker, which lives on the same item, is always read afresh ({@link SendingGateItem.fresh}),
 * because a breaker transition decides on the version it reads. Without sharing (`maxAgeMs` 0: the
 * CLI, the sweeper) every read goes to the table.
 */
export class SendingGateItem {
  private last: { readonly item: StoredItem; readonly readAtMs: number } | undefined;
  private reading: Promise<StoredItem> | undefined;

  constructor(
    private readonly documents: DynamoDBDocumentClient,
    private readonly tableName: string,
    private readonly maxAgeMs = 0,
    private readonly nowMs: () => number = Date.now,
  ) {}

  /** The item read now (consistently); later shared reads may use it. */
  async fresh(): Promise<StoredItem> {
    const readAtMs = this.nowMs();
    const { Item } = await this.documents.send(
      new GetCommand({ TableName: this.tableName, Key: SENDING_GATE_KEY, ConsistentRead: true }),
    );
    if (this.last === undefined || readAtMs >= this.last.readAtMs) this.last = { item: Item, readAtMs };
    return Item;
  }

  /** The item, from a read at most `maxAgeMs` old; reads that find none share one read. */
  recent(): Promise<StoredItem> {
    if (this.maxAgeMs <= 0) return this.fresh();
    if (this.last !== undefined && this.nowMs() - this.last.readAtMs < this.maxAgeMs) {
      return Promise.resolve(this.last.item);
    }
    this.reading ??= this.fresh().finally(() => {
      this.reading = undefined;
    });
    return this.reading;
  }
}

export class DynamoSendingGate implements SendingGateStore {
  private readonly breakerKey: Readonly<Record<string, string>>;
  private readonly gateItem: SendingGateItem;

  /**
   * The gate of `relay` (DESIGN §15): its breaker, and the pauses every relay shares. The relays of
   * one sender pass the same `gateItem`, so they read the pauses once between them.
   */
  constructor(
    private readonly documents: DynamoDBDocumentClient,
    private readonly tableName: string,
    relay: string = DEFAULT_RELAY,
    gateItem?: SendingGateItem,
  ) {
    this.breakerKey = breakerKeyOf(relay);
    this.gateItem = gateItem ?? new SendingGateItem(documents, tableName);
  }

  async read(): Promise<SendingGateState> {
    if (this.breakerKey === SENDING_GATE_KEY) {
      const item = await this.gateItem.fresh();
      return { breaker: breakerOf(item), pause: pauseOf(item), ...disabledOf(item) };
    }
    const [breakerItem, gateItem] = await Promise.all([
      this.documents.send(
        new GetCommand({ TableName: this.tableName, Key: this.breakerKey, ConsistentRead: true }),
      ),
      this.gateItem.recent(),
    ]);
    return {
      breaker: breakerOf(breakerItem.Item),
      pause: pauseOf(gateItem),
      ...disabledOf(breakerItem.Item),
    };
  }

  /**
   * The operator's drain (DESIGN §15, `postdate relays disable|enable`): `disabled` on the relay's
   * breaker item, so the senders read it with the breaker (no extra read). Set or removed without a
   * condition: the attribute is the operator's alone, and setting it twice is setting it once.
   */
  async setDisabled(entry: PauseEntry | undefined): Promise<void> {
    await this.documents.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: this.breakerKey,
        UpdateExpression: entry === undefined ? 'REMOVE #disabled' : 'SET #disabled = :entry',
        ExpressionAttributeNames: { '#disabled': 'disabled' },
        ...(entry === undefined ? {} : { ExpressionAttributeValues: { ':entry': entry } }),
      }),
    );
  }

  writeBreaker(observed: BreakerState, next: BreakerState): Promise<'written' | 'conflict'> {
    const { version, ...stored } = next;
    return this.write(this.breakerKey, 'breaker', observed.version, version, stored);
  }

  writePause(observed: PauseState, next: PauseState): Promise<'written' | 'conflict'> {
    const { version, ...stored } = next;
    return this.write(SENDING_GATE_KEY, 'pause', observed.version, version, stored);
  }

  private async write(
    key: Readonly<Record<string, string>>,
    attribute: 'breaker' | 'pause',
    observedVersion: number,
    nextVersion: number,
    value: object,
  ): Promise<'written' | 'conflict'> {
    try {
      await this.documents.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: key,
          UpdateExpression: 'SET #value = :value, #version = :next',
          // Version 0 is a part never written: its attribute must not exist yet.
          ConditionExpression:
            observedVersion === 0 ? 'attribute_not_exists(#version)' : '#version = :observed',
          ExpressionAttributeNames: { '#value': attribute, '#version': `${attribute}_version` },
          ExpressionAttributeValues: {
            ':value': value,
            ':next': nextVersion,
            ...(observedVersion === 0 ? {} : { ':observed': observedVersion }),
          },
        }),
      );
      return 'written';
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return 'conflict';
      throw error;
    }
  }
}

function breakerOf(item: Record<string, unknown> | undefined): BreakerState {
  const version = item?.breaker_version;
  const stored = item?.breaker;
  if (typeof version !== 'number' || typeof stored !== 'object' || stored === null) return NEVER_OPENED;
  const value = stored as Record<string, unknown>;
  const state = Object.values(BREAKER_STATE).find((name) => name === value.state) ?? BREAKER_STATE.closed;
  const text = (key: string) => (typeof value[key] === 'string' ? { [key]: value[key] as string } : {});
  return {
    state,
    version,
    ...text('opened_at'),
    ...text('reason'),
    ...text('probe_at'),
    ...text('probe_owner'),
    ...text('probe_until'),
    ...text('token'),
    ...text('closed_at'),
    ...(typeof value.failed_probes === 'number' ? { failed_probes: value.failed_probes } : {}),
    ...(typeof value.rate_factor === 'number' ? { rate_factor: value.rate_factor } : {}),
    ...text('throttled_at'),
    ...text('throttled_until'),
  };
}

function disabledOf(item: Record<string, unknown> | undefined): { readonly disabled?: PauseEntry } {
  const entry = entryOf(item?.disabled);
  return entry === undefined ? {} : { disabled: entry };
}

function pauseOf(item: Record<string, unknown> | undefined): PauseState {
  const version = item?.pause_version;
  const stored = item?.pause;
  if (typeof version !== 'number' || typeof stored !== 'object' || stored === null) return NOT_PAUSED;
  const value = stored as Record<string, unknown>;
  const kinds: Record<string, PauseEntry> = {};
  if (typeof value.kinds === 'object' && value.kinds !== null) {
    for (const [kind, entry] of Object.entries(value.kinds as Record<string, unknown>)) {
      const parsed = entryOf(entry);
      if (parsed !== undefined) kinds[kind] = parsed;
    }
  }
  const all = entryOf(value.all);
  const except = (value.all as { except?: unknown } | undefined)?.except;
  return {
    version,
    kinds,
    ...(all === undefined
      ? {}
      : {
          all: {
            ...all,
            except: Array.isArray(except) ? except.filter((kind) => typeof kind === 'string') : [],
          },
        }),
  };
}

function entryOf(value: unknown): PauseEntry | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const { reason, at } = value as Record<string, unknown>;
  return typeof reason === 'string' && typeof at === 'string' ? { reason, at } : undefined;
}

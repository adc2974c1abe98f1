import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import {
  type DynamoDBDocumentClient,
  GetCommand,
  QueryCommand,
  type QueryCommandOutput,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
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
 * other. Reads are consistent; a sender reads every item under the key in one Query a second at most
 * ({@link SendingGateItems}), shared by its relays' gates (sender/relayGate.ts caches it).
 */
export const SENDING_GATE_KEY = { [KEY.partition]: 'GATE#sending', [KEY.sort]: 'GATE' } as const;

/** The sort key of a relay's own breaker item is this and its name. */
const RELAY_SORT_PREFIX = 'RELAY#';

/**
 * Where a relay's breaker lives (DESIGN §15): the relay `default` (the one `SMTP_*` describes) keeps
 * the gate item it always had, so nothing migrates; every other relay has an item of its own beside
 * it (`sk = RELAY#{name}`) holding only its breaker. The pauses stay on the gate item, for every relay.
 */
export function breakerKeyOf(relay: string): Readonly<Record<string, string>> {
  return relay === DEFAULT_RELAY
    ? SENDING_GATE_KEY
    : { ...SENDING_GATE_KEY, [KEY.sort]: `${RELAY_SORT_PREFIX}${relay}` };
}

/** Every relay's gate, in the order asked, and the relays with an item of their own, as one read found them. */
export interface RelayGatesRead {
  readonly gates: readonly SendingGateState[];
  /** The operator's pauses (on the gate item, shared by every relay; in each gate too). */
  readonly pause: PauseState;
  /** The relays (other than `default`) that have a breaker item under the key, configured or not. */
  readonly stored: readonly string[];
}

/**
 * The gates of `relays` from one consistent Query of the key (decision 0142), and the names of every
 * relay that has an item there: what the operator's CLI decides with, so it can tell when the table
 * knows a relay its own list leaves out.
 */
export async function readRelayGates(
  documents: DynamoDBDocumentClient,
  tableName: string,
  relays: readonly string[],
): Promise<RelayGatesRead> {
  const { items } = await new SendingGateItems(documents, tableName).fresh();
  return {
    gates: relays.map((relay) => gateStateOf(items, breakerKeyOf(relay))),
    pause: pauseOf(items.get(SENDING_GATE_KEY[KEY.sort])),
    stored: [...items.keys()].flatMap((sortKey) =>
      sortKey.startsWith(RELAY_SORT_PREFIX) ? [sortKey.slice(RELAY_SORT_PREFIX.length)] : [],
    ),
  };
}

type StoredItem = Record<string, unknown> | undefined;

/** The items under `GATE#sending` as one read found them, by sort key, and how old that read is. */
export interface GateItemsRead {
  readonly items: ReadonlyMap<string, Record<string, unknown>>;
  readonly ageMs: number;
}

/**
 * Every item under `GATE#sending` — the gate item (the pauses, the relay `default`'s breaker) and
 * each other relay's breaker item — as one sender reads them for all its relays (DESIGN §4, no hot
 * partitions; docs/capacity.md, the gate's load): one consistent `Query` on the key answers them
 * all, a unit while they stay under 4 KB together. The relays' gates of one sender share a read at
 * most `maxAgeMs` old ({@link SendingGateItems.recent}), so the key takes one read a period however
 * many relays are asked (a failover asks two or more) and whatever their names. A transition reads
 * afresh ({@link SendingGateItems.fresh}): it decides on the version it reads.
 */
export class SendingGateItems {
  private last: StampedItems | undefined;
  private reading: Promise<StampedItems> | undefined;

  constructor(
    private readonly documents: DynamoDBDocumentClient,
    private readonly tableName: string,
    private readonly nowMs: () => number = Date.now,
  ) {}

  /** The items read now (consistently); later shared reads may use them. */
  async fresh(): Promise<GateItemsRead> {
    return this.aged(await this.query());
  }

  /** The items from a read at most `maxAgeMs` old; reads that find none share one read. */
  async recent(maxAgeMs: number): Promise<GateItemsRead> {
    if (this.last !== undefined && this.nowMs() - this.last.readAtMs < maxAgeMs) return this.aged(this.last);
    this.reading ??= this.query().finally(() => {
      this.reading = undefined;
    });
    return this.aged(await this.reading);
  }

  private async query(): Promise<StampedItems> {
    const readAtMs = this.nowMs();
    const items = new Map<string, Record<string, unknown>>();
    let from: Record<string, unknown> | undefined;
    do {
      const page: QueryCommandOutput = await this.documents.send(
        new QueryCommand({
          TableName: this.tableName,
          KeyConditionExpression: '#pk = :pk',
          ExpressionAttributeNames: { '#pk': KEY.partition },
          ExpressionAttributeValues: { ':pk': SENDING_GATE_KEY[KEY.partition] },
          ConsistentRead: true,
          ...(from === undefined ? {} : { ExclusiveStartKey: from }),
        }),
      );
      for (const item of page.Items ?? []) items.set(String(item[KEY.sort]), item);
      from = page.LastEvaluatedKey;
    } while (from !== undefined);
    const read = { items, readAtMs };
    if (this.last === undefined || readAtMs >= this.last.readAtMs) this.last = read;
    return read;
  }

  private aged({ items, readAtMs }: StampedItems): GateItemsRead {
    return { items, ageMs: Math.max(0, this.nowMs() - readAtMs) };
  }
}

interface StampedItems {
  readonly items: ReadonlyMap<string, Record<string, unknown>>;
  /** When the read started (`nowMs`): what it found is at least that recent. */
  readonly readAtMs: number;
}

export class DynamoSendingGate implements SendingGateStore {
  private readonly breakerKey: Readonly<Record<string, string>>;

  /**
   * The gate of `relay` (DESIGN §15): its breaker, and the pauses every relay shares. The relays of
   * one sender pass the same `items`, so they read the key once between them (one Query); without
   * it (the CLI, the sweeper) a read gets the gate's one or two items.
   */
  constructor(
    private readonly documents: DynamoDBDocumentClient,
    private readonly tableName: string,
    relay: string = DEFAULT_RELAY,
    private readonly items?: SendingGateItems,
  ) {
    this.breakerKey = breakerKeyOf(relay);
  }

  async read(): Promise<SendingGateState> {
    if (this.items !== undefined) return this.stateOf((await this.items.fresh()).items);
    const keys =
      this.breakerKey === SENDING_GATE_KEY ? [SENDING_GATE_KEY] : [SENDING_GATE_KEY, this.breakerKey];
    const found = await Promise.all(
      keys.map((Key) =>
        this.documents.send(new GetCommand({ TableName: this.tableName, Key, ConsistentRead: true })),
      ),
    );
    const items = new Map<string, Record<string, unknown>>();
    for (const { Item } of found) if (Item !== undefined) items.set(String(Item[KEY.sort]), Item);
    return this.stateOf(items);
  }

  async readRecent(maxAgeMs: number): Promise<{ readonly gate: SendingGateState; readonly ageMs: number }> {
    if (this.items === undefined || maxAgeMs <= 0) return { gate: await this.read(), ageMs: 0 };
    const { items, ageMs } = await this.items.recent(maxAgeMs);
    return { gate: this.stateOf(items), ageMs };
  }

  private stateOf(items: ReadonlyMap<string, Record<string, unknown>>): SendingGateState {
    return gateStateOf(items, this.breakerKey);
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

/** One relay's gate from the items under the key: its breaker and drain, and the pauses every relay shares. */
function gateStateOf(
  items: ReadonlyMap<string, Record<string, unknown>>,
  breakerKey: Readonly<Record<string, string>>,
): SendingGateState {
  const breakerItem: StoredItem = items.get(breakerKey[KEY.sort] ?? '');
  return {
    breaker: breakerOf(breakerItem),
    pause: pauseOf(items.get(SENDING_GATE_KEY[KEY.sort])),
    ...disabledOf(breakerItem),
  };
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
    ...text('quota_until'),
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

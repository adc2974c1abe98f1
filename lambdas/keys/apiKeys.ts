/**
 * Per-tenant API keys (DESIGN §3, §6). A key is `pd_` + 43 base64url characters (32 random bytes);
 * only its SHA-256 is stored: `pk = APIKEY#{sha256 hex}`, `sk = APIKEY`, with key_id, tenant,
 * created_at and revoked_at. The secret is shown once, by createApiKey, and never again.
 *
 * A test key (DESIGN §14) is `pd_test_` + 43 characters and its item says `test: true`: the
 * authorizer hands out the tenant's test side (core/testSide.ts) for it, never the tenant itself.
 *
 * Listing without a table scan: every key item also carries `tnt_pk = "apikeys"` and
 * `tnt_sk = {created_at}#{key_id}`, so all keys sit in one partition of the by_tenant index. No
 * tenant can collide with it: a message's `tnt_pk` is always `{tenant}#{shard}` (tenants never
 * contain `#`), and the name `apikeys` is refused as a tenant anyway, for clarity.
 */
import { createHash, randomBytes } from 'node:crypto';
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import {
  type DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { PostdateError } from '../core/postdateError.js';
import { TENANT_PATTERN } from '../core/requestLimits.js';
import { TEST_KEY_PREFIX } from '../core/testSide.js';
import { batchGetItems } from '../store/batchGetItems.js';
import { INDEX, ITEM_SORT_KEY, KEY, PARTITION_PREFIX } from '../store/tableLayout.js';

/** The reserved by_tenant partition holding every API key. */
export const API_KEYS_PARTITION = 'apikeys';

/** `pd_` and 8–200 URL-safe characters (generated keys have 43). */
export const API_KEY_PATTERN = /^pd_[A-Za-z0-9_-]{8,200}$/;

export interface ApiKeySummary {
  readonly keyId: string;
  readonly tenant: string;
  readonly createdAt: string;
  readonly revokedAt: string | null;
  /** A test key: it acts for the tenant's test side (DESIGN §14). */
  readonly test: boolean;
}

/** The stored item. */
export interface ApiKeyRecord {
  readonly pk: string;
  readonly sk: typeof ITEM_SORT_KEY.apiKey;
  readonly key_id: string;
  readonly tenant: string;
  readonly created_at: string;
  readonly revoked_at: string | null;
  /** Written only for a test key; a live key's item has none (keys made before test mode). */
  readonly test?: true;
  readonly tnt_pk: typeof API_KEYS_PARTITION;
  readonly tnt_sk: string;
}

export class ApiKeyError extends PostdateError {
  override readonly name = 'ApiKeyError';
  constructor(
    message: string,
    readonly reason: 'invalid-tenant' | 'invalid-secret' | 'secret-in-use' | 'not-found',
  ) {
    super(message, { class: 'permanent' });
  }
}

/** SHA-256 hex of a secret: the only form in which a key is stored or looked up. */
export function apiKeyHash(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

export function apiKeyPk(secret: string): string {
  return `${PARTITION_PREFIX.apiKey}${apiKeyHash(secret)}`;
}

export function isValidTenant(tenant: string): boolean {
  return TENANT_PATTERN.test(tenant) && tenant !== API_KEYS_PARTITION;
}

/**
 * Creates a key for a tenant and returns its secret (show it once). With `secret` (the local stack's
 * POSTDATE_API_KEY) the key is that secret; creating it again for the same tenant is a no-op that
 * returns the existing key id, so a restart on a kept database works. With `test` it is a test key
 * (`pd_test_…`); a given secret must then start with `pd_test_`, and a live key's must not.
 */
export async function createApiKey(
  documents: DynamoDBDocumentClient,
  tableName: string,
  options: { tenant: string; secret?: string | undefined; test?: boolean | undefined; now: Date },
): Promise<{ keyId: string; secret: string }> {
  if (!isValidTenant(options.tenant)) {
    throw new ApiKeyError(
      `tenant "${options.tenant}" must be 1–64 of a-z, 0-9, _ and -, starting with a letter or digit, and not "${API_KEYS_PARTITION}"`,
      'invalid-tenant',
    );
  }
  if (options.secret !== undefined && !API_KEY_PATTERN.test(options.secret)) {
    throw new ApiKeyError(
      'an API key must be "pd_" followed by 8–200 of A-Z, a-z, 0-9, _ and -',
      'invalid-secret',
    );
  }
  const test = options.test === true;
  if (options.secret !== undefined && options.secret.startsWith(TEST_KEY_PREFIX) !== test) {
    throw new ApiKeyError(
      test
        ? `a test key must start with "${TEST_KEY_PREFIX}"`
        : `only a test key starts with "${TEST_KEY_PREFIX}"`,
      'invalid-secret',
    );
  }
  const secret =
    options.secret ?? `${test ? TEST_KEY_PREFIX : 'pd_'}${randomBytes(32).toString('base64url')}`;
  const keyId = `key_${randomBytes(8).toString('hex')}`;
  const createdAt = options.now.toISOString();
  const record: ApiKeyRecord = {
    pk: apiKeyPk(secret),
    sk: ITEM_SORT_KEY.apiKey,
    key_id: keyId,
    tenant: options.tenant,
    created_at: createdAt,
    revoked_at: null,
    ...(test ? { test: true as const } : {}),
    tnt_pk: API_KEYS_PARTITION,
    tnt_sk: `${createdAt}#${keyId}`,
  };
  try {
    await documents.send(
      new PutCommand({
        TableName: tableName,
        Item: { ...record },
        ConditionExpression: `attribute_not_exists(${KEY.partition})`,
      }),
    );
    return { keyId, secret };
  } catch (error) {
    if (!(error instanceof ConditionalCheckFailedException)) throw error;
    const existing = await readKey(documents, tableName, record.pk);
    if (
      existing &&
      existing.tenant === options.tenant &&
      (existing.test === true) === test &&
      existing.revoked_at === null
    ) {
      return { keyId: existing.key_id, secret };
    }
    throw new ApiKeyError('this secret is already a key of another tenant, or revoked', 'secret-in-use');
  }
}

/** Every key (without secrets), newest first. */
export async function listApiKeys(
  documents: DynamoDBDocumentClient,
  tableName: string,
): Promise<ApiKeySummary[]> {
  const pks = (await apiKeyIndexEntries(documents, tableName)).map((entry) => entry.pk);
  const items = await batchGetItems(
    documents,
    tableName,
    pks.map((pk) => ({ [KEY.partition]: pk, [KEY.sort]: ITEM_SORT_KEY.apiKey })),
  );
  const records = new Map<string, ApiKeyRecord>();
  for (const item of items) if (isApiKeyRecord(item)) records.set(item.pk, item);
  return pks
    .map((pk) => records.get(pk))
    .filter((record): record is ApiKeyRecord => record !== undefined)
    .map(summary);
}

/**
 * Revokes a key by its id. Idempotent: revoking a revoked key answers it unchanged. Takes effect
 * at once in the table; API Gateway stops accepting it within its authorizer cache TTL (30 s by
 * default), the authorizer at its next call (it never caches an allowance).
 */
export async function revokeApiKey(
  documents: DynamoDBDocumentClient,
  tableName: string,
  keyId: string,
  now: Date = new Date(),
): Promise<ApiKeySummary> {
  const pk = await findKeyPk(documents, tableName, keyId);
  if (pk === null) throw new ApiKeyError(`no API key ${keyId}`, 'not-found');
  try {
    const { Attributes } = await documents.send(
      new UpdateCommand({
        TableName: tableName,
        Key: { [KEY.partition]: pk, [KEY.sort]: ITEM_SORT_KEY.apiKey },
        UpdateExpression: 'SET #revoked = :now',
        ConditionExpression: `attribute_exists(${KEY.partition}) AND (attribute_not_exists(#revoked) OR #revoked = :null)`,
        ExpressionAttributeNames: { '#revoked': 'revoked_at' },
        ExpressionAttributeValues: { ':now': now.toISOString(), ':null': null },
        ReturnValues: 'ALL_NEW',
      }),
    );
    if (!isApiKeyRecord(Attributes)) throw new Error('the revoked key record is unreadable');
    return summary(Attributes);
  } catch (error) {
    if (!(error instanceof ConditionalCheckFailedException)) throw error;
    const existing = await readKey(documents, tableName, pk);
    if (!existing) throw new ApiKeyError(`no API key ${keyId}`, 'not-found');
    return summary(existing);
  }
}

/** The key for a secret, as the authorizer looks it up (null when unknown). Strongly consistent. */
export async function lookupApiKey(
  documents: DynamoDBDocumentClient,
  tableName: string,
  secret: string,
): Promise<ApiKeySummary | null> {
  const record = await readKey(documents, tableName, apiKeyPk(secret));
  return record ? summary(record) : null;
}

async function readKey(
  documents: DynamoDBDocumentClient,
  tableName: string,
  pk: string,
): Promise<ApiKeyRecord | null> {
  const { Item } = await documents.send(
    new GetCommand({
      TableName: tableName,
      Key: { [KEY.partition]: pk, [KEY.sort]: ITEM_SORT_KEY.apiKey },
      ConsistentRead: true,
    }),
  );
  return isApiKeyRecord(Item) ? Item : null;
}

async function findKeyPk(
  documents: DynamoDBDocumentClient,
  tableName: string,
  keyId: string,
): Promise<string | null> {
  const entries = await apiKeyIndexEntries(documents, tableName);
  return entries.find((entry) => entry.sortKey.endsWith(`#${keyId}`))?.pk ?? null;
}

/** The entries of the reserved `apikeys` partition of by_tenant (keys only), newest first. */
async function apiKeyIndexEntries(
  documents: DynamoDBDocumentClient,
  tableName: string,
): Promise<{ pk: string; sortKey: string }[]> {
  const index = INDEX.byTenant;
  const entries: { pk: string; sortKey: string }[] = [];
  let startKey: Record<string, unknown> | undefined;
  do {
    const page = await documents.send(
      new QueryCommand({
        TableName: tableName,
        IndexName: index.indexName,
        KeyConditionExpression: '#pk = :pk',
        ExpressionAttributeNames: { '#pk': index.partitionKey },
        ExpressionAttributeValues: { ':pk': API_KEYS_PARTITION },
        ScanIndexForward: false,
        ExclusiveStartKey: startKey,
      }),
    );
    for (const item of page.Items ?? []) {
      const pk = item[KEY.partition];
      const sortKey = item[index.sortKey];
      if (typeof pk === 'string' && typeof sortKey === 'string') entries.push({ pk, sortKey });
    }
    startKey = page.LastEvaluatedKey;
  } while (startKey);
  return entries;
}

function isApiKeyRecord(value: unknown): value is ApiKeyRecord {
  if (typeof value !== 'object' || value === null) return false;
  const item = value as Record<string, unknown>;
  return (
    typeof item[KEY.partition] === 'string' &&
    typeof item.key_id === 'string' &&
    typeof item.tenant === 'string' &&
    typeof item.created_at === 'string'
  );
}

function summary(record: ApiKeyRecord): ApiKeySummary {
  return {
    keyId: record.key_id,
    tenant: record.tenant,
    createdAt: record.created_at,
    revokedAt: typeof record.revoked_at === 'string' ? record.revoked_at : null,
    test: record.test === true,
  };
}

/**
 * `postdate keys create | list | revoke`: per-tenant API keys, through lambdas/keys/apiKeys.ts (the
 * same code the authorizer and the local stack use). Only a key's SHA-256 is stored, so the secret
 * is printed once, by `create`, and can never be shown again. `create --test` makes a test key
 * (DESIGN §14): it acts for the tenant's test side, whose messages never reach the relay.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { testSideOf } from '../lambdas/core/testSide.js';
import {
  ApiKeyError,
  type ApiKeySummary,
  createApiKey,
  listApiKeys,
  revokeApiKey,
} from '../lambdas/keys/apiKeys.js';
import { CliError, NotFoundError, UsageError } from './cliErrors.js';
import { type Output, paint, printFields, printTable } from './output.js';

export interface KeysDeps {
  readonly documents: DynamoDBDocumentClient;
  readonly tableName: string;
  readonly now: () => Date;
}

export interface CreatedKey {
  readonly keyId: string;
  readonly tenant: string;
  readonly test: boolean;
  /** The only time the secret exists outside the caller's hands. */
  readonly secret: string;
}

export async function keysCreate(
  deps: KeysDeps,
  options: { tenant: string; test?: boolean | undefined },
  out: Output,
): Promise<CreatedKey> {
  const test = options.test === true;
  const created = await translate(() =>
    createApiKey(deps.documents, deps.tableName, { tenant: options.tenant, test, now: deps.now() }),
  );
  const report: CreatedKey = { keyId: created.keyId, tenant: options.tenant, test, secret: created.secret };
  if (out.json) {
    out.data(report);
  } else {
    printFields(out, [
      ['key id', report.keyId],
      ['tenant', report.tenant],
      ['mode', report.test ? 'test (never sent to the relay)' : 'live'],
      ['secret', paint(out, 'bold', report.secret)],
    ]);
    out.warn(paint(out, 'yellow', 'store the secret now: only its hash is kept, it cannot be shown again'));
  }
  return report;
}

export interface KeyListReport {
  readonly keys: readonly ApiKeySummary[];
}

export async function keysList(
  deps: KeysDeps,
  options: { tenant?: string },
  out: Output,
): Promise<KeyListReport> {
  const all = await listApiKeys(deps.documents, deps.tableName);
  const keys = options.tenant === undefined ? all : all.filter((key) => key.tenant === options.tenant);
  const report: KeyListReport = { keys };
  if (out.json) {
    out.data(report);
  } else {
    printTable(
      out,
      [
        { header: 'KEY ID', value: (key: ApiKeySummary) => key.keyId },
        { header: 'TENANT', value: (key) => key.tenant },
        { header: 'MODE', value: (key) => (key.test ? 'test' : 'live') },
        { header: 'CREATED', value: (key) => key.createdAt },
        {
          header: 'REVOKED',
          value: (key) => key.revokedAt ?? 'active',
          tone: (key) => (key.revokedAt ? 'red' : 'green'),
        },
      ],
      keys,
      'no API keys',
    );
  }
  return report;
}

/** A revoked key, and whether it was revoked already (`was_revoked`: this run changed nothing). */
export interface RevokeReport extends ApiKeySummary {
  readonly wasRevoked: boolean;
}

/**
 * Revokes a key; revoking it again is no error (exit 0, so a script may retry) and says when it
 * was revoked, in words and as `was_revoked` (as `sending pause` says `was_paused`, decision 0260).
 * The authorizer reads the key on every call: only API Gateway's cache of its answers (the
 * construct's `authorizerCacheTtl`) may accept it a while longer.
 */
export async function keysRevoke(deps: KeysDeps, keyId: string, out: Output): Promise<RevokeReport> {
  const at = deps.now();
  const key = await translate(() => revokeApiKey(deps.documents, deps.tableName, keyId, at));
  // revokeApiKey keeps a revoked key's first time: any other time is an earlier run's.
  const revoked: RevokeReport = { ...key, wasRevoked: key.revokedAt !== at.toISOString() };
  if (out.json) {
    out.data(revoked);
  } else if (revoked.wasRevoked) {
    out.line(
      `${revoked.keyId} (tenant ${revoked.tenant}) was already revoked at ${revoked.revokedAt ?? '?'}`,
    );
  } else {
    out.line(`revoked ${revoked.keyId} (tenant ${revoked.tenant}) at ${revoked.revokedAt}`);
    out.warn('API Gateway may accept it for its authorizer cache TTL (30 s by default) more, no longer');
  }
  return revoked;
}

/**
 * The distinct tenant ids that have (or had) a key, a test key's test side included (`acme.test`):
 * where `messages list` and `reconcile` look.
 */
export async function knownTenants(deps: Pick<KeysDeps, 'documents' | 'tableName'>): Promise<string[]> {
  const keys = await listApiKeys(deps.documents, deps.tableName);
  return [...new Set(keys.map((key) => (key.test ? testSideOf(key.tenant) : key.tenant)))].sort();
}

async function translate<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (!(error instanceof ApiKeyError)) throw error;
    if (error.reason === 'invalid-tenant' || error.reason === 'invalid-secret')
      throw new UsageError(error.message);
    if (error.reason === 'not-found')
      throw new NotFoundError(error.message, 'postdate keys list', { cause: error });
    throw new CliError(error.message, undefined, { cause: error });
  }
}

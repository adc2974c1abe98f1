/**
 * The HTTP API's Lambda authorizer (payload format 2.0, simple responses): `Authorization: Bearer
 * pd_…` → `{ isAuthorized, context: { tenant, key_id } }`. The key is looked up by its SHA-256 only.
 * A test key's `tenant` is its tenant's test side (`acme.test`, core/testSide.ts): every function
 * downstream keys its records by that id, so a test key sees only test data and a live key none.
 *
 * An allowance is never cached here: every call that may allow reads the key (consistently), so a
 * revoked key stops working within API Gateway's own authorizer cache TTL (the construct's
 * `authorizerCacheTtl`, 30 s by default; 0: at once) and no later. A cache here as well would add
 * its TTL to that one: a spelling of the header API Gateway had not cached (`bearer`, two spaces)
 * reached an instance that still trusted the key and was cached anew (decision 0249). Denials
 * (unknown or revoked keys: a revocation is final) are cached for `cacheTtlMs`, keyed by the hash,
 * so a flood of bad keys is not a flood of reads.
 */
import type {
  APIGatewayRequestAuthorizerEventV2,
  APIGatewaySimpleAuthorizerWithContextResult,
} from 'aws-lambda';
import type { AuthorizerContext } from '../core/authorizerContext.js';
import { testSideOf } from '../core/testSide.js';
import { API_KEY_PATTERN, type ApiKeySummary, apiKeyHash } from '../keys/apiKeys.js';
import type { Log } from '../ports/Log.js';

export type AuthorizerResult = APIGatewaySimpleAuthorizerWithContextResult<{
  -readonly [field in keyof AuthorizerContext]: AuthorizerContext[field];
}>;

export interface AuthorizerDependencies {
  /** Finds a key by its secret (the adapter hashes it); null when unknown. */
  readonly lookup: (secret: string) => Promise<ApiKeySummary | null>;
  readonly now: () => Date;
  readonly logger: Log;
  /** How long a denial (an unknown or revoked key) is trusted; default 30 s. An allowance never is. */
  readonly cacheTtlMs?: number;
  /** Most entries kept; the oldest go first. Default 10,000. */
  readonly cacheSize?: number;
}

const DENY: AuthorizerResult = { isAuthorized: false, context: { tenant: '', key_id: '' } };

export function createAuthorizerHandler(
  deps: AuthorizerDependencies,
): (event: APIGatewayRequestAuthorizerEventV2) => Promise<AuthorizerResult> {
  const ttl = deps.cacheTtlMs ?? 30_000;
  const maxEntries = deps.cacheSize ?? 10_000;
  const denials = new Map<string, { until: number; key: ApiKeySummary | null }>();

  async function findKey(secret: string): Promise<ApiKeySummary | null> {
    const hash = apiKeyHash(secret);
    const now = deps.now().getTime();
    const cached = denials.get(hash);
    if (cached && cached.until > now) return cached.key;
    const key = await deps.lookup(secret);
    denials.delete(hash);
    if (key === null || key.revokedAt !== null) remember(hash, { until: now + ttl, key });
    return key;
  }

  function remember(hash: string, denial: { until: number; key: ApiKeySummary | null }): void {
    denials.set(hash, denial);
    while (denials.size > maxEntries) {
      const oldest = denials.keys().next().value;
      if (oldest === undefined) break;
      denials.delete(oldest);
    }
  }

  return async function authorize(event: APIGatewayRequestAuthorizerEventV2): Promise<AuthorizerResult> {
    const secret = bearerToken(event);
    if (secret === null) {
      deps.logger.info('denied', { reason: 'no bearer key' });
      return DENY;
    }
    const key = await findKey(secret);
    if (key === null || key.revokedAt !== null) {
      deps.logger.info('denied', {
        reason: key === null ? 'unknown key' : 'revoked key',
        key_id: key?.keyId,
      });
      return DENY;
    }
    const tenant = key.test ? testSideOf(key.tenant) : key.tenant;
    return { isAuthorized: true, context: { tenant, key_id: key.keyId } };
  };
}

/** The `pd_…` token of `Authorization: Bearer pd_…`, or null. */
export function bearerToken(
  event: Pick<APIGatewayRequestAuthorizerEventV2, 'headers' | 'identitySource'>,
): string | null {
  let header: string | undefined;
  for (const [name, value] of Object.entries(event.headers ?? {})) {
    if (name.toLowerCase() === 'authorization') header = value;
  }
  header ??= event.identitySource?.[0];
  if (header === undefined) return null;
  const match = /^Bearer[ ]+(\S+)[ ]*$/i.exec(header);
  const token = match?.[1];
  return token !== undefined && API_KEY_PATTERN.test(token) ? token : null;
}

import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { DynamoDBClient, ScanCommand } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { Command } from 'commander';
import { loadConfig } from '../lambdas/core/config.js';
import { createApiKey } from '../lambdas/keys/apiKeys.js';
import { ANY_FREE_PORTS } from '../local/localEnv.js';
import { startLocalStack } from '../local/localStack.js';
import { type Auth, type HostileRequest, hostileRequests } from './hostileRequests.js';
import { type RawResponse, rawHttp } from './rawHttp.js';

/**
 * The hostile-input run: many invalid requests against the local API over real HTTP. Every answer
 * must be a 4xx — `application/problem+json` from the api function, or API Gateway's own
 * `{"message"}` for 401/403 (authorizer), 404 (no route) and 413 (over 10 MB) — never a 5xx, and
 * the table must hold no new item and the own tenant's message must be exactly as before.
 */

export interface HostileOptions {
  readonly apiUrl: string;
  readonly apiKey: string;
  readonly dynamodbEndpoint: string;
  readonly tableName: string;
  readonly count: number;
  readonly seed: number;
  readonly concurrency?: number;
}

export interface HostileFailure {
  readonly attack: string;
  readonly method: string;
  readonly path: string;
  readonly status: number | null;
  readonly reason: string;
  readonly body: string;
}

export interface HostileReport {
  readonly ok: boolean;
  readonly requests: number;
  readonly seed: number;
  readonly byStatus: Readonly<Record<string, number>>;
  readonly byAttack: Readonly<Record<string, number>>;
  readonly serverErrors: number;
  readonly newItems: readonly string[];
  readonly ownMessageUntouched: boolean;
  readonly failures: readonly HostileFailure[];
}

/** API Gateway's own answers (not the function's): they carry `{"message": …}`, not problem+json. */
const GATEWAY_STATUSES: ReadonlySet<number> = new Set([401, 403, 404, 413]);

/** Why an answer breaks the rules, or null when it is a proper refusal. */
export function judgeAnswer(response: RawResponse): string | null {
  if (response.status >= 500) return `server error ${response.status}`;
  if (response.status < 400) return `accepted with ${response.status}: a hostile request must be refused`;
  if (/\n\s+at .+:\d+:\d+/.test(response.body)) return 'the answer shows a stack trace';
  // Node's HTTP parser refuses bytes no HTTP/1.1 header may hold (e.g. \x01) with a bare 400 before
  // any route runs; API Gateway's front door does the same. Nothing reached the functions.
  if (response.status === 400 && response.body === '') return null;
  const type = response.headers['content-type'] ?? '';
  let parsed: unknown;
  try {
    parsed = JSON.parse(response.body);
  } catch {
    return `the ${response.status} answer is not JSON`;
  }
  if (typeof parsed !== 'object' || parsed === null) return 'the answer is not a JSON object';
  const fields = parsed as Record<string, unknown>;
  if (type.startsWith('application/problem+json')) {
    if (fields.status !== response.status)
      return `problem.status ${String(fields.status)} ≠ HTTP ${response.status}`;
    if (typeof fields.type !== 'string' || typeof fields.title !== 'string')
      return 'problem+json without type and title';
    return null;
  }
  if (GATEWAY_STATUSES.has(response.status) && typeof fields.message === 'string') return null;
  return `a ${response.status} that is neither problem+json nor an API Gateway answer (${type || 'no content type'})`;
}

function authorization(auth: Auth, keys: { own: string; other: string }): [string, string][] {
  switch (auth) {
    case 'own':
      return [['Authorization', `Bearer ${keys.own}`]];
    case 'other-tenant':
      return [['Authorization', `Bearer ${keys.other}`]];
    case 'forged':
      return [['Authorization', `Bearer pd_${'f'.repeat(43)}`]];
    case 'empty':
      return [['Authorization', '']];
    case 'basic':
      return [['Authorization', `Basic ${Buffer.from(`local:${keys.own}`).toString('base64')}`]];
    case 'none':
    case 'raw':
      return [];
  }
}

/** Every pk#sk of the table. */
async function tableKeys(dynamodb: DynamoDBClient, tableName: string): Promise<Set<string>> {
  const keys = new Set<string>();
  let start: Record<string, import('@aws-sdk/client-dynamodb').AttributeValue> | undefined;
  do {
    const page = await dynamodb.send(
      new ScanCommand({
        TableName: tableName,
        ProjectionExpression: 'pk, sk',
        ExclusiveStartKey: start,
        ConsistentRead: true,
      }),
    );
    for (const item of page.Items ?? []) keys.add(`${item.pk?.S ?? '?'}#${item.sk?.S ?? '?'}`);
    start = page.LastEvaluatedKey;
  } while (start);
  return keys;
}

async function getJson(apiUrl: string, path: string, key: string): Promise<Record<string, unknown>> {
  const response = await fetch(`${apiUrl}${path}`, { headers: { authorization: `Bearer ${key}` } });
  return (await response.json()) as Record<string, unknown>;
}

export async function runHostile(options: HostileOptions): Promise<HostileReport> {
  const dynamodb = new DynamoDBClient({
    region: 'us-east-1',
    endpoint: options.dynamodbEndpoint,
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  try {
    const other = await createApiKey(DynamoDBDocumentClient.from(dynamodb), options.tableName, {
      tenant: 'hostile-other',
      now: new Date(),
    });
    // The own tenant's message that the attacks aim at: far in the future, it stays scheduled.
    const created = await fetch(`${options.apiUrl}/v1/messages`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${options.apiKey}`,
        'content-type': 'application/json',
        'idempotency-key': `hostile-target-${options.seed}-${Date.now()}`,
      },
      body: JSON.stringify({
        to: ['target@example.com'],
        subject: 'the target',
        text: 'must stay untouched',
        send_at: new Date(Date.now() + 86_400_000).toISOString(),
      }),
    });
    if (created.status !== 202) throw new Error(`could not enqueue the target message: ${created.status}`);
    const target = (await created.json()) as { id: string };
    const before = await getJson(options.apiUrl, `/v1/messages/${target.id}`, options.apiKey);
    const keysBefore = await tableKeys(dynamodb, options.tableName);

    const requests = hostileRequests(options.count, options.seed, { ownMessageId: target.id });
    const keys = { own: options.apiKey, other: other.secret };
    const failures: HostileFailure[] = [];
    const byStatus: Record<string, number> = {};
    const byAttack: Record<string, number> = {};
    let next = 0;
    const worker = async () => {
      for (;;) {
        const request: HostileRequest | undefined = requests[next];
        next += 1;
        if (!request) return;
        const family = request.attack.split(':')[0] ?? request.attack;
        byAttack[family] = (byAttack[family] ?? 0) + 1;
        try {
          const response = await rawHttp(options.apiUrl, {
            method: request.method,
            path: request.path,
            headers: [...authorization(request.auth, keys), ...request.headers],
            body: request.body,
          });
          byStatus[response.status] = (byStatus[response.status] ?? 0) + 1;
          const reason = judgeAnswer(response);
          if (reason)
            failures.push({
              attack: request.attack,
              method: request.method,
              path: request.path.slice(0, 120),
              status: response.status,
              reason,
              body: response.body.slice(0, 300),
            });
        } catch (error) {
          byStatus.none = (byStatus.none ?? 0) + 1;
          failures.push({
            attack: request.attack,
            method: request.method,
            path: request.path.slice(0, 120),
            status: null,
            reason: `no answer: ${error instanceof Error ? error.message : String(error)}`,
            body: '',
          });
        }
      }
    };
    await Promise.all(Array.from({ length: options.concurrency ?? 4 }, worker));

    const keysAfter = await tableKeys(dynamodb, options.tableName);
    const newItems = [...keysAfter].filter((key) => !keysBefore.has(key));
    const after = await getJson(options.apiUrl, `/v1/messages/${target.id}`, options.apiKey);
    const ownMessageUntouched = JSON.stringify(before) === JSON.stringify(after);
    const serverErrors = Object.entries(byStatus)
      .filter(([status]) => Number(status) >= 500)
      .reduce((sum, [, count]) => sum + count, 0);
    return {
      ok: failures.length === 0 && newItems.length === 0 && ownMessageUntouched,
      requests: requests.length,
      seed: options.seed,
      byStatus,
      byAttack,
      serverErrors,
      newItems,
      ownMessageUntouched,
      failures,
    };
  } finally {
    dynamodb.destroy();
  }
}

export function formatHostileReport(report: HostileReport): string {
  const statuses = Object.entries(report.byStatus)
    .map(([status, count]) => `${status} ${count}`)
    .join(', ');
  const lines = [
    `Postdate hostile-input run: ${report.ok ? 'PASS' : 'FAIL'} (seed ${report.seed})`,
    `  requests ${report.requests}   5xx ${report.serverErrors}   new table items ${report.newItems.length}   target message untouched ${report.ownMessageUntouched ? 'yes' : 'NO'}`,
    `  answers: ${statuses}`,
    `  attacks: ${Object.entries(report.byAttack)
      .map(([attack, count]) => `${attack} ${count}`)
      .join(', ')}`,
  ];
  for (const failure of report.failures.slice(0, 8)) {
    lines.push(
      `  ✗ ${failure.attack} ${failure.method} ${failure.path.slice(0, 60)} → ${failure.status}: ${failure.reason}`,
    );
  }
  if (report.failures.length > 8) lines.push(`  … ${report.failures.length - 8} more in the JSON report`);
  return lines.join('\n');
}

async function main(argv: readonly string[]): Promise<number> {
  const program = new Command('hostile')
    .option('--requests <n>', 'how many requests (at least the hand-made ones)', '600')
    .option('--seed <n>', 'fast-check seed', String(Date.now() % 1_000_000))
    .option(
      '--out <file>',
      'JSON report',
      join(dirname(fileURLToPath(import.meta.url)), 'reports', 'hostile.json'),
    )
    .parse(['node', 'hostile', ...argv]);
  const opts = program.opts<{ requests: string; seed: string; out: string }>();
  const config = loadConfig({ ...process.env, POSTDATE_API_KEY: 'pd_hostile-run-key-0001' }, 'local');
  const stack = await startLocalStack({
    config,
    ports: ANY_FREE_PORTS,
    quiet: true,
  });
  try {
    const report = await runHostile({
      apiUrl: stack.apiUrl,
      apiKey: stack.apiKey,
      dynamodbEndpoint: stack.dynamodbEndpoint,
      tableName: stack.tableName,
      count: Number(opts.requests),
      seed: Number(opts.seed),
    });
    console.log(formatHostileReport(report));
    mkdirSync(dirname(opts.out), { recursive: true });
    writeFileSync(opts.out, `${JSON.stringify(report, null, 2)}\n`);
    console.log(`  report: ${opts.out}`);
    return report.ok ? 0 : 1;
  } finally {
    await stack.stop();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  process.exitCode = await main(process.argv.slice(2));
}

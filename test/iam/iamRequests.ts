import { readFileSync } from 'node:fs';
import type { RecordedAwsRequest } from '../../lambdas/adapters/awsClients.js';
import { INDEX, KEY } from '../../lambdas/store/tableLayout.js';
import { arnOf } from './templatePolicies.js';

/**
 * What IAM evaluates for one recorded AWS request: the action, the resource ARN in the test account
 * and the condition keys Postdate's policies use. One SDK call can be several IAM requests: each
 * item of a DynamoDB transaction is authorized as its own action, and CreateSchedule passes a role.
 */
export interface IamRequest {
  readonly function: string;
  readonly action: string;
  readonly resource: string;
  readonly context: Readonly<Record<string, string | string[]>>;
}

type Json = Record<string, unknown>;
type AttributeMap = Record<string, { S?: string }>;

export function readRecordedRequests(file: string): RecordedAwsRequest[] {
  let text = '';
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return [];
  }
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as RecordedAwsRequest);
}

/** The IAM requests one recorded wire request stands for. */
export function iamRequestsOf(recorded: RecordedAwsRequest): IamRequest[] {
  const s3 = s3Requests(recorded);
  if (s3) return s3;
  const body = recorded.body ? (JSON.parse(recorded.body) as Json) : {};
  const at = (action: string, resource: string, context: IamRequest['context'] = {}): IamRequest => ({
    function: recorded.function,
    action,
    resource,
    context,
  });
  const [prefix, operation] = (recorded.target ?? '').split('.');
  if (prefix?.startsWith('DynamoDB_')) return dynamodbRequests(operation ?? '', body, at);
  if (prefix === 'AmazonSQS') {
    const action = operation === 'SendMessageBatch' ? 'SendMessage' : operation?.replace(/Batch$/, '');
    return [at(`sqs:${action}`, arnOf.queue(queueNameOf(String(body.QueueUrl))))];
  }
  if (prefix === 'AWSEvents' && operation === 'PutEvents') {
    // One request per bus, its entries' sources and detail-types as the (multi-valued) condition keys.
    const entries = body.Entries as Json[];
    const buses = new Set(entries.map((entry) => String(entry.EventBusName ?? 'default')));
    return [...buses].map((bus) => {
      const mine = entries.filter((entry) => String(entry.EventBusName ?? 'default') === bus);
      return at('events:PutEvents', bus.startsWith('arn:') ? bus : arnOf.eventBus(bus), {
        'events:source': [...new Set(mine.map((entry) => String(entry.Source)))],
        'events:detail-type': [...new Set(mine.map((entry) => String(entry.DetailType)))],
      });
    });
  }
  if (prefix === 'secretsmanager') {
    return [at(`secretsmanager:${operation}`, String(body.SecretId))];
  }
  const schedule = /^\/schedules\/([^/]+)$/.exec(recorded.path);
  if (schedule) {
    const name = decodeURIComponent(schedule[1] ?? '');
    const group = String(body.GroupName ?? recorded.query.groupName ?? 'default');
    const resource = arnOf.schedule(group, name);
    if (recorded.method === 'DELETE') return [at('scheduler:DeleteSchedule', resource)];
    if (recorded.method === 'GET') return [at('scheduler:GetSchedule', resource)];
    const target = body.Target as Json | undefined;
    return [
      at('scheduler:CreateSchedule', resource),
      // Naming a role for the target passes it: IAM checks iam:PassRole on the caller.
      ...(target?.RoleArn
        ? [
            at('iam:PassRole', String(target.RoleArn), {
              'iam:PassedToService': 'scheduler.amazonaws.com',
            }),
          ]
        : []),
    ];
  }
  throw new Error(
    `a recorded request this test cannot read: ${recorded.method} ${recorded.path} ${recorded.target}`,
  );
}

function dynamodbRequests(
  operation: string,
  body: Json,
  at: (action: string, resource: string, context?: IamRequest['context']) => IamRequest,
): IamRequest[] {
  const leading = (keys: readonly string[]) => ({ 'dynamodb:LeadingKeys': [...new Set(keys)] });
  const table = (name: unknown) => arnOf.table(String(name));
  const pkOf = (item: unknown) => String((item as AttributeMap)[KEY.partition]?.S);
  switch (operation) {
    case 'GetItem':
    case 'UpdateItem':
    case 'DeleteItem':
      return [at(`dynamodb:${operation}`, table(body.TableName), leading([pkOf(body.Key)]))];
    case 'PutItem':
      return [at('dynamodb:PutItem', table(body.TableName), leading([pkOf(body.Item)]))];
    case 'Query':
      return [queryRequest(body, at)];
    case 'Scan':
      return [
        at(
          'dynamodb:Scan',
          body.IndexName ? `${table(body.TableName)}/index/${body.IndexName}` : table(body.TableName),
        ),
      ];
    case 'BatchGetItem':
    case 'BatchWriteItem':
      return Object.entries(body.RequestItems as Json).map(([name, request]) => {
        const keys =
          operation === 'BatchGetItem'
            ? ((request as Json).Keys as unknown[]).map(pkOf)
            : (request as Json[]).map((write) =>
                pkOf((write.PutRequest as Json | undefined)?.Item ?? (write.DeleteRequest as Json).Key),
              );
        return at(`dynamodb:${operation}`, table(name), leading(keys));
      });
    case 'TransactWriteItems':
    case 'TransactGetItems':
      return (body.TransactItems as Json[]).map((transactItem) => {
        const [kind, item] = Object.entries(transactItem)[0] as [string, Json];
        const action = {
          Put: 'PutItem',
          Update: 'UpdateItem',
          Delete: 'DeleteItem',
          ConditionCheck: 'ConditionCheckItem',
          Get: 'GetItem',
        }[kind];
        return at(`dynamodb:${action}`, table(item.TableName), leading([pkOf(item.Key ?? item.Item)]));
      });
    default:
      throw new Error(`a DynamoDB operation this test cannot read: ${operation}`);
  }
}

/**
 * A query's leading key is the value its key condition gives the partition key: the table's, or on
 * an index, the index's (which is what dynamodb:LeadingKeys holds for an index query).
 */
function queryRequest(
  body: Json,
  at: (action: string, resource: string, context?: IamRequest['context']) => IamRequest,
): IamRequest {
  const indexName = body.IndexName as string | undefined;
  const partitionKey = indexName
    ? Object.values(INDEX).find((index) => index.indexName === indexName)?.partitionKey
    : KEY.partition;
  const names = (body.ExpressionAttributeNames ?? {}) as Record<string, string>;
  const values = (body.ExpressionAttributeValues ?? {}) as AttributeMap;
  let leadingKey: string | undefined;
  for (const [, left, right] of String(body.KeyConditionExpression).matchAll(/([#\w]+)\s*=\s*(:\w+)/g)) {
    const attribute = left?.startsWith('#') ? names[left] : left;
    if (attribute === partitionKey) leadingKey = values[right ?? '']?.S;
  }
  if (leadingKey === undefined) throw new Error(`no partition key in ${String(body.KeyConditionExpression)}`);
  const table = arnOf.table(String(body.TableName));
  return at('dynamodb:Query', indexName ? `${table}/index/${indexName}` : table, {
    'dynamodb:LeadingKeys': [leadingKey],
  });
}

/**
 * An S3 object request, path-style (`/{bucket}/{key}`) as the functions send it to the emulator:
 * the SDK names most operations in `x-id`; HeadObject has none (IAM reads it as s3:GetObject), and
 * PutObjectTagging is `?tagging`. A CopyObject is two IAM requests: PutObject on the copy and
 * GetObject on its source (`x-amz-copy-source`). A PutObject or CopyObject that sets the object's
 * tags (`x-amz-tagging`) is also s3:PutObjectTagging on it. Its body is the object's bytes, not JSON.
 * An answer 404 (no such key) is one S3 gives only a caller that may also s3:ListBucket on the
 * bucket; without it a missing key is 403 AccessDenied (the GetObject and HeadObject references), so
 * such a request stands for s3:ListBucket as well.
 */
function s3Requests(recorded: RecordedAwsRequest): IamRequest[] | undefined {
  const operation =
    recorded.method === 'HEAD'
      ? 'HeadObject'
      : 'tagging' in recorded.query
        ? 'PutObjectTagging'
        : recorded.query['x-id'];
  if (typeof operation !== 'string') return undefined;
  const action = (
    {
      GetObject: 's3:GetObject',
      HeadObject: 's3:GetObject',
      PutObject: 's3:PutObject',
      CopyObject: 's3:PutObject',
      PutObjectTagging: 's3:PutObjectTagging',
    } as Record<string, string>
  )[operation];
  if (action === undefined) throw new Error(`an S3 operation this test cannot read: ${operation}`);
  const bucketOf = (path: string): string => arnOf.bucket(path.replace(/^\//, '').split('/')[0] ?? '');
  const object = (path: string): string => {
    const [, ...key] = path.replace(/^\//, '').split('/');
    return `${bucketOf(path)}/${key.map(decodeURIComponent).join('/')}`;
  };
  const at = (act: string, resource: string): IamRequest => ({
    function: recorded.function,
    action: act,
    resource,
    context: {},
  });
  const requests = [at(action, object(recorded.path))];
  if (operation === 'CopyObject' && recorded.copySource)
    requests.push(at('s3:GetObject', object(recorded.copySource)));
  if (recorded.tagging === true) requests.push(at('s3:PutObjectTagging', object(recorded.path)));
  if (recorded.status === 404) requests.push(at('s3:ListBucket', bucketOf(recorded.path)));
  return requests;
}

function queueNameOf(queueUrl: string): string {
  return queueUrl.split('/').pop() ?? queueUrl;
}

import { runSimulation } from '@cloud-copilot/iam-simulate';
import type { Template } from 'aws-cdk-lib/assertions';

/**
 * Each function's identity policy as IAM would hold it once deployed: the statements of the
 * synthesized template with every CloudFormation intrinsic resolved to a concrete ARN, built from
 * the physical names the test gave its resources, in a fixed test account and region.
 */

export const TEST_ACCOUNT = '123456789012';
export const TEST_REGION = 'us-east-1';

export interface PolicyStatement {
  readonly Sid?: string;
  readonly Effect: 'Allow' | 'Deny';
  readonly Action: string[];
  readonly Resource: string[];
  readonly Condition?: Record<string, Record<string, string | string[]>>;
}

type TemplateResources = Record<string, { Type: string; Properties?: Record<string, unknown> }>;

/** ARNs and names of AWS resources in the test account, the way AWS spells them. */
export const arnOf = {
  table: (name: string) => `arn:aws:dynamodb:${TEST_REGION}:${TEST_ACCOUNT}:table/${name}`,
  queue: (name: string) => `arn:aws:sqs:${TEST_REGION}:${TEST_ACCOUNT}:${name}`,
  queueUrl: (name: string) => `https://sqs.${TEST_REGION}.amazonaws.com/${TEST_ACCOUNT}/${name}`,
  role: (name: string) => `arn:aws:iam::${TEST_ACCOUNT}:role/${name}`,
  eventBus: (name: string) => `arn:aws:events:${TEST_REGION}:${TEST_ACCOUNT}:event-bus/${name}`,
  schedule: (group: string, name: string) =>
    `arn:aws:scheduler:${TEST_REGION}:${TEST_ACCOUNT}:schedule/${group}/${name}`,
  secret: (name: string) => `arn:aws:secretsmanager:${TEST_REGION}:${TEST_ACCOUNT}:secret:${name}`,
  bucket: (name: string) => `arn:aws:s3:::${name}`,
};

/**
 * Resolves `Ref`, `Fn::GetAtt`, `Fn::Join` and the pseudo parameters of a template value. A logical
 * id found in `names` takes that physical name (the test's table, queues, bus); any other takes its
 * logical id as its name.
 */
export function templateResolver(template: Template, names: Readonly<Record<string, string>>) {
  const resources = template.toJSON().Resources as TemplateResources;
  const pseudo: Record<string, string> = {
    'AWS::Region': TEST_REGION,
    'AWS::AccountId': TEST_ACCOUNT,
    'AWS::Partition': 'aws',
    'AWS::URLSuffix': 'amazonaws.com',
  };
  const nameOf = (id: string): string => {
    const given = names[id];
    if (given !== undefined) return given;
    const declared = resources[id]?.Properties?.Name;
    return typeof declared === 'string' ? declared : id;
  };
  const attribute = (id: string, attr: string): string => {
    const type = resources[id]?.Type;
    const name = nameOf(id);
    switch (`${type}.${attr}`) {
      case 'AWS::DynamoDB::Table.Arn':
        return arnOf.table(name);
      case 'AWS::DynamoDB::Table.StreamArn':
        return `${arnOf.table(name)}/stream/2026-12-01T00:00:00.000`;
      case 'AWS::SQS::Queue.Arn':
        return arnOf.queue(name);
      case 'AWS::SQS::Queue.QueueUrl':
        return arnOf.queueUrl(name);
      case 'AWS::SQS::Queue.QueueName':
        return name;
      case 'AWS::IAM::Role.Arn':
        return arnOf.role(name);
      case 'AWS::Events::EventBus.Arn':
        return arnOf.eventBus(name);
      case 'AWS::S3::Bucket.Arn':
        return arnOf.bucket(name);
      case 'AWS::Events::EventBus.Name':
        return name;
      case 'AWS::Scheduler::ScheduleGroup.Arn':
        return `arn:aws:scheduler:${TEST_REGION}:${TEST_ACCOUNT}:schedule-group/${name}`;
      default:
        return `arn:aws:unresolved:${TEST_REGION}:${TEST_ACCOUNT}:${id}.${attr}`;
    }
  };
  const reference = (id: string): string => {
    const pseudoValue = pseudo[id];
    if (pseudoValue !== undefined) return pseudoValue;
    switch (resources[id]?.Type) {
      case 'AWS::SQS::Queue':
        return arnOf.queueUrl(nameOf(id));
      case 'AWS::SecretsManager::Secret':
        return arnOf.secret(`${nameOf(id)}-AbCdEf`);
      case 'AWS::SNS::Topic':
        return `arn:aws:sns:${TEST_REGION}:${TEST_ACCOUNT}:${nameOf(id)}`;
      case 'AWS::KMS::Key':
        return `${TEST_ACCOUNT}-key-${id}`;
      default:
        return nameOf(id);
    }
  };
  const resolve = (value: unknown): unknown => {
    if (typeof value === 'string') return value;
    if (Array.isArray(value)) return value.map(resolve);
    if (value === null || typeof value !== 'object') return value;
    const object = value as Record<string, unknown>;
    if ('Ref' in object) return reference(String(object.Ref));
    if ('Fn::GetAtt' in object) {
      const [id, attr] = object['Fn::GetAtt'] as [string, string];
      return attribute(id, attr);
    }
    if ('Fn::Join' in object) {
      const [separator, parts] = object['Fn::Join'] as [string, unknown[]];
      return parts.map((part) => String(resolve(part))).join(separator);
    }
    return Object.fromEntries(Object.entries(object).map(([key, inner]) => [key, resolve(inner)]));
  };
  return { resolve, nameOf };
}

/** Every statement of the inline policies attached to a role, resolved. */
export function roleStatements(
  template: Template,
  roleLogicalId: string,
  resolve: (value: unknown) => unknown,
): PolicyStatement[] {
  const policies = template.findResources('AWS::IAM::Policy');
  const attached = Object.values(policies).filter((policy) =>
    (policy.Properties.Roles as unknown[]).some((role) => (role as { Ref?: string }).Ref === roleLogicalId),
  );
  return attached.flatMap((policy) =>
    (policy.Properties.PolicyDocument.Statement as Record<string, unknown>[]).map((raw) => {
      const statement = resolve(raw) as Record<string, unknown>;
      return {
        ...statement,
        Action: toArray(statement.Action as string | string[]),
        Resource: toArray(statement.Resource as string | string[]),
      } as PolicyStatement;
    }),
  );
}

/** One request IAM evaluates: the action, the resource ARN and the condition keys the policies use. */
export interface SimulatedRequest {
  readonly action: string;
  readonly resource: string;
  readonly context: Readonly<Record<string, string | string[]>>;
}

/**
 * IAM's answer to `request` made with a role of the template: `Allowed`, `ImplicitlyDenied`,
 * `ExplicitlyDenied` (the simulator's words), or `error …` when it could not evaluate. A
 * `resourcePolicy` is the resource's own (a KMS key is used only as its key policy lets IAM).
 */
export async function simulate(
  template: Template,
  roleLogicalId: string,
  request: SimulatedRequest,
  resolve: (value: unknown) => unknown,
  resourcePolicy?: unknown,
): Promise<string> {
  const statements = cachedStatements(template, roleLogicalId, resolve);
  return simulateStatements(roleLogicalId, statements, request, resourcePolicy);
}

/**
 * IAM's answer to `request` under the statements given alone (one role's statement of a Sid: is it
 * that statement that grants the request?), in the same terms as {@link simulate}.
 */
export async function simulateStatements(
  roleLogicalId: string,
  statements: readonly PolicyStatement[],
  request: SimulatedRequest,
  resourcePolicy?: unknown,
): Promise<string> {
  const result = await runSimulation(
    {
      request: {
        principal: arnOf.role(roleLogicalId),
        action: request.action,
        resource: { resource: request.resource, accountId: TEST_ACCOUNT },
        contextVariables: { ...request.context },
      },
      identityPolicies: [
        { name: roleLogicalId, policy: { Version: '2012-10-17', Statement: [...statements] } },
      ],
      serviceControlPolicies: [],
      resourceControlPolicies: [],
      ...(resourcePolicy === undefined ? {} : { resourcePolicy }),
    },
    {},
  );
  if (result.resultType === 'error') return `error ${JSON.stringify(result.errors)}`;
  return result.overallResult;
}

/** A role's statements, read from the template once per resolver (a suite simulates hundreds of requests). */
const statementCache = new WeakMap<object, Map<string, PolicyStatement[]>>();

function cachedStatements(
  template: Template,
  roleLogicalId: string,
  resolve: (value: unknown) => unknown,
): PolicyStatement[] {
  const byRole = statementCache.get(resolve) ?? new Map<string, PolicyStatement[]>();
  statementCache.set(resolve, byRole);
  const statements = byRole.get(roleLogicalId) ?? roleStatements(template, roleLogicalId, resolve);
  byRole.set(roleLogicalId, statements);
  return statements;
}

function toArray<T>(value: T | T[]): T[] {
  return Array.isArray(value) ? value : [value];
}

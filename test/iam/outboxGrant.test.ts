import { GetCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as iam from 'aws-cdk-lib/aws-iam';
import { beforeAll, describe, expect, it } from 'vitest';
import type { RecordedAwsRequest } from '../../lambdas/adapters/awsClients.js';
import {
  buildOutboxTransactItems,
  readGroupHeadVersion,
  readOutboxTemplate,
} from '../../lambdas/outbox/index.js';
import { DynamoTemplateStore } from '../../lambdas/store/templateStore.js';
import { Postdate } from '../../lib/Postdate.js';
import { logicalIdOf, testApp } from '../cdk/support/synthesize.js';
import { documentClient, freshTable } from '../support/awsLocal.js';
import { type IamRequest, iamRequestsOf } from './iamRequests.js';
import { arnOf, simulate, TEST_ACCOUNT, TEST_REGION, templateResolver } from './templatePolicies.js';

/**
 * The outbox path from a CDK user's side (DESIGN §4, §6): the user's own service writes Postdate's
 * items in its own transaction (`postdate/outbox`) and reads a group's head and a template first.
 * `postdate.grantOutbox(role)` must allow every request the helpers make — recorded from the real
 * helpers against DynamoDB Local, each transaction item an IAM request of its own — and nothing an
 * enqueue never needs: no API-key item, no delete, no read of another message, no query.
 */

const TENANT = 'acme';
const VALIDATION = { allowedFrom: ['*@example.com'], defaultFrom: 'ops@example.com', maxHorizonDays: 30 };

/** A document client that notes each command it sends, as the wire request IAM would see. */
function recordingClient(recorded: RecordedAwsRequest[]) {
  const documents = documentClient();
  const send = documents.send.bind(documents) as (command: unknown) => Promise<unknown>;
  const wire = (operation: string, body: unknown): RecordedAwsRequest => ({
    function: 'orders',
    hostname: `dynamodb.${TEST_REGION}.amazonaws.com`,
    method: 'POST',
    path: '/',
    query: {},
    target: `DynamoDB_20120810.${operation}`,
    body: JSON.stringify(body),
  });
  const marshalled = (item: Record<string, unknown>) => {
    const [kind, value] = Object.entries(item)[0] as [string, Record<string, unknown>];
    return {
      [kind]: {
        ...value,
        ...(value.Key ? { Key: marshall(value.Key) } : {}),
        ...(value.Item ? { Item: marshall(value.Item, { removeUndefinedValues: true }) } : {}),
      },
    };
  };
  documents.send = ((command: unknown) => {
    if (command instanceof GetCommand) {
      recorded.push(wire('GetItem', { ...command.input, Key: marshall(command.input.Key ?? {}) }));
    } else if (command instanceof TransactWriteCommand) {
      const items = (command.input.TransactItems ?? []) as Record<string, unknown>[];
      recorded.push(wire('TransactWriteItems', { TransactItems: items.map(marshalled) }));
    } else {
      throw new Error(`the outbox helpers sent a command this test does not read: ${String(command)}`);
    }
    return send(command);
  }) as typeof documents.send;
  return documents;
}

describe('postdate.grantOutbox(role): the outbox path as a user service calls it', () => {
  let tableName: string;
  const recorded: RecordedAwsRequest[] = [];
  let decide: (request: IamRequest) => Promise<string>;

  beforeAll(async () => {
    ({ tableName } = await freshTable('outbox-grant'));
    await new DynamoTemplateStore(documentClient(), tableName).putVersion({
      tenant: TENANT,
      name: 'welcome',
      content: { subject: 'Hi {{name}}', text: 'Hello {{name}}.', html: null },
      description: null,
      now: new Date(),
    });

    // What a user's service does: read the head and the template, then one transaction each.
    const documents = recordingClient(recorded);
    const now = new Date();
    const write = async (idempotencyKey: string, body: Record<string, unknown>, extra = {}) => {
      const items = buildOutboxTransactItems({
        tableName,
        tenant: TENANT,
        idempotencyKey,
        now,
        body,
        validation: VALIDATION,
        ...extra,
      });
      await documents.send(new TransactWriteCommand({ TransactItems: items }));
    };
    const mail = { to: ['ada@example.com'], subject: 'Hi', text: 'Hello.' };
    await write('plain', mail);
    const head = await readGroupHeadVersion(documents, tableName, TENANT, 'orders-7');
    await write('raise', { ...mail, group: { key: 'orders-7', version: 3 } }, { groupHeadVersion: head });
    await write('below', { ...mail, group: { key: 'orders-7', version: 1 } }, { groupHeadVersion: 3 });
    const template = await readOutboxTemplate(documents, tableName, TENANT, 'welcome');
    await write(
      'templated',
      { to: ['ada@example.com'], template: { name: 'welcome' }, data: { name: 'Ada' } },
      {
        template,
      },
    );

    const stack = new Stack(testApp(), 'Orders', { env: { account: TEST_ACCOUNT, region: TEST_REGION } });
    const postdate = new Postdate(stack, 'Mail', {
      defaultFrom: 'ops@example.com',
      allowedFrom: ['*@example.com'],
    });
    const role = new iam.Role(stack, 'OrderService', {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
    });
    postdate.grantOutbox(role);
    const template_ = Template.fromStack(stack);
    const { resolve } = templateResolver(template_, { [logicalIdOf(postdate.table)]: tableName });
    decide = (request) => simulate(template_, logicalIdOf(role), request, resolve);
  });

  it("allows every request the helpers made: the reads, each transaction's puts, raise and check", async () => {
    const requests = recorded.flatMap(iamRequestsOf);
    const actions = new Set(requests.map((request) => request.action));
    expect([...actions].sort()).toEqual([
      'dynamodb:ConditionCheckItem',
      'dynamodb:GetItem',
      'dynamodb:PutItem',
      'dynamodb:UpdateItem',
    ]);
    const refused: string[] = [];
    for (const request of requests) {
      const answer = await decide(request);
      if (answer !== 'Allowed')
        refused.push(`${request.action} ${JSON.stringify(request.context)}: ${answer}`);
    }
    expect(refused).toEqual([]);
  });

  it('allows nothing an enqueue never does: API keys, deletes, reading a message, queries, another table', async () => {
    const leading = (pk: string) => ({ 'dynamodb:LeadingKeys': [pk] });
    const table = arnOf.table(tableName);
    const never: IamRequest[] = [
      { function: 'orders', action: 'dynamodb:PutItem', resource: table, context: leading('APIKEY#pd_x') },
      { function: 'orders', action: 'dynamodb:UpdateItem', resource: table, context: leading('APIKEY#pd_x') },
      { function: 'orders', action: 'dynamodb:GetItem', resource: table, context: leading('APIKEY#pd_x') },
      { function: 'orders', action: 'dynamodb:DeleteItem', resource: table, context: leading('MSG#x') },
      { function: 'orders', action: 'dynamodb:GetItem', resource: table, context: leading('MSG#x') },
      { function: 'orders', action: 'dynamodb:PutItem', resource: table, context: leading('SUPP#acme#0') },
      { function: 'orders', action: 'dynamodb:Query', resource: `${table}/index/by-tenant`, context: {} },
      { function: 'orders', action: 'dynamodb:Scan', resource: table, context: {} },
      {
        function: 'orders',
        action: 'dynamodb:PutItem',
        resource: arnOf.table('someone-else'),
        context: leading('MSG#x'),
      },
    ];
    const allowed: string[] = [];
    for (const request of never) {
      if ((await decide(request)) === 'Allowed')
        allowed.push(`${request.action} ${JSON.stringify(request.context)}`);
    }
    expect(allowed).toEqual([]);
  });
});

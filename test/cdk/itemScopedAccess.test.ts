import type { Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { PARTITION_PREFIX } from '../../lambdas/store/tableLayout.js';
import type { PostdateStack } from '../../lib/PostdateStack.js';
import {
  logicalIdOf,
  type Resource,
  type Statement,
  statementsOfRole,
  synthesizePostdate,
} from './support/synthesize.js';

const API_KEY_ITEMS = `${PARTITION_PREFIX.apiKey}*`;
const WRITES = ['dynamodb:BatchWriteItem', 'dynamodb:DeleteItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem'];

let template: Template;
let stack: PostdateStack;

beforeAll(() => {
  ({ template, stack } = synthesizePostdate());
});

const statementsOf = (name: 'api' | 'authorizer' | 'sender'): Statement[] => {
  const fn = template.toJSON().Resources[logicalIdOf(stack.postdate.functions[name])] as Resource;
  const role = (fn.Properties.Role as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0];
  return statementsOfRole(template, role);
};
const tableArn = () => ({ 'Fn::GetAtt': [logicalIdOf(stack.postdate.table), 'Arn'] });

describe('IAM scoped by item (dynamodb:LeadingKeys)', () => {
  it('lets the authorizer read only API-key items of the base table', () => {
    const dynamo = statementsOf('authorizer').filter((s) => s.Action.some((a) => a.startsWith('dynamodb:')));
    expect(dynamo).toEqual([
      expect.objectContaining({
        Effect: 'Allow',
        Action: ['dynamodb:GetItem'],
        Resource: [tableArn()],
        Condition: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': [API_KEY_ITEMS] } },
      }),
    ]);
  });

  for (const name of ['api', 'sender'] as const) {
    it(`denies the ${name} function every write to an API-key item`, () => {
      const deny = statementsOf(name).filter((s) => s.Effect === 'Deny');
      expect(deny).toEqual([
        expect.objectContaining({
          Action: expect.arrayContaining(WRITES),
          Resource: [tableArn()],
          Condition: { 'ForAnyValue:StringLike': { 'dynamodb:LeadingKeys': [API_KEY_ITEMS] } },
        }),
      ]);
    });
  }

  it('gives the sender table-only item actions: no index ARN, no stream, no scan', () => {
    const dynamo = statementsOf('sender').filter(
      (s) => s.Effect === 'Allow' && s.Action.some((a) => a.startsWith('dynamodb:')),
    );
    expect(new Set(dynamo.flatMap((s) => s.Resource).map((r) => JSON.stringify(r)))).toEqual(
      new Set([JSON.stringify(tableArn())]),
    );
    const actions = dynamo.flatMap((s) => s.Action);
    // What a send reads and writes (test/iam/ proves it against the calls the sender makes).
    expect(new Set(actions)).toEqual(
      new Set(['dynamodb:GetItem', 'dynamodb:BatchGetItem', 'dynamodb:UpdateItem', 'dynamodb:Query']),
    );
    expect(actions.filter((a) => /Scan|GetRecords|GetShardIterator|DescribeStream/.test(a))).toEqual([]);
  });

  it("lets the sender query only the sending gate's key, on the base table (DESIGN §4: one read for its items)", () => {
    const queries = statementsOf('sender').filter(
      (s) => s.Effect === 'Allow' && s.Action.includes('dynamodb:Query'),
    );
    expect(queries).toEqual([
      expect.objectContaining({
        Action: ['dynamodb:Query'],
        Resource: [tableArn()],
        Condition: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['GATE#sending'] } },
      }),
    ]);
  });

  it('acknowledges no index wildcard for the sender', () => {
    const sender = stack.postdate.functions.sender.role;
    const acknowledged = (sender?.node.findAll() ?? [])
      .flatMap((construct) => construct.node.metadata)
      .filter((entry) => JSON.stringify(entry.data).includes('/index/*'));
    expect(acknowledged).toEqual([]);
  });
});

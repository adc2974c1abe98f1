import { RemovalPolicy, Stack } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import type { IConstruct } from 'constructs';
import { Construct } from 'constructs';
import { INDEX, KEY, PARTITION_PREFIX, TTL_ATTRIBUTE } from '../../lambdas/store/tableLayout.js';
import { acknowledge } from './acknowledge.js';

/** The partition keys of API-key items, as an IAM `StringLike` pattern. */
const API_KEY_ITEMS = `${PARTITION_PREFIX.apiKey}*`;
const MESSAGE_ITEMS = `${PARTITION_PREFIX.message}*`;

/**
 * The item kinds of the shared table as `dynamodb:LeadingKeys` patterns: a function's grant names
 * the kinds it reads or writes, and no other (DESIGN §6). API-key items are never among them (only
 * the authorizer reads those, with its own grant). The webhook, gate and cursors keys are the store's
 * (lambdas/store/webhookStore.ts, sendingGate.ts, sweepCursors.ts), which lib/ may not import;
 * test/iam/ holds them equal.
 */
export const ITEMS = {
  message: MESSAGE_ITEMS,
  groupHead: `${PARTITION_PREFIX.groupHead}*`,
  suppression: `${PARTITION_PREFIX.suppression}*`,
  templateHeads: `${PARTITION_PREFIX.templateHeads}*`,
  templateVersions: `${PARTITION_PREFIX.templateVersions}*`,
  webhookEndpoint: 'WHEP#*',
  webhookDelivery: 'WHDL#*',
  /** The one sending-gate item (the relay breaker and the pause). */
  sendingGate: 'GATE#sending',
  /** The sweeper's one item of where its runs stopped in the `due` shards (store/sweepCursors.ts). */
  sweepCursors: 'SWEEPER#due',
} as const;
export type ItemKind = keyof typeof ITEMS;

export interface StorageProps {
  /** `RETAIN` also turns on deletion protection. */
  readonly removalPolicy: RemovalPolicy;
}

/**
 * The outbox table, built from the shared layout (lambdas/store/tableLayout.ts) like the local
 * stack's table: on-demand, point-in-time recovery, TTL on terminal records, and the stream the
 * relay reads (new and old images: the relay compares `rev` and `status` across a change).
 */
export class Storage extends Construct {
  readonly table: dynamodb.Table;

  constructor(scope: Construct, id: string, props: StorageProps) {
    super(scope, id);
    this.table = new dynamodb.Table(this, 'Outbox', {
      partitionKey: { name: KEY.partition, type: dynamodb.AttributeType.STRING },
      sortKey: { name: KEY.sort, type: dynamodb.AttributeType.STRING },
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      timeToLiveAttribute: TTL_ATTRIBUTE,
      stream: dynamodb.StreamViewType.NEW_AND_OLD_IMAGES,
      deletionProtection: props.removalPolicy === RemovalPolicy.RETAIN,
      removalPolicy: props.removalPolicy,
    });
    for (const index of Object.values(INDEX)) {
      const base = {
        indexName: index.indexName,
        partitionKey: { name: index.partitionKey, type: dynamodb.AttributeType.STRING },
        sortKey: { name: index.sortKey, type: dynamodb.AttributeType.STRING },
      };
      if (index.projection.type === 'INCLUDE') {
        this.table.addGlobalSecondaryIndex({
          ...base,
          projectionType: dynamodb.ProjectionType.INCLUDE,
          nonKeyAttributes: [...index.projection.attributes],
        });
      } else {
        this.table.addGlobalSecondaryIndex({ ...base, projectionType: dynamodb.ProjectionType.KEYS_ONLY });
      }
    }
  }

  /**
   * Acknowledges the one wildcard CDK's table grants add (`{table}/index/*`) on a grantee whose code
   * queries the indexes; `why` says which. Nothing else in its policy is silenced.
   */
  acknowledgeIndexWildcard(grantee: IConstruct, why: string): void {
    const stack = Stack.of(this);
    const cfnTable = this.table.node.defaultChild as dynamodb.CfnTable;
    const logicalId = stack.resolve(stack.getLogicalId(cfnTable)) as string;
    acknowledge(
      grantee,
      `AwsSolutions-IAM5[Resource::<${logicalId}.Arn>/index/*]`,
      `The index wildcard comes from CDK's table grant; ${why}. It covers only this table's indexes.`,
    );
  }

  /**
   * Lets the grantee get only API-key items (partition key `APIKEY#…`) of the base table:
   * `ForAllValues` holds only when every partition key the request touches is a key item.
   */
  grantReadApiKeys(grantee: iam.IGrantable): void {
    grantee.grantPrincipal.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'ReadApiKeysOnly',
        actions: ['dynamodb:GetItem'],
        resources: [this.table.tableArn],
        conditions: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': [API_KEY_ITEMS] } },
      }),
    );
  }

  /**
   * Denies the grantee every write to an API-key item, whatever else it is allowed: `ForAnyValue`
   * matches when any partition key of the request (a batch, a transaction's item) is a key item.
   * Keys are written only by the keys CLI, with an operator's credentials.
   */
  denyApiKeyWrites(grantee: iam.IGrantable): void {
    grantee.grantPrincipal.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'NeverWriteApiKeys',
        effect: iam.Effect.DENY,
        actions: [
          'dynamodb:BatchWriteItem',
          'dynamodb:DeleteItem',
          'dynamodb:PutItem',
          'dynamodb:UpdateItem',
        ],
        resources: [this.table.tableArn],
        conditions: { 'ForAnyValue:StringLike': { 'dynamodb:LeadingKeys': [API_KEY_ITEMS] } },
      }),
    );
  }

  /**
   * Lets the grantee use `actions` on message items only (partition key `MSG#…`) of the base table:
   * `ForAllValues` holds only when every partition key the request touches is a message's.
   */
  grantMessageItems(grantee: iam.IGrantable, sid: string, actions: readonly string[]): void {
    grantee.grantPrincipal.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid,
        actions: [...actions],
        resources: [this.table.tableArn],
        conditions: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': [MESSAGE_ITEMS] } },
      }),
    );
  }

  /**
   * Lets the grantee use `actions` on the base table's items of `kinds` only: `ForAllValues` holds
   * only when every partition key the request touches is one of them.
   */
  grantItems(
    grantee: iam.IGrantable,
    sid: string,
    actions: readonly string[],
    kinds: readonly ItemKind[],
  ): void {
    grantee.grantPrincipal.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid,
        actions: [...actions],
        resources: [this.table.tableArn],
        conditions: {
          'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': kinds.map((kind) => ITEMS[kind]) },
        },
      }),
    );
  }

  /** The ARN of one index, for a grant narrower than the table's `index/*`. */
  indexArn(indexName: string): string {
    return `${this.table.tableArn}/index/${indexName}`;
  }
}

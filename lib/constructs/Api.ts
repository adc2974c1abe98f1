import { Duration, Names, RemovalPolicy } from 'aws-cdk-lib';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import * as apigw from 'aws-cdk-lib/aws-apigatewayv2';
import * as authorizers from 'aws-cdk-lib/aws-apigatewayv2-authorizers';
import * as integrations from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as logs from 'aws-cdk-lib/aws-logs';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { API_ROUTES, type RouteName } from '../../lambdas/core/apiRoutes.js';
import { INDEX } from '../../lambdas/store/tableLayout.js';
import { RESOURCE_ENV } from '../functionEnvironment.js';
import type { ApiThrottle } from '../postdateProps.js';
import { acknowledge } from './acknowledge.js';
import { PostdateFunction } from './postdateFunction.js';
import type { Storage } from './Storage.js';

/** The routes of DESIGN §3, from the api handler's own route table: one list for the handler, the stack and the local front end. */
export { API_ROUTES } from '../../lambdas/core/apiRoutes.js';

/** The header the authorizer reads, and the cache key of its answers. */
export const AUTHORIZATION_IDENTITY_SOURCE = '$request.header.Authorization';

/** One JSON line per request; no header values, no bodies (logs never carry an API key). */
export const ACCESS_LOG_FORMAT = JSON.stringify({
  requestId: '$context.requestId',
  time: '$context.requestTime',
  ip: '$context.identity.sourceIp',
  method: '$context.httpMethod',
  route: '$context.routeKey',
  status: '$context.status',
  protocol: '$context.protocol',
  responseLength: '$context.responseLength',
  latencyMs: '$context.responseLatency',
  integrationLatencyMs: '$context.integrationLatency',
  integrationError: '$context.integrationErrorMessage',
  authorizerError: '$context.authorizer.error',
  tenant: '$context.authorizer.tenant',
});

/** Why a route without the authorizer may be public (the cdk-nag APIG4 acknowledgement). */
/**
 * The `due` index partitions of failed webhook deliveries: the store's prefix
 * (lambdas/store/webhookStore.ts `WEBHOOK_PARTITION_PREFIX.failed`), which lib/ may not import;
 * test/cdk/webhooks.test.ts holds them equal.
 */
const FAILED_WEBHOOK_DELIVERY_ENTRIES = 'WHFL#*';

const PUBLIC_ROUTE_REASONS: Partial<Record<RouteName, string>> = {
  health:
    'GET /health is the unauthenticated liveness probe of DESIGN §3; it returns a constant and reads no data.',
  openapi:
    'GET /openapi.json is the public API description of DESIGN §3 (for Swagger UI and generators); it is built from code and reads no data.',
};

export interface ApiProps {
  readonly storage: Storage;
  readonly throttle: ApiThrottle;
  readonly authorizerCacheTtl: Duration;
  readonly configEnvironment: Readonly<Record<string, string>>;
  readonly logRetention: logs.RetentionDays;
  /** The send queue, when the api puts an immediate message's copy itself (`apiImmediateCopy`). */
  readonly immediateCopyQueue?: sqs.IQueue;
}

/** The HTTP API: a Lambda authorizer on every route but the public ones (`/health`, `/openapi.json`), stage throttling and access logs. */
export class Api extends Construct {
  readonly httpApi: apigw.HttpApi;
  readonly stage: apigw.HttpStage;
  readonly api: PostdateFunction;
  readonly authorizer: PostdateFunction;
  readonly accessLogs: logs.LogGroup;

  constructor(scope: Construct, id: string, props: ApiProps) {
    super(scope, id);
    const table = props.storage.table;
    const tableEnv = { [RESOURCE_ENV.tableName]: table.tableName };

    this.api = new PostdateFunction(this, 'Handler', {
      name: 'api',
      description: 'Postdate HTTP API',
      timeout: Duration.seconds(10),
      memorySize: 1024,
      logRetention: props.logRetention,
      environment: {
        ...props.configEnvironment,
        ...tableEnv,
        ...(props.immediateCopyQueue
          ? { [RESOURCE_ENV.sendQueueUrl]: props.immediateCopyQueue.queueUrl }
          : {}),
      },
    });
    // The item kinds each route touches, and the two listing indexes: no scan, no stream, no
    // API-key item (the authorizer reads those), no `due` index (DESIGN §6).
    const storage = props.storage;
    storage.grantItems(
      this.api.role,
      'ReadTenantItems',
      ['dynamodb:GetItem'],
      ['message', 'groupHead', 'templateHeads', 'templateVersions', 'webhookEndpoint', 'webhookDelivery'],
    );
    // A listing page reads its messages' states in one batch.
    storage.grantItems(this.api.role, 'ReadListedMessages', ['dynamodb:BatchGetItem'], ['message']);
    storage.grantItems(
      this.api.role,
      'PutTenantItems',
      ['dynamodb:PutItem'],
      ['message', 'templateVersions', 'webhookEndpoint', 'webhookDelivery'],
    );
    storage.grantItems(
      this.api.role,
      'UpdateTenantItems',
      ['dynamodb:UpdateItem'],
      ['message', 'groupHead', 'suppression', 'templateHeads', 'webhookEndpoint', 'webhookDelivery'],
    );
    // No ConditionCheckItem: an enqueue below its group's head stores the message superseded on the
    // head it read, which only grows (decision 0200; store/groupHead.ts `groupHeadStep`).
    // A message's: the body the api put apart and takes back when the key was another body's
    // (api/routes/enqueue.ts); IAM cannot narrow a grant to the body's sort key (decision 0174).
    storage.grantItems(
      this.api.role,
      'DeleteOwnBodiesSuppressionsAndEndpoints',
      ['dynamodb:DeleteItem'],
      ['message', 'suppression', 'webhookEndpoint'],
    );
    storage.grantItems(
      this.api.role,
      'QueryTenantPartitions',
      ['dynamodb:Query'],
      ['suppression', 'templateHeads', 'webhookEndpoint', 'webhookDelivery'],
    );
    this.api.role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'QueryListingIndexes',
        actions: ['dynamodb:Query'],
        resources: [storage.indexArn(INDEX.byStatus.indexName), storage.indexArn(INDEX.byTenant.indexName)],
      }),
    );
    // A webhook endpoint's failed deliveries: their entries in the `due` index (`WHFL#…`,
    // lambdas/store/webhookStore.ts), never the sweeper's partitions of that index.
    this.api.role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'QueryFailedWebhookDeliveries',
        actions: ['dynamodb:Query'],
        resources: [storage.indexArn(INDEX.due.indexName)],
        conditions: {
          'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': [FAILED_WEBHOOK_DELIVERY_ENTRIES] },
        },
      }),
    );
    if (props.immediateCopyQueue) this.api.sendsTo(props.immediateCopyQueue);
    storage.denyApiKeyWrites(this.api.role);

    this.authorizer = new PostdateFunction(this, 'Authorizer', {
      name: 'authorizer',
      description: 'Postdate API key authorizer',
      timeout: Duration.seconds(5),
      memorySize: 512,
      logRetention: props.logRetention,
      environment: { ...props.configEnvironment, ...tableEnv },
    });
    // An API key is one item read by its hashed secret: GetItem of APIKEY# items, nothing else.
    props.storage.grantReadApiKeys(this.authorizer.role);

    const authorizer = new authorizers.HttpLambdaAuthorizer('ApiKeyAuthorizer', this.authorizer.function, {
      responseTypes: [authorizers.HttpLambdaResponseType.SIMPLE],
      identitySource: [AUTHORIZATION_IDENTITY_SOURCE],
      resultsCacheTtl: props.authorizerCacheTtl,
    });

    this.httpApi = new apigw.HttpApi(this, 'HttpApi', {
      description: 'Postdate: deferred transactional email',
      createDefaultStage: false,
    });
    this.accessLogs = new logs.LogGroup(this, 'AccessLogs', {
      // Under /aws/vendedlogs/ the log delivery's resource policy stays within its size limit
      // however many APIs log to the account; the unique name keeps two stacks apart.
      logGroupName: `/aws/vendedlogs/apigateway/${Names.uniqueResourceName(this, { maxLength: 200, separator: '-' })}`,
      retention: props.logRetention,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    this.stage = this.httpApi.addStage('DefaultStage', {
      stageName: '$default',
      autoDeploy: true,
      throttle: { rateLimit: props.throttle.rateLimit, burstLimit: props.throttle.burstLimit },
      accessLogSettings: {
        destination: new apigw.LogGroupLogDestination(this.accessLogs),
        format: AccessLogFormat.custom(ACCESS_LOG_FORMAT),
      },
    });

    const integration = new integrations.HttpLambdaIntegration('Integration', this.api.function);
    for (const route of API_ROUTES) {
      const [created] = this.httpApi.addRoutes({
        path: route.path,
        methods: [apigw.HttpMethod[route.method]],
        integration,
        authorizer: route.authorized ? authorizer : new apigw.HttpNoneAuthorizer(),
      });
      if (!route.authorized && created) {
        const reason = PUBLIC_ROUTE_REASONS[route.name];
        // A new public route is a decision: it needs its reason here, not a blanket acknowledgement.
        if (reason === undefined) throw new Error(`${route.method} ${route.path} is public: give its reason`);
        acknowledge(created, 'AwsSolutions-APIG4', reason);
      }
    }
  }
}

import { ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import type { Context } from 'aws-lambda';
import { beforeAll, describe, expect, inject, it, vi } from 'vitest';
import type { ApiEvent } from '../../lambdas/api/createApiHandler.js';
import { createApiKey } from '../../lambdas/keys/apiKeys.js';
import { lambdaContext } from '../../local/http/lambdaContext.js';
import { documentClient, freshQueues, freshTable, LOCAL_AWS, sqsClient } from '../support/awsLocal.js';
import { documentedHandler } from './apiHarness.js';
import { authorizerEvent, enqueueEvent, getEvent, validBody } from './events.js';

/**
 * The deployed entry points (middy handlers) wire themselves from the environment at cold start,
 * exactly as in Lambda; here the environment points them at DynamoDB Local.
 */
describe('the Lambda entry points', () => {
  let secret: string;
  let sendQueueUrl: string;
  beforeAll(async () => {
    const { tableName } = await freshTable('wiring');
    sendQueueUrl = (await freshQueues()).urls.send;
    vi.stubEnv('POSTDATE_SEND_QUEUE_URL', sendQueueUrl);
    vi.stubEnv('AWS_ENDPOINT_URL_SQS', inject('sqsEndpoint'));
    vi.stubEnv('POSTDATE_LOCAL', 'true');
    vi.stubEnv('POSTDATE_TABLE_NAME', tableName);
    vi.stubEnv('POSTDATE_ALLOWED_FROM', '*@example.com');
    vi.stubEnv('AWS_ENDPOINT_URL_DYNAMODB', inject('dynamodbEndpoint'));
    vi.stubEnv('AWS_REGION', LOCAL_AWS.region);
    vi.stubEnv('AWS_ACCESS_KEY_ID', LOCAL_AWS.credentials.accessKeyId);
    vi.stubEnv('AWS_SECRET_ACCESS_KEY', LOCAL_AWS.credentials.secretAccessKey);
    vi.stubEnv('POWERTOOLS_LOG_LEVEL', 'ERROR');
    ({ secret } = await createApiKey(documentClient(), tableName, { tenant: 'acme', now: new Date() }));
  });

  it('authorizer → api: a key authorizes its tenant, whose message is stored and read back', async () => {
    const { handler: authorize } = await import('../../lambdas/authorizer/handler.js');
    const { handler: wired } = await import('../../lambdas/api/handler.js');
    // Its answers are checked against the OpenAPI document, as the harness checks every other one.
    const api = (event: ApiEvent, context: Context) => documentedHandler((e) => wired(e, context))(event);
    const decision = await authorize(
      authorizerEvent({ authorization: `Bearer ${secret}` }),
      lambdaContext('postdate-authorizer', 5000),
    );
    expect(decision).toMatchObject({ isAuthorized: true, context: { tenant: 'acme' } });

    const created = await api(
      enqueueEvent(validBody(), { key: 'wired-1' }),
      lambdaContext('postdate-api', 10_000),
    );
    expect(created.statusCode).toBe(202);
    const id = JSON.parse(String(created.body)).id as string;
    const fetched = await api(getEvent(id), lambdaContext('postdate-api', 10_000));
    expect(fetched.statusCode).toBe(200);
    expect(JSON.parse(String(fetched.body)).status).toBe('scheduled');
    // POSTDATE_API_IMMEDIATE_COPY is on by default: the immediate message's copy is on the queue.
    const { Messages } = await sqsClient().send(
      new ReceiveMessageCommand({ QueueUrl: sendQueueUrl, WaitTimeSeconds: 1 }),
    );
    expect(Messages?.map((message) => JSON.parse(message.Body ?? ''))).toEqual([{ v: 1, id, rev: 1 }]);
  });
});

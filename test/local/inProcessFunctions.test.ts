import { ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { describe, expect, inject, it } from 'vitest';
import { createApiKey } from '../../lambdas/keys/apiKeys.js';
import { lambdaContext } from '../../local/http/lambdaContext.js';
import { importInProcessFunctions, inProcessFunctions } from '../../local/inProcessFunctions.js';
import { authorizerEvent, enqueueEvent, getEvent, validBody } from '../api/events.js';
import { documentClient, freshQueues, freshTable, LOCAL_AWS, sqsClient } from '../support/awsLocal.js';

/** The environment a local stack gives its functions, reduced to what the api and authorizer read. */
function stackEnvironment(tableName: string, sendQueueUrl: string): Record<string, string> {
  return {
    POSTDATE_LOCAL: 'true',
    POSTDATE_TABLE_NAME: tableName,
    POSTDATE_SEND_QUEUE_URL: sendQueueUrl,
    AWS_ENDPOINT_URL_SQS: inject('sqsEndpoint'),
    POSTDATE_ALLOWED_FROM: '*@example.com',
    AWS_ENDPOINT_URL_DYNAMODB: inject('dynamodbEndpoint'),
    AWS_REGION: LOCAL_AWS.region,
    AWS_ACCESS_KEY_ID: LOCAL_AWS.credentials.accessKeyId,
    AWS_SECRET_ACCESS_KEY: LOCAL_AWS.credentials.secretAccessKey,
    POWERTOOLS_LOG_LEVEL: 'ERROR',
  };
}

/**
 * The api and authorizer run in the stack's process (issue 16 §7): each stack wires them from its
 * own environment, given explicitly, so two stacks in one process keep apart and `process.env`
 * is left as it was.
 */
describe('the in-process api and authorizer', () => {
  it('are wired from the environment they are given: two stacks in one process share nothing', async () => {
    const [a, b] = await Promise.all([freshTable('in-process-a'), freshTable('in-process-b')]);
    const [queuesA, queuesB] = await Promise.all([freshQueues(), freshQueues()]);
    const { secret } = await createApiKey(documentClient(), a.tableName, { tenant: 'acme', now: new Date() });
    // Importing Powertools adds its user agent to AWS_SDK_UA_APP_ID (as in Lambda); that is all.
    const imported = await importInProcessFunctions();
    const envBefore = { ...process.env };
    const stackA = inProcessFunctions(imported, stackEnvironment(a.tableName, queuesA.urls.send));
    const stackB = inProcessFunctions(imported, stackEnvironment(b.tableName, queuesB.urls.send));
    const [authorizeA, authorizeB, apiA, apiB] = [
      stackA.authorizer.entry,
      stackB.authorizer.entry,
      stackA.api.entry,
      stackB.api.entry,
    ];
    if (!authorizeA || !authorizeB || !apiA || !apiB) throw new Error('an in-process function is not built');

    const asked = authorizerEvent({ authorization: `Bearer ${secret}` });
    expect(await authorizeA(asked, lambdaContext('postdate-authorizer', 5000))).toMatchObject({
      isAuthorized: true,
      context: { tenant: 'acme' },
    });
    expect(await authorizeB(asked, lambdaContext('postdate-authorizer', 5000))).toMatchObject({
      isAuthorized: false,
    });

    const created = await apiA(
      enqueueEvent(validBody(), { key: 'in-process-1' }),
      lambdaContext('postdate-api', 10_000),
    );
    expect(created.statusCode).toBe(202);
    const id = JSON.parse(String(created.body)).id as string;
    expect((await apiA(getEvent(id), lambdaContext('postdate-api', 10_000))).statusCode).toBe(200);
    expect((await apiB(getEvent(id), lambdaContext('postdate-api', 10_000))).statusCode).toBe(404);
    // The api's own copy of the immediate message went to its stack's queue, not the other's.
    const copiesOn = async (queueUrl: string) =>
      (
        (await sqsClient().send(new ReceiveMessageCommand({ QueueUrl: queueUrl, WaitTimeSeconds: 1 })))
          .Messages ?? []
      ).map((message) => JSON.parse(message.Body ?? '') as unknown);
    expect(await copiesOn(queuesA.urls.send)).toEqual([{ v: 1, id, rev: 1 }]);
    expect(await copiesOn(queuesB.urls.send)).toEqual([]);

    expect({ ...process.env }).toEqual(envBefore);
  });
});

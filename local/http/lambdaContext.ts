import { randomUUID } from 'node:crypto';
import type { Context } from 'aws-lambda';

/**
 * A Lambda invocation context for a locally invoked handler: a fresh `awsRequestId` per call and a
 * `getRemainingTimeInMillis` that counts down from the function's timeout, as in Lambda.
 */
export function lambdaContext(functionName: string, timeoutMs: number, region = 'us-east-1'): Context {
  return lambdaContextUntil(functionName, Date.now() + timeoutMs, { region });
}

/**
 * The same context for an invocation whose deadline (epoch ms) is already fixed: a worker sandbox
 * rebuilds it from the deadline at which its runner kills the invocation, so
 * `getRemainingTimeInMillis()` reaches 0 exactly when the kill comes.
 */
export function lambdaContextUntil(
  functionName: string,
  deadlineMs: number,
  options: {
    readonly region?: string;
    readonly awsRequestId?: string;
    readonly memoryLimitInMB?: number;
  } = {},
): Context {
  const region = options.region ?? 'us-east-1';
  const awsRequestId = options.awsRequestId ?? randomUUID();
  return {
    callbackWaitsForEmptyEventLoop: true,
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:${region}:000000000000:function:${functionName}`,
    memoryLimitInMB: String(options.memoryLimitInMB ?? 512),
    awsRequestId,
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: `local/${awsRequestId}`,
    getRemainingTimeInMillis: () => Math.max(0, deadlineMs - Date.now()),
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
}

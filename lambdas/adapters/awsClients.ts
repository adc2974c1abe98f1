import { AWS_CLIENT_LIMITS, type AwsClientLimits } from '../core/awsClientLimits.js';

/**
 * The options every AWS SDK client of the functions is built with (issue 15 §4). The numbers live
 * in lambdas/core/awsClientLimits.ts, where the sender's timing derives its outcome-write reserve
 * from them: changing them there moves the reserve and the clients together.
 *
 * The SDK's own defaults wait on a socket without end and retry three times with backoff, so one
 * stuck request could hold a Lambda invocation (and the SMTP attempt waiting on the secret) for
 * its whole timeout. These bound a hanging call (`worstCaseAwsCallMs`).
 */
export { AWS_CLIENT_LIMITS, type AwsClientLimits };

/** What `new XxxClient(…)` accepts for these limits (an @smithy/node-http-handler options object). */
export interface AwsClientOptions {
  readonly maxAttempts: number;
  readonly requestHandler: {
    readonly connectionTimeout: number;
    readonly requestTimeout: number;
    readonly throwOnRequestTimeout: true;
  };
}

/**
 * The options every function passes to an AWS SDK v3 client: `new SQSClient(awsClientOptions())`.
 * Endpoints and regions still come from the environment (AWS_ENDPOINT_URL_* on the local stack).
 */
export function awsClientOptions(overrides: Partial<AwsClientLimits> = {}): AwsClientOptions {
  const limits = { ...AWS_CLIENT_LIMITS, ...overrides };
  return {
    maxAttempts: limits.maxAttempts,
    requestHandler: {
      connectionTimeout: limits.connectionTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      // Without it @smithy/node-http-handler 4.x only logs a warning when requestTimeout passes.
      throwOnRequestTimeout: true,
    },
  };
}

/**
 * The limits every AWS SDK client of the functions is built with (issue 15 §4), defined once.
 *
 * The SDK's own defaults wait on a socket without end and retry three times with backoff, so one
 * stuck request could hold a Lambda invocation (and the SMTP attempt waiting on the secret) for
 * its whole timeout. These bound a hanging call to about maxAttempts × (connection + request) time.
 */
export interface AwsClientLimits {
  /** Time to open the TCP (and TLS) connection to the service. */
  readonly connectionTimeoutMs: number;
  /** Time a request may wait on its socket without an answer. */
  readonly requestTimeoutMs: number;
  /** Attempts per call, the first included (the SDK's standard retry strategy backs off between them). */
  readonly maxAttempts: number;
}

/** @default connection 3 s, request 5 s, 3 attempts */
export const AWS_CLIENT_LIMITS: AwsClientLimits = {
  connectionTimeoutMs: 3000,
  requestTimeoutMs: 5000,
  maxAttempts: 3,
};

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

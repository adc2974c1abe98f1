import { appendFileSync } from 'node:fs';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { AWS_CLIENT_LIMITS, type AwsClientLimits } from '../core/awsClientLimits.js';
import { AWS_CALL_RECORDING } from '../core/configSpec.js';

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

/** The @smithy/node-http-handler options of {@link AWS_CLIENT_LIMITS}. */
export interface AwsRequestHandlerOptions {
  readonly connectionTimeout: number;
  readonly requestTimeout: number;
  readonly throwOnRequestTimeout: true;
}

/** What `new XxxClient(…)` accepts for these limits. */
export interface AwsClientOptions {
  readonly maxAttempts: number;
  /** The handler options; a recording handler built from them when calls are recorded (below). */
  readonly requestHandler: AwsRequestHandlerOptions | NodeHttpHandler;
}

/**
 * The test suites' switch (DESIGN §6, "Permissions are part of the contract"): when it names a file,
 * every request a client built from here sends is appended to it as one JSON line, tagged with
 * {@link FUNCTION_VARIABLE}. test/iam/ evaluates them against each function's policy. Lambda never
 * sets it.
 */
export const RECORD_VARIABLE = AWS_CALL_RECORDING.file;
/** The function whose code builds the client (`api`, `sweeper`, …), read when the client is built. */
export const FUNCTION_VARIABLE = AWS_CALL_RECORDING.function;

/** One recorded request, as it went on the wire (the protocol's target, path and JSON body). */
export interface RecordedAwsRequest {
  readonly function: string;
  readonly hostname: string;
  readonly method: string;
  readonly path: string;
  readonly query: Readonly<Record<string, unknown>>;
  /** `x-amz-target` of the JSON protocols (`DynamoDB_20120810.GetItem`), absent for REST ones. */
  readonly target?: string;
  readonly body?: string;
  /** S3 CopyObject's source (`x-amz-copy-source`): IAM authorizes reading it as well as the write. */
  readonly copySource?: string;
  /** S3 PutObject or CopyObject setting the object's tags (`x-amz-tagging`): IAM authorizes them as s3:PutObjectTagging. */
  readonly tagging?: true;
  /**
   * The HTTP status of the answer, absent when none came. What IAM must allow can hang on it: S3
   * answers a missing key 404 only to a caller that may also `s3:ListBucket` (else 403).
   */
  readonly status?: number;
}

/**
 * The options every function passes to an AWS SDK v3 client: `new SQSClient(awsClientOptions())`.
 * Endpoints and regions still come from the environment (AWS_ENDPOINT_URL_* on the local stack).
 */
export function awsClientOptions(overrides: Partial<AwsClientLimits> = {}): AwsClientOptions {
  const limits = { ...AWS_CLIENT_LIMITS, ...overrides };
  const handlerOptions: AwsRequestHandlerOptions = {
    connectionTimeout: limits.connectionTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    // Without it @smithy/node-http-handler 4.x only logs a warning when requestTimeout passes.
    throwOnRequestTimeout: true,
  };
  const recordTo = process.env[RECORD_VARIABLE];
  return {
    maxAttempts: limits.maxAttempts,
    requestHandler: recordTo
      ? new RecordingHttpHandler(handlerOptions, recordTo, process.env[FUNCTION_VARIABLE] ?? 'unnamed')
      : handlerOptions,
  };
}

/** The SDK's own handler, with every request appended to a file before it is sent. */
class RecordingHttpHandler extends NodeHttpHandler {
  constructor(
    options: AwsRequestHandlerOptions,
    private readonly file: string,
    private readonly functionName: string,
  ) {
    super(options);
  }

  /** Appends the request once its answer came (or did not), with the answer's status. */
  override async handle(
    ...args: Parameters<NodeHttpHandler['handle']>
  ): ReturnType<NodeHttpHandler['handle']> {
    const [request] = args;
    const target = request.headers['x-amz-target'];
    const copySource = request.headers['x-amz-copy-source'];
    const tagging = request.headers['x-amz-tagging'] !== undefined;
    const line: RecordedAwsRequest = {
      function: this.functionName,
      hostname: request.hostname,
      method: request.method,
      path: request.path,
      query: request.query ?? {},
      ...(target ? { target } : {}),
      ...(copySource ? { copySource } : {}),
      ...(tagging ? { tagging: true as const } : {}),
      ...(typeof request.body === 'string' ? { body: request.body } : {}),
      ...(request.body instanceof Uint8Array ? { body: new TextDecoder().decode(request.body) } : {}),
    };
    const record = (status?: number) =>
      appendFileSync(this.file, `${JSON.stringify(status === undefined ? line : { ...line, status })}\n`);
    try {
      const answer = await super.handle(...args);
      record(answer.response.statusCode);
      return answer;
    } catch (error) {
      record();
      throw error;
    }
  }
}

import { LogLevel } from '@aws-lambda-powertools/logger';

/**
 * What the AWS SDK and Powertools read from `process.env` by themselves, taken from a given
 * environment instead when that environment is not `process.env`.
 *
 * A Lambda entry wires itself from `process.env`: then these give nothing, and the SDK and
 * Powertools resolve region, endpoint, credentials and log level exactly as they always do (the
 * role's credentials included). The local stack runs the api and authorizer in its own process with
 * an environment of its own (issue 16 §7); these carry that environment's values to the clients and
 * the logger explicitly, so nothing is written to `process.env`.
 */

/** An environment as the functions read it: `process.env`, or the local stack's. */
export type Environment = Readonly<Record<string, string | undefined>>;

/** The services the functions call, as they are spelt in `AWS_ENDPOINT_URL_<SERVICE>`. */
export type AwsService = 'DYNAMODB' | 'SQS' | 'SCHEDULER' | 'EVENTBRIDGE' | 'S3';

/** Region, endpoint and static credentials for an SDK client (`new SQSClient({ ...these })`). */
export interface AwsClientEnvironment {
  readonly region?: string;
  readonly endpoint?: string;
  readonly credentials?: {
    readonly accessKeyId: string;
    readonly secretAccessKey: string;
    readonly sessionToken?: string;
  };
}

/**
 * The region, endpoint (`AWS_ENDPOINT_URL_<SERVICE>`, else `AWS_ENDPOINT_URL`) and static keys of
 * `env`, for a client of `service`; nothing for `process.env` itself, which the SDK reads anyway.
 */
export function awsClientEnvironment(env: Environment, service: AwsService): AwsClientEnvironment {
  if (env === process.env) return {};
  const region = env.AWS_REGION;
  const endpoint = env[`AWS_ENDPOINT_URL_${service}`] ?? env.AWS_ENDPOINT_URL;
  const accessKeyId = env.AWS_ACCESS_KEY_ID;
  const secretAccessKey = env.AWS_SECRET_ACCESS_KEY;
  const sessionToken = env.AWS_SESSION_TOKEN;
  return {
    ...(region ? { region } : {}),
    ...(endpoint ? { endpoint } : {}),
    ...(accessKeyId && secretAccessKey
      ? { credentials: { accessKeyId, secretAccessKey, ...(sessionToken ? { sessionToken } : {}) } }
      : {}),
  };
}

/**
 * The Powertools Logger's level from `env` (`POWERTOOLS_LOG_LEVEL`, else `LOG_LEVEL`, as the Logger
 * reads them); nothing for `process.env` itself, which the Logger reads anyway.
 */
export function loggerEnvironment(env: Environment): { readonly logLevel?: LogLevelName } {
  if (env === process.env) return {};
  const level = (env.POWERTOOLS_LOG_LEVEL || env.LOG_LEVEL)?.toUpperCase();
  return level !== undefined && isLogLevelName(level) ? { logLevel: level } : {};
}

type LogLevelName = (typeof LogLevel)[keyof typeof LogLevel];

function isLogLevelName(value: string): value is LogLevelName {
  return (Object.values(LogLevel) as string[]).includes(value);
}

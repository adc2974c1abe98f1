/**
 * The CLI's typed errors and its exit codes. The entry point turns any of these into one line on
 * stderr and the exit code; nothing else prints a stack to an operator.
 */
import { parseKnownFiles } from '@smithy/core/config';
import { PostdateNetworkError, type PostdateProblem, PostdateProblemError } from '../lambdas/client/index.js';

export const EXIT = {
  ok: 0,
  /** The command ran and something it was asked to do did not happen (a conflict, a partial run). */
  failed: 1,
  /** Bad usage: an unknown option, a malformed value, a missing resource name. */
  usage: 2,
  /** The stack (DynamoDB, SQS, the scheduler) could not be reached, or AWS refused the credentials. */
  unreachable: 3,
  /** What the command names does not exist (a message, key, template, endpoint, suppression; of several ids, none). */
  notFound: 4,
  /** Interrupted (SIGINT or SIGTERM; 128 + 2, as a shell reports Ctrl-C): what it did before stands. */
  interrupted: 130,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

export class CliError extends Error {
  override readonly name: string = 'CliError';
  /** Fields the error document carries besides its problem (`unanswered_from_line`, …). */
  readonly context: Readonly<Record<string, unknown>>;
  constructor(
    message: string,
    readonly exitCode: ExitCode = EXIT.failed,
    options?: { cause?: unknown; context?: Readonly<Record<string, unknown>> },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.context = options?.context ?? {};
  }
}

/**
 * The API refused a request: its problem (RFC 9457 `type`, `title`, `status`, `detail`, `errors`)
 * is the error document's, passed through rather than relabelled (docs/cli.md, "Errors").
 */
export class ApiProblemError extends CliError {
  override readonly name = 'ApiProblemError';
  constructor(
    readonly problem: PostdateProblem,
    options?: { cause?: unknown; context?: Readonly<Record<string, unknown>> },
  ) {
    super(`${problem.status} ${problem.title}: ${problem.detail}`, EXIT.failed, options);
  }
}

/**
 * The typed client's errors as the CLI's: the API's answer passes its problem through; no answer
 * at all is the stack unreachable (exit 3). Anything else is returned as it is.
 */
export function fromClientError(error: unknown, context: Readonly<Record<string, unknown>> = {}): unknown {
  if (error instanceof PostdateProblemError) return new ApiProblemError(error, { cause: error, context });
  if (error instanceof PostdateNetworkError) {
    return new CliError(`the API did not answer: ${error.message}`, EXIT.unreachable, {
      cause: error,
      context,
    });
  }
  return error;
}

/** A malformed option value or a missing name the command needs. */
export class UsageError extends CliError {
  override readonly name = 'UsageError';
  constructor(message: string) {
    super(message, EXIT.usage);
  }
}

/**
 * What the command names does not exist: exit 4, so a script tells "gone" from "failed" (1). It
 * names the command that lists the right ones (`next`), for whoever typed a wrong id or name: on
 * the line after what was not found, and as the error document's `next` (docs/cli.md).
 */
export class NotFoundError extends CliError {
  override readonly name = 'NotFoundError';
  constructor(
    /** What was not found, in words: the error document's `detail`. */
    readonly detail: string,
    /** The command that lists what there is (`postdate templates list --tenant acme`). */
    readonly next: string,
    options?: { cause?: unknown },
  ) {
    super(withNextStep(detail, next), EXIT.notFound, { ...options, context: { next } });
  }
}

/** What was not found and the command that lists the right ones: the one wording of the hint. */
export function withNextStep(detail: string, next: string): string {
  return `${detail}; find the right one with: ${next}`;
}

/** A service of the stack did not answer (connection refused, DNS, timeout). */
export class StackUnreachableError extends CliError {
  override readonly name = 'StackUnreachableError';
  constructor(
    readonly service: string,
    readonly endpoint: string,
    hint: string,
    cause: unknown,
  ) {
    super(`cannot reach ${service} at ${endpoint} — ${hint}`, EXIT.unreachable, { cause });
  }
}

/** Network-level failure codes (Node's, on the error, its cause or an AggregateError's members). */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EPIPE',
]);

/** Whether an error means "nothing answered" rather than "the service answered no". */
export function isNetworkError(error: unknown, depth = 0): boolean {
  if (typeof error !== 'object' || error === null || depth > 4) return false;
  const { code, cause, errors, name } = error as {
    code?: unknown;
    cause?: unknown;
    errors?: unknown;
    name?: unknown;
  };
  if (typeof code === 'string' && NETWORK_CODES.has(code)) return true;
  // The SDK's request handler raises these (with no `code`) when a connection or request times out.
  if (name === 'TimeoutError' || name === 'RequestTimeout') return true;
  if (Array.isArray(errors) && errors.some((inner) => isNetworkError(inner, depth + 1))) return true;
  return isNetworkError(cause, depth + 1);
}

/**
 * Whether the SDK found no usable credentials or AWS refused them (an expired SSO session, no
 * credentials at all, a profile no file has: `missingProfile` tells that one).
 */
export function isCredentialsError(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const name = (error as { name?: unknown }).name;
  // The SDK's own error classes; the names are part of its public contract.
  return (
    name === 'CredentialsProviderError' ||
    name === 'ExpiredTokenException' ||
    name === 'UnrecognizedClientException' ||
    name === 'InvalidClientTokenId' ||
    name === 'InvalidSignatureException'
  );
}

/** A profile AWS_PROFILE names that neither AWS file has, and where the SDK looked for it. */
export interface MissingProfile {
  readonly profile: string;
  readonly configFile: string;
  readonly credentialsFile: string;
}

/**
 * The profile AWS_PROFILE names when neither the config file (`[profile x]`) nor the credentials
 * file (`[x]`) has it, read as the SDK reads them (@smithy/core's `parseKnownFiles`, the same
 * variables and defaults); undefined when AWS_PROFILE is not set or a file has it. With AWS_PROFILE
 * set the SDK skips the environment's keys, and its chain then ends in the same
 * CredentialsProviderError as an expired sign-in, though no credential was ever sent: the error
 * cannot tell the two apart, the files can (decision 0268).
 */
export async function missingProfile(
  env: Readonly<Record<string, string | undefined>> = process.env,
): Promise<MissingProfile | undefined> {
  const profile = env.AWS_PROFILE;
  if (profile === undefined || profile === '') return undefined;
  const profiles = await parseKnownFiles({
    ignoreCache: true,
    ...(env.AWS_CONFIG_FILE ? { configFilepath: env.AWS_CONFIG_FILE } : {}),
    ...(env.AWS_SHARED_CREDENTIALS_FILE ? { filepath: env.AWS_SHARED_CREDENTIALS_FILE } : {}),
  });
  if (Object.hasOwn(profiles, profile)) return undefined;
  return {
    profile,
    configFile: env.AWS_CONFIG_FILE || '~/.aws/config',
    credentialsFile: env.AWS_SHARED_CREDENTIALS_FILE || '~/.aws/credentials',
  };
}

/** What kind of failure an error document reports; `type` is `urn:postdate:cli:{kind}`. */
export type CliErrorKind =
  | 'usage'
  | 'failed'
  | 'not-found'
  | 'unreachable'
  | 'credentials'
  | 'interrupted'
  | 'internal';

const TITLES: Readonly<Record<CliErrorKind, string>> = {
  usage: 'Bad usage',
  failed: 'The command failed',
  'not-found': 'Not found',
  unreachable: 'The stack could not be reached',
  credentials: 'No usable AWS credentials',
  interrupted: 'Interrupted',
  internal: 'Unexpected error',
};

/**
 * An error as the one JSON document of a `--json` run (docs/cli.md, "JSON output"): problem-shaped
 * as the API's errors (RFC 9457's `type`, `title`, `detail`), with the exit code in place of an
 * HTTP status, inside `error` so that a script tells it from a result by one key.
 */
export interface ErrorDocument {
  readonly error: {
    readonly type: string;
    readonly title: string;
    readonly detail: string;
    /** The API's HTTP status, when the API refused the request. */
    readonly status?: number;
    /** The API's field errors, when it named any. */
    readonly errors?: readonly { readonly field: string; readonly message: string; readonly line?: number }[];
    readonly exit_code: ExitCode;
    /** Not found: the command that lists the right ones (`postdate messages list`). */
    readonly next?: string;
    /** The SDK's or Node's name for an unexpected error (never a stack). */
    readonly name?: string;
    /** A command's own context (`messages enqueue`: which lines were answered, which may be stored). */
    readonly [field: string]: unknown;
  };
}

export function errorDocument(
  kind: CliErrorKind,
  detail: string,
  exitCode: ExitCode,
  name?: string,
): ErrorDocument {
  return {
    error: {
      type: `urn:postdate:cli:${kind}`,
      title: TITLES[kind],
      detail,
      exit_code: exitCode,
      ...(name !== undefined ? { name } : {}),
    },
  };
}

/** A CliError's document: the API's problem passed through, or the CLI's own kind; then its context. */
export function errorDocumentOf(error: CliError): ErrorDocument {
  if (error instanceof ApiProblemError) {
    const { type, title, status, detail, errors, currentStatus } = error.problem;
    return {
      error: {
        type,
        title,
        status,
        detail,
        errors,
        ...(currentStatus === undefined ? {} : { current_status: currentStatus }),
        exit_code: error.exitCode,
        ...error.context,
      },
    };
  }
  const detail = error instanceof NotFoundError ? error.detail : error.message;
  const document = errorDocument(kindOfExit(error.exitCode), detail, error.exitCode);
  return { error: { ...document.error, ...error.context } };
}

/** The kind of a CliError by its exit code (usage 2, unreachable 3, not found 4, otherwise failed). */
export function kindOfExit(exitCode: ExitCode): CliErrorKind {
  if (exitCode === EXIT.usage) return 'usage';
  if (exitCode === EXIT.unreachable) return 'unreachable';
  return exitCode === EXIT.notFound ? 'not-found' : 'failed';
}

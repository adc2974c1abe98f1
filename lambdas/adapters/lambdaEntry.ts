import { LogFormatter, Logger, LogItem } from '@aws-lambda-powertools/logger';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import type { LogAttributes, UnformattedAttributes } from '@aws-lambda-powertools/logger/types';
import { MetricUnit } from '@aws-lambda-powertools/metrics';
import middy from '@middy/core';
import type { Context } from 'aws-lambda';
import type { PostdateFunctionName } from '../core/postdateFunctions.js';
import { type Environment, loggerEnvironment } from './explicitEnvironment.js';
import { functionMetrics } from './powertoolsMetrics.js';

/**
 * The Lambda entry of every function: the wiring that each `handler.ts` would otherwise repeat.
 * A function says its name, whether it publishes metrics and how it wires itself from an
 * environment; the entry gives it a Powertools logger (`postdate-{name}`) and, when it publishes,
 * Powertools metrics flushed as EMF after each invocation, and wires it on its first invocation
 * (a cold start) and then reuses it. The deployed `handler` is the entry for `process.env`; the local
 * stack builds one per stack from the stack's own environment, so two stacks never share a cold start.
 */

/** What the entry hands the function's wiring. */
export interface EntryTools {
  readonly logger: Logger;
  /**
   * Adds to this invocation's EMF metrics (flushed when it ends); only a function that publishes.
   * With `relay`, a per-relay metric is written with the relay's dimension too (powertoolsMetrics.ts
   * `FunctionMetrics.add`).
   */
  readonly count: (name: string, value?: number, relay?: string) => void;
  readonly milliseconds: (name: string, value: number, relay?: string) => void;
}

/**
 * A function once wired: one event in, its result out, with the invocation's context (the time it
 * has left: `getRemainingTimeInMillis`); `close` releases what it holds (SMTP pools).
 */
export type WiredFunction<TEvent, TResult> = ((event: TEvent, context?: Context) => Promise<TResult>) & {
  readonly close?: () => Promise<void>;
};

export interface FunctionEntrySpec<TEvent, TResult> {
  readonly name: PostdateFunctionName;
  /** Publishes EMF metrics through {@link EntryTools}: flushed after every invocation. @default false */
  readonly metrics?: boolean;
  /** Wires the real clients from `env`; a bad configuration throws here, naming the variable. */
  readonly wire: (env: Environment, tools: EntryTools) => WiredFunction<TEvent, TResult>;
}

/** The Lambda handler, and `close` for a process that stops it (the local stack; Lambda never does). */
export type LambdaEntry<TEvent, TResult> = ((event: TEvent, context: Context) => Promise<TResult>) & {
  readonly close: () => Promise<void>;
};

/**
 * The function's entry for an environment: `lambdaEntry(spec)(process.env)` is the deployed
 * `handler`. Its logger (and metrics) are made now, its clients on its first invocation.
 */
export function lambdaEntry<TEvent, TResult>(
  spec: FunctionEntrySpec<TEvent, TResult>,
): (env: Environment) => LambdaEntry<TEvent, TResult> {
  return (env) => entryFor(spec, env);
}

function entryFor<TEvent, TResult>(
  spec: FunctionEntrySpec<TEvent, TResult>,
  env: Environment,
): LambdaEntry<TEvent, TResult> {
  const service = `postdate-${spec.name}`;
  const logger = new Logger({
    serviceName: service,
    logFormatter: new OperatorLogFormatter(),
    ...loggerEnvironment(env),
  });
  const metrics = spec.metrics ? functionMetrics(env) : undefined;
  const unpublished = (): never => {
    throw new Error(`${service} publishes no metrics: its entry must say metrics: true`);
  };
  const tools: EntryTools = {
    logger,
    count: (name, value = 1, relay) =>
      metrics ? metrics.add(name, MetricUnit.Count, value, relay) : unpublished(),
    milliseconds: (name, value, relay) =>
      metrics ? metrics.add(name, MetricUnit.Milliseconds, value, relay) : unpublished(),
  };
  let wired: WiredFunction<TEvent, TResult> | undefined;

  // No early timeout. Lambda kills an invocation at its timeout and resets the sandbox, so none of
  // its work goes on; the lease and claim rules rest on that. middy's default answers a
  // `TimeoutError` 5 ms before the deadline instead and leaves the handler running in a sandbox that
  // Lambda freezes and thaws at its next invocation, after the lease: a send nobody holds any more.
  // Never the event itself, whatever POWERTOOLS_LOGGER_LOG_EVENT says (an operator debugging may set
  // it): the api's and the authorizer's carry the API key in `Authorization`, the api's the body
  // with its addresses (decision 0249).
  const entry = middy<TEvent, TResult>({ timeoutEarlyInMillis: 0 }).use(
    injectLambdaContext(logger, { logEvent: false }),
  );
  // The invocation's metrics are written when it ends, answered or failed (as Powertools' own
  // logMetrics middleware does); a timed-out invocation is killed before, and writes none.
  if (metrics) entry.use({ after: () => metrics.publish(), onError: () => metrics.publish() });
  const handler = entry.handler(async function invoke(event: TEvent, context: Context): Promise<TResult> {
    wired ??= spec.wire(env, tools);
    return wired(event, context);
  });

  return Object.assign(handler, {
    close: async function close(): Promise<void> {
      const closing = wired;
      wired = undefined;
      await closing?.close?.();
    },
  });
}

/**
 * A log line with what an operator searches by (docs/design.md §6 Operations, docs/runbook.md): the
 * level, the message, the time, the function (`service`), the invocation's request id (which ties a
 * line to Lambda's own lines of that invocation) and the line's attributes. Powertools' default
 * adds the function's name, ARN and memory, `cold_start`, `sampling_rate` and the X-Ray trace id
 * to every line: ~250 bytes a line that each function's own log group (postdateFunction.ts) already
 * names, and no trace is recorded (tracing is off). At ~5 lines a message that was half the
 * function log bytes CloudWatch Logs bills (issue 32; decision 0107).
 */
class OperatorLogFormatter extends LogFormatter {
  formatAttributes(attributes: UnformattedAttributes, additionalLogAttributes: LogAttributes): LogItem {
    return new LogItem({
      attributes: {
        level: attributes.logLevel,
        message: attributes.message,
        timestamp: this.formatTimestamp(attributes.timestamp),
        service: attributes.serviceName,
        function_request_id: attributes.lambdaContext?.awsRequestId,
      },
    }).addAttributes(additionalLogAttributes);
  }
}

import { existsSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import type { Environment } from '../lambdas/adapters/explicitEnvironment.js';
import type { ApiEntry } from '../lambdas/api/handler.js';
import type { AuthorizerEntry } from '../lambdas/authorizer/handler.js';
import {
  type HttpFrontEnd,
  type LambdaFunction,
  type Readiness,
  startHttpFrontEnd,
} from './http/httpFrontEnd.js';
import {
  type FunctionLoad,
  handlerFile,
  IN_PROCESS_FUNCTIONS,
  type InProcessFunctionName,
} from './localFunctions.js';

/**
 * The api and authorizer, which run in the stack's process behind the HTTP front end. Each handler
 * module exports its Lambda entry for a given environment (`apiEntry(env)`, `authorizerEntry(env)`,
 * of which the deployed `handler` is the one for `process.env`): the stack builds its own from its
 * environment, so nothing is written to `process.env` and two stacks in one process never share a
 * cold start.
 */

/** The export of each handler module that builds its entry for an environment. */
const ENTRY_FACTORIES = { api: 'apiEntry', authorizer: 'authorizerEntry' } as const;

type EntryFactory = (env: Environment) => unknown;

/** A handler module imported (its code, not yet wired), or why not. */
export type ImportedFunction =
  | { readonly factory: EntryFactory }
  | { readonly factory: undefined; readonly note?: string };

/** An in-process function wired for the stack: its entry, or why there is none. */
export interface InProcessFunction<Entry> {
  readonly entry: Entry | undefined;
  readonly note?: string;
}

export interface InProcessFunctions {
  readonly api: InProcessFunction<ApiEntry>;
  readonly authorizer: InProcessFunction<AuthorizerEntry>;
}

/**
 * Imports the api and authorizer handler modules (the slow part, done while DynamoDB Local starts);
 * one that is missing or fails to load is reported, not faked.
 */
export async function importInProcessFunctions(): Promise<Record<InProcessFunctionName, ImportedFunction>> {
  const entries = await Promise.all(
    IN_PROCESS_FUNCTIONS.map(async (name): Promise<[InProcessFunctionName, ImportedFunction]> => {
      const file = handlerFile(name);
      if (!existsSync(file)) return [name, { factory: undefined }];
      const exportName = ENTRY_FACTORIES[name];
      try {
        const module: Record<string, unknown> = await import(pathToFileURL(file).href);
        const factory = module[exportName];
        if (typeof factory !== 'function') {
          return [name, { factory: undefined, note: `it exports no ${exportName} function` }];
        }
        return [name, { factory: factory as EntryFactory }];
      } catch (error) {
        const reason = error instanceof Error ? error.message.split('\n')[0] : String(error);
        return [name, { factory: undefined, note: `it failed to load: ${reason}` }];
      }
    }),
  );
  return Object.fromEntries(entries) as Record<InProcessFunctionName, ImportedFunction>;
}

/**
 * Each imported function's entry for the stack's (complete) environment: its logger now, its
 * clients on its first invocation, as a Lambda cold start.
 */
export function inProcessFunctions(
  imported: Readonly<Record<InProcessFunctionName, ImportedFunction>>,
  environment: Environment,
): InProcessFunctions {
  const wire = <Entry>(own: ImportedFunction): InProcessFunction<Entry> =>
    own.factory
      ? { entry: own.factory(environment) as Entry }
      : { entry: undefined, ...(own.note ? { note: own.note } : {}) };
  return { api: wire<ApiEntry>(imported.api), authorizer: wire<AuthorizerEntry>(imported.authorizer) };
}

/** Whether the api and authorizer are built, and why not when known. */
export function inProcessLoads(functions: InProcessFunctions): Record<InProcessFunctionName, FunctionLoad> {
  const loadOf = (own: InProcessFunction<unknown>): FunctionLoad => ({
    built: own.entry !== undefined,
    note: own.note,
  });
  return { api: loadOf(functions.api), authorizer: loadOf(functions.authorizer) };
}

/**
 * The local API Gateway in front of the in-process api and authorizer: the stack's API, whose
 * taken port is a PortInUseError naming POSTDATE_PORT.
 */
export function startApiFrontEnd(options: {
  readonly port: number;
  readonly host: string;
  readonly functions: InProcessFunctions;
  readonly readiness: () => Promise<Readiness>;
  readonly log: (line: string) => void;
  /** API Gateway's authorizer cache TTL; absent: the deployed default. */
  readonly authorizerCacheTtlMs?: number;
}): Promise<HttpFrontEnd> {
  return startHttpFrontEnd({
    port: options.port,
    host: options.host,
    part: 'api',
    // The front end puts the authorizer's context into each event it gives the api.
    api: options.functions.api.entry as LambdaFunction<APIGatewayProxyEventV2> | undefined,
    authorizer: options.functions.authorizer.entry,
    readiness: options.readiness,
    log: (line) => options.log(`http: ${line}`),
    ...(options.authorizerCacheTtlMs === undefined
      ? {}
      : { authorizerCacheTtlMs: options.authorizerCacheTtlMs }),
  });
}

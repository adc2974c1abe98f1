/**
 * The import rules as data — a layer, the files it holds, the layers it may import and the packages
 * it may use — so a new folder or an allowed edge is one line here and one line in
 * docs/architecture.md. imports.test.ts checks the import graph against them, architectureDoc.test.ts
 * the page's layer table.
 */
import { POSTDATE_FUNCTIONS, type PostdateFunctionName } from '../../lambdas/core/postdateFunctions.js';

export type LayerName =
  | 'core'
  | 'records'
  | 'ports'
  | 'adapters'
  | 'store'
  | 'outbox'
  | 'client'
  | PostdateFunctionName
  | 'lib'
  | 'local'
  | 'cli'
  | 'chaos'
  | 'bench'
  | 'test';

export interface Layer {
  readonly name: LayerName;
  /** Repository-relative paths of the files in this layer (the first layer that matches wins). */
  readonly files: RegExp;
  /** Layers whose files this layer may import (its own files always). */
  readonly may: readonly LayerName[];
  /** Bare specifiers (npm packages, node: modules) it may import; `'any'` for no restriction. */
  readonly packages: readonly string[] | 'any';
}

const BELOW_FUNCTIONS: readonly LayerName[] = ['core', 'records', 'ports', 'adapters', 'store'];
const ALL_LAMBDAS: readonly LayerName[] = [...BELOW_FUNCTIONS, 'outbox', ...POSTDATE_FUNCTIONS];

export const LAYERS: readonly Layer[] = [
  /** Pure decisions: no SDK, no SMTP, no I/O; the clock and the random source are arguments. */
  {
    name: 'core',
    files: /^lambdas\/core\//,
    may: [],
    packages: ['zod', 'ulid', 'node:crypto', 'node:url', 'handlebars'],
  },
  /**
   * The table's items and key layout as plain data, and the message view the API answers and every
   * event carries (DESIGN §3, §11): what every layer, the CDK included, agrees on.
   */
  {
    name: 'records',
    files: /^lambdas\/store\/(messageRecord|messageView|tableLayout)\.ts$/,
    may: ['core'],
    packages: [],
  },
  /** Interfaces in our words, no vendor type. */
  { name: 'ports', files: /^lambdas\/ports\//, may: ['core', 'records'], packages: [] },
  /** One class per port over a vendor SDK (SQS, Scheduler, Secrets Manager, nodemailer). */
  { name: 'adapters', files: /^lambdas\/adapters\//, may: ['core', 'records', 'ports'], packages: 'any' },
  /** The DynamoDB adapters: the message table and the API-key records. */
  { name: 'store', files: /^lambdas\/(store|keys)\//, may: ['core', 'records', 'ports'], packages: 'any' },
  /** The transactional outbox for applications that write in the table's account (a public entry). */
  {
    name: 'outbox',
    files: /^lambdas\/outbox\//,
    may: ['core', 'records', 'ports', 'store'],
    packages: 'any',
  },
  /** The typed HTTP client for applications (`postdate/client`): its own types, nothing of the server. */
  { name: 'client', files: /^lambdas\/client\//, may: [], packages: 'any' },
  /** Each function (lambdas/core/postdateFunctions.ts) may use the layers below, never another function. */
  ...POSTDATE_FUNCTIONS.map(
    (name): Layer => ({
      name,
      files: new RegExp(`^lambdas/${name}/`),
      may: BELOW_FUNCTIONS,
      packages: 'any',
    }),
  ),
  /** The CDK: core (settings, routes, metric names, limits) and the table's layout, never a function. */
  { name: 'lib', files: /^lib\//, may: ['core', 'records'], packages: 'any' },
  { name: 'local', files: /^local\//, may: [...ALL_LAMBDAS, 'lib'], packages: 'any' },
  { name: 'cli', files: /^cli\//, may: [...ALL_LAMBDAS, 'client', 'lib'], packages: 'any' },
  { name: 'chaos', files: /^chaos\//, may: [...ALL_LAMBDAS, 'lib', 'local', 'cli'], packages: 'any' },
  { name: 'bench', files: /^bench\//, may: [...ALL_LAMBDAS, 'lib', 'local', 'cli'], packages: 'any' },
  { name: 'test', files: /^test\//, may: [], packages: 'any' },
];

/** Single edges that the layers above would refuse, each with the reason it stands. */
export const ALLOWED_EDGES: readonly { readonly from: string; readonly to: string; readonly why: string }[] =
  [
    {
      from: 'cli/target.ts',
      to: 'local/localEnv.ts',
      why: 'the `local` target reaches the local stack on its default ports',
    },
    {
      from: 'cli/target.ts',
      to: 'local/stackFile.ts',
      why: 'the `local` target finds a stack `npm start` runs on other ports from the file it writes',
    },
    {
      from: 'lambdas/api/createApiHandler.ts',
      to: 'docs/openapi.json',
      why: 'GET /openapi.json serves the document generated at build time (openapiDocument.test.ts keeps it fresh), so the generator stays out of the api bundle',
    },
    {
      from: 'lambdas/client/createPostdateClient.ts',
      to: 'lambdas/core/requestLimits.ts',
      why: "an enqueue's Idempotency-Key is refused before it is sent by the API's own rule, not a copy of it (plain values: the file and problem.ts beside it import nothing at run time)",
    },
    {
      from: 'lambdas/client/retryingFetch.ts',
      to: 'lambdas/core/errorForLog.ts',
      why: "a network error's message names its path through the logs' own address rule (redactAddresses), not a copy of it (the file imports nothing)",
    },
    {
      from: 'bench/burst.ts',
      to: 'chaos/smtpTap.ts',
      why: "the burst times a message's arrival by the relay's 250 to its final dot, which the chaos run's SMTP tap records (decision 0122)",
    },
  ];

export function layerOf(file: string): Layer | undefined {
  return LAYERS.find((layer) => layer.files.test(file));
}

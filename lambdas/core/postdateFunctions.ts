/**
 * The functions of Postdate, the one list: each is `lambdas/{name}/handler.ts`, exporting `handler`,
 * deployed as its own Lambda (`postdate-{name}`, logging as service `postdate-{name}`). The import
 * rules (test/architecture/), the package build (scripts/bundleFunctions.ts), the CDK construct, the
 * local stack and docs/architecture.md all read it; a test fails when the page names others.
 *
 * In the order the build writes their bundles. `bounces` is deployed only when the construct is
 * given the SES notification topic (lib/constructs/Bounces.ts).
 */
export const POSTDATE_FUNCTIONS = [
  'api',
  'authorizer',
  'relay',
  'sender',
  'sweeper',
  'bounces',
  'events',
  'webhooks',
] as const;

export type PostdateFunctionName = (typeof POSTDATE_FUNCTIONS)[number];

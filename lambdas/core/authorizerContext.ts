/**
 * What the Lambda authorizer hands the api function for an authorized request (API Gateway's
 * `requestContext.authorizer.lambda`): the contract between the two functions, defined once.
 */
export interface AuthorizerContext {
  /** The tenant id: the tenant's name, or for a test key its test side (`acme.test`, core/testSide.ts). */
  readonly tenant: string;
  /** The API key's id (never its secret): for logs and the audit trail. */
  readonly key_id: string;
}

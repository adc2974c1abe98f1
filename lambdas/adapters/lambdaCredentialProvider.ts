/**
 * The credential chain of the function bundles, in place of `@aws-sdk/credential-provider-node`'s
 * `defaultProvider` (esbuild aliases the one to the other: lib/constructs/postdateFunction.ts).
 *
 * Lambda hands a function its role's credentials in the environment (`AWS_ACCESS_KEY_ID`,
 * `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`); where a runtime serves them over HTTP instead
 * (`AWS_CONTAINER_CREDENTIALS_FULL_URI` / `_RELATIVE_URI`) they are read there, as the SDK's own
 * chain would. The SSO, ini, process, web-identity and instance-metadata links of the SDK's chain
 * can never answer inside Lambda, yet they and their nested STS/SSO clients are a fifth of a small
 * bundle (docs/decisions/). The local stack and the tests run the SDK's own chain: this module is
 * only ever bundled.
 */
import { fromEnv } from '@aws-sdk/credential-provider-env';
import { fromHttp } from '@aws-sdk/credential-provider-http';
import { doesIdentityRequireRefresh, isIdentityExpired, memoizeIdentityProvider } from '@smithy/core';
import type { AwsCredentialIdentityProvider } from '@smithy/types';

type ProviderInit = Parameters<typeof fromEnv>[0] & Parameters<typeof fromHttp>[0];

/** The variables with which a runtime says it serves credentials over HTTP. */
export const SERVED_CREDENTIAL_VARIABLES = [
  'AWS_CONTAINER_CREDENTIALS_FULL_URI',
  'AWS_CONTAINER_CREDENTIALS_RELATIVE_URI',
] as const;

/**
 * The SDK's `credentialDefaultProvider` contract: called once per client with its config. Memoized
 * as the SDK's chain is (served credentials are fetched again shortly before they expire).
 */
export const defaultProvider = (init: ProviderInit = {}): AwsCredentialIdentityProvider => {
  const served = SERVED_CREDENTIAL_VARIABLES.some((name) => process.env[name]);
  const provider = served ? fromHttp(init) : fromEnv(init);
  // `undefined` only for an undefined provider; the fallback satisfies the type.
  return memoizeIdentityProvider(provider, isIdentityExpired, doesIdentityRequireRefresh) ?? provider;
};

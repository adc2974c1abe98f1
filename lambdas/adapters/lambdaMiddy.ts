import middy from '@middy/core';

/**
 * The middy instance every function is built on. Its one setting: no early timeout. Lambda kills
 * an invocation at its timeout and resets the sandbox, so none of its work goes on; the lease and
 * claim rules rest on that. middy's default answers a `TimeoutError` 5 ms before the deadline
 * instead and leaves the handler running in a sandbox that Lambda freezes and thaws at its next
 * invocation, after the lease: a send that nobody holds any more.
 */
export function lambdaMiddy<TEvent, TResult>() {
  return middy<TEvent, TResult>({ timeoutEarlyInMillis: 0 });
}

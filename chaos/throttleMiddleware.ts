import { DynamoDBClient, ProvisionedThroughputExceededException } from '@aws-sdk/client-dynamodb';

/**
 * DynamoDB throttling, injected as an SDK middleware: the one fault no local part can produce
 * (DynamoDB Local never throttles). A fraction of DynamoDB calls throw
 * `ProvisionedThroughputExceededException` or `ThrottlingException` before the request is sent,
 * inside the SDK's retry middleware, so the SDK's own retries with backoff see them exactly as they
 * would see the service's answer; what the SDK gives up on reaches the handlers.
 *
 * The handlers build their clients at cold start and the local stack gives no way to hand them a
 * middleware, so the middleware is added to every DynamoDB client (and document client, which
 * shares its client's middleware stack) of this process on its first `send`. Only the chaos
 * runner's stack process calls this.
 */
export interface ThrottleStats {
  readonly calls: number;
  readonly throttled: number;
}

const MIDDLEWARE_NAME = 'chaosDynamoDbThrottle';

interface MiddlewareStackLike {
  add(middleware: unknown, options: { step: string; priority?: string; name: string }): void;
}

export function installDynamoDbThrottling(rate: number, random: () => number): ThrottleStats {
  const stats = { calls: 0, throttled: 0 };
  if (rate <= 0) return stats;
  const base = Object.getPrototypeOf(DynamoDBClient.prototype) as {
    send: (
      this: { config?: { serviceId?: string }; middlewareStack: MiddlewareStackLike },
      ...args: unknown[]
    ) => unknown;
  };
  const originalSend = base.send;
  const patched = new WeakSet<object>();
  const throttleMiddleware =
    (next: (args: unknown) => Promise<unknown>) =>
    async (args: unknown): Promise<unknown> => {
      stats.calls += 1;
      if (random() < rate) {
        stats.throttled += 1;
        throw throttlingError(random() < 0.5);
      }
      return next(args);
    };
  base.send = function sendWithThrottling(...args: unknown[]) {
    if (this.config?.serviceId === 'DynamoDB' && !patched.has(this.middlewareStack)) {
      patched.add(this.middlewareStack);
      // The deserialize step is the innermost: after signing and inside the retry middleware.
      this.middlewareStack.add(throttleMiddleware, {
        step: 'deserialize',
        priority: 'high',
        name: MIDDLEWARE_NAME,
      });
    }
    return originalSend.apply(this, args);
  };
  return stats;
}

function throttlingError(provisioned: boolean): Error {
  const $metadata = { httpStatusCode: 400, attempts: 1, totalRetryDelay: 0 };
  if (provisioned) {
    return new ProvisionedThroughputExceededException({
      message: 'The level of configured provisioned throughput for the table was exceeded (chaos)',
      $metadata,
    });
  }
  return Object.assign(new Error('Rate of requests exceeds the allowed throughput (chaos)'), {
    name: 'ThrottlingException',
    $fault: 'client',
    $metadata,
  });
}

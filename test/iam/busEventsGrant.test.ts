import { describe, expect, it } from 'vitest';
import type { RecordedAwsRequest } from '../../lambdas/adapters/awsClients.js';
import type { Webhooks } from '../../lib/constructs/Webhooks.js';
import type { PostdateProps } from '../../lib/postdateProps.js';
import { logicalIdOf, synthesizePostdate, TEST_PROPS } from '../cdk/support/synthesize.js';
import { iamRequestsOf } from './iamRequests.js';
import { simulate, templateResolver } from './templatePolicies.js';

/**
 * DESIGN §6, "Permissions are part of the contract"; decision 0178. IAM sees a PutEvents with its
 * entries' sources and detail-types (`events:source`, `events:detail-type`), so with `busEvents` a
 * list the producer may put only those types, from Postdate's source; with `'all'` every type, from that source (the
 * main proof, permissions.test.ts, drives it); with `'none'` it has no grant (test/cdk/webhooks.test.ts).
 */

const BUS = 'postdate-grant-bus';

/** The event producer's role, and its answer to one PutEvents as the producer sends it. */
function producerOf(busEvents: PostdateProps['busEvents']) {
  const { template, stack } = synthesizePostdate({
    ...TEST_PROPS,
    postdate: { ...TEST_PROPS.postdate, busEvents },
  });
  const webhooks = stack.postdate.node.findChild('Webhooks') as Webhooks;
  const { resolve } = templateResolver(template, { [logicalIdOf(webhooks.eventBus)]: BUS });
  const role = template.toJSON().Resources[logicalIdOf(webhooks.producer.function)].Properties.Role[
    'Fn::GetAtt'
  ][0] as string;
  /** The decision on one PutEvents of these entries. */
  return async (entries: readonly { source: string; type: string }[]): Promise<string> => {
    const recorded: RecordedAwsRequest = {
      function: 'events',
      hostname: 'events.us-east-1.amazonaws.com',
      method: 'POST',
      path: '/',
      query: {},
      target: 'AWSEvents.PutEvents',
      body: JSON.stringify({
        Entries: entries.map((entry) => ({
          EventBusName: BUS,
          Source: entry.source,
          DetailType: entry.type,
          Detail: '{}',
        })),
      }),
    };
    const [request, ...more] = iamRequestsOf(recorded);
    if (request === undefined || more.length > 0) throw new Error('one bus, one request');
    return simulate(template, role, request, resolve);
  };
}

describe("the event producer's events:PutEvents grant follows busEvents", () => {
  it('with a list, allows those types from source postdate, and nothing else', async () => {
    const put = producerOf(['message.sent', 'message.dead']);
    const sent = { source: 'postdate', type: 'message.sent' };
    const dead = { source: 'postdate', type: 'message.dead' };
    expect(await put([sent])).toBe('Allowed');
    expect(await put([sent, dead])).toBe('Allowed');
    expect(await put([{ source: 'postdate', type: 'message.scheduled' }])).toBe('ImplicitlyDenied');
    expect(await put([sent, { source: 'postdate', type: 'message.scheduled' }])).toBe('ImplicitlyDenied');
    expect(await put([{ source: 'someone.else', type: 'message.sent' }])).toBe('ImplicitlyDenied');
  });

  it("with 'all', allows every type the producer puts, from source postdate only", async () => {
    const put = producerOf('all');
    const scheduled = { source: 'postdate', type: 'message.scheduled' };
    expect(await put([scheduled, { source: 'postdate', type: 'message.suppressed' }])).toBe('Allowed');
    // The bus may be a deployment's own: the producer never speaks for another source on it.
    expect(await put([{ source: 'someone.else', type: 'message.sent' }])).toBe('ImplicitlyDenied');
    expect(await put([scheduled, { source: 'someone.else', type: 'message.sent' }])).toBe('ImplicitlyDenied');
  });
});

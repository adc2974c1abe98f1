/**
 * The table's two stream readers (DESIGN §4, docs/capacity.md) read with the batching windows of
 * lib/eventSourceLayout.ts, the numbers the local stream runners use too. Neither gathers: the relay
 * so that a message due now still leaves within about a second (docs/decisions/0095-stream-batching-windows.md),
 * the event producer so that a status change's webhook arrives within a second at p99 (issue 32,
 * docs/decisions/0113-webhook-latency-without-a-window.md).
 */
import { Match } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { EVENTS_STREAM, RELAY_STREAM } from '../../lib/eventSourceLayout.js';
import { EVENTS_STREAM_FILTER } from '../../lib/webhookLayout.js';
import { synthesizePostdate } from './support/synthesize.js';

const { template } = synthesizePostdate();

const streamMappings = () =>
  Object.values(
    template.findResources('AWS::Lambda::EventSourceMapping', {
      Properties: { EventSourceArn: { 'Fn::GetAtt': [Match.anyValue(), 'StreamArn'] } },
    }),
  ).map((resource) => resource.Properties as Record<string, unknown>);

describe('the stream readers’ batching windows', () => {
  it('neither the event producer nor the relay waits to gather a batch', () => {
    const mappings = streamMappings();
    expect(mappings).toHaveLength(2);
    const isEvents = (mapping: Record<string, unknown>) =>
      JSON.stringify(mapping.FilterCriteria).includes(
        JSON.stringify(JSON.stringify(EVENTS_STREAM_FILTER)).slice(1, -1),
      );
    const events = mappings.filter(isEvents);
    const relay = mappings.filter((mapping) => !isEvents(mapping));
    expect(events.map((mapping) => mapping.MaximumBatchingWindowInSeconds ?? 0)).toEqual([
      EVENTS_STREAM.batchingWindowSeconds,
    ]);
    expect(relay.map((mapping) => mapping.MaximumBatchingWindowInSeconds ?? 0)).toEqual([
      RELAY_STREAM.batchingWindowSeconds,
    ]);
    // Whole seconds: even 1 s on the event producer holds a webhook past its 1 s p99 (issue 32).
    expect(EVENTS_STREAM.batchingWindowSeconds).toBe(0);
    // A whole second on the relay would hold a message due now past "within about a second".
    expect(RELAY_STREAM.batchingWindowSeconds).toBe(0);
  });
});

/**
 * The table's two stream readers (DESIGN §4, docs/capacity.md) read with the batching windows of
 * lib/eventSourceLayout.ts, the numbers the local stream runners use too: the event producer gathers
 * up to a second (fewer invocations, endpoint reads and PutEvents calls per event); the relay none, so
 * a message due now still leaves within about a second (docs/decisions/0095-stream-batching-windows.md).
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
  it('the event producer gathers for a second, the relay not at all', () => {
    const mappings = streamMappings();
    expect(mappings).toHaveLength(2);
    const isEvents = (mapping: Record<string, unknown>) =>
      JSON.stringify(mapping.FilterCriteria).includes(
        JSON.stringify(JSON.stringify(EVENTS_STREAM_FILTER)).slice(1, -1),
      );
    const events = mappings.filter(isEvents);
    const relay = mappings.filter((mapping) => !isEvents(mapping));
    expect(events.map((mapping) => mapping.MaximumBatchingWindowInSeconds)).toEqual([
      EVENTS_STREAM.batchingWindowSeconds,
    ]);
    expect(relay.map((mapping) => mapping.MaximumBatchingWindowInSeconds ?? 0)).toEqual([
      RELAY_STREAM.batchingWindowSeconds,
    ]);
    expect(EVENTS_STREAM.batchingWindowSeconds).toBe(1);
    // A whole second on the relay would hold a message due now past "within about a second".
    expect(RELAY_STREAM.batchingWindowSeconds).toBe(0);
  });
});

import { type EventBridgeClient, PutEventsCommand } from '@aws-sdk/client-eventbridge';
import { EVENT_SOURCE, type PostdateEvent } from '../core/messageEvents.js';
import { PostdateError } from '../core/postdateError.js';
import type { EventBus } from '../ports/Webhooks.js';

/** PutEvents takes at most ten entries. */
const PUT_EVENTS_MAX = 10;

/** Events on an EventBridge bus: `source: postdate`, `detail-type` = the event's type, detail = the event. */
export class EventBridgeBus implements EventBus {
  constructor(
    private readonly client: EventBridgeClient,
    private readonly busName: string,
  ) {}

  async publish(
    events: readonly PostdateEvent[],
  ): Promise<{ readonly failed: readonly PostdateEvent[]; readonly error?: unknown }> {
    const failed: PostdateEvent[] = [];
    let firstError: unknown;
    const chunks: PostdateEvent[][] = [];
    for (let start = 0; start < events.length; start += PUT_EVENTS_MAX) {
      chunks.push(events.slice(start, start + PUT_EVENTS_MAX));
    }
    await Promise.all(
      chunks.map(async (chunk) => {
        try {
          const result = await this.client.send(
            new PutEventsCommand({
              Entries: chunk.map((event) => ({
                EventBusName: this.busName,
                Source: EVENT_SOURCE,
                DetailType: event.type,
                Detail: JSON.stringify(event),
                Time: new Date(event.created_at),
              })),
            }),
          );
          // Entries answer in order; a refused one has an ErrorCode.
          (result.Entries ?? []).forEach((entry, index) => {
            const event = chunk[index];
            if (entry.ErrorCode && event) {
              failed.push(event);
              firstError ??= new PostdateError(`EventBridge refused an event (${entry.ErrorCode})`, {
                class: 'transient',
              });
            }
          });
        } catch (error) {
          failed.push(...chunk);
          firstError ??= error;
        }
      }),
    );
    return firstError === undefined ? { failed } : { failed, error: firstError };
  }
}

import { readFileSync } from 'node:fs';
import { describe, expect, expectTypeOf, it } from 'vitest';
import type { WebhookEvent, webhooks } from '../../lambdas/client/index.js';
import type { EventType } from '../../lambdas/core/messageEvents.js';
import { CLIENT_TYPES_FILE, clientTypesSource } from '../../scripts/clientTypes.js';

describe("the client's types", () => {
  it('are exactly what openapi-typescript generates from the OpenAPI document (`npm run client:types`)', async () => {
    const committed = readFileSync(CLIENT_TYPES_FILE, 'utf8');
    expect(committed, 'lambdas/client/openapiTypes.ts is stale: run `npm run client:types`').toBe(
      await clientTypesSource(),
    );
  }, 60_000);

  it('type every event a webhook endpoint can receive, one `webhooks` entry per type (DESIGN §11)', () => {
    expectTypeOf<WebhookEvent['type']>().toEqualTypeOf<EventType>();
    expectTypeOf<keyof webhooks>().toEqualTypeOf<EventType>();
    type SentBody = webhooks['message.sent']['post']['requestBody']['content']['application/json'];
    expectTypeOf<SentBody['type']>().toEqualTypeOf<'message.sent'>();
    expectTypeOf<
      Extract<WebhookEvent, { type: 'webhook.test' }>['data']['webhook_id']
    >().toEqualTypeOf<string>();
  });
});

/**
 * Rotating an endpoint's signing secret (DESIGN §3): `POST /v1/webhooks/{id}/rotate-secret` answers
 * 200 with a new `whsec_` secret; for 24 h every delivery carries a signature with the old secret
 * beside the new one (Standard Webhooks: several space-separated signatures), so a receiver holding
 * either verifies — checked with `standardwebhooks`, the reference implementation; after 24 h only
 * the new one signs.
 */
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { Webhook } from 'standardwebhooks';
import { afterEach, describe, expect, it } from 'vitest';
import { KEY } from '../../lambdas/store/tableLayout.js';
import { WEBHOOK_PARTITION_PREFIX } from '../../lambdas/store/webhookStore.js';
import { documentClient } from '../support/awsLocal.js';
import { type Received, startReceiver, subscribe, webhookHarness } from './webhookHarness.js';

const receivers: Awaited<ReturnType<typeof startReceiver>>[] = [];
afterEach(async () => {
  await Promise.all(receivers.splice(0).map((started) => started.close()));
});

const headersOf = (request: Received) => ({
  'webhook-id': String(request.headers['webhook-id']),
  'webhook-timestamp': String(request.headers['webhook-timestamp']),
  'webhook-signature': String(request.headers['webhook-signature']),
});

/** The signature `secret` makes for this request (the reference library's own `sign`). */
const signatureBy = (secret: string, request: Received) => {
  const headers = headersOf(request);
  return new Webhook(secret).sign(
    headers['webhook-id'],
    new Date(Number(headers['webhook-timestamp']) * 1000),
    request.body,
  );
};

describe('POST /v1/webhooks/{id}/rotate-secret', () => {
  it('answers a new secret; both sign for 24 h, then only the new one', async () => {
    const harness = await webhookHarness();
    const hook = await startReceiver();
    receivers.push(hook);
    const endpoint = await subscribe(harness, hook.url());

    const rotated = await harness.call({ method: 'POST', path: `/v1/webhooks/${endpoint.id}/rotate-secret` });
    expect(rotated.status).toBe(200);
    const secret = rotated.json.secret as string;
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(secret).not.toBe(endpoint.secret);
    expect(rotated.json).toMatchObject({ id: endpoint.id, url: hook.url() });
    expect(Date.parse(rotated.json.previous_secret_expires_at) - harness.clock.now().getTime()).toBe(
      24 * 3_600_000,
    );
    // Shown once: the endpoint's other answers never carry it.
    const shown = await harness.call({ method: 'GET', path: `/v1/webhooks/${endpoint.id}` });
    expect(JSON.stringify(shown.json)).not.toContain(secret);

    await harness.call({ method: 'POST', path: `/v1/webhooks/${endpoint.id}/test` });
    await harness.pump();
    const [during] = hook.received;
    if (!during) throw new Error('nothing received during the overlap');
    // A receiver holding either secret verifies the same delivery.
    expect(() => new Webhook(endpoint.secret).verify(during.body, headersOf(during))).not.toThrow();
    expect(() => new Webhook(secret).verify(during.body, headersOf(during))).not.toThrow();
    expect(headersOf(during)['webhook-signature'].split(' ')).toHaveLength(2);

    harness.clock.advance(24 * 3_600_000 + 1000);
    await harness.call({ method: 'POST', path: `/v1/webhooks/${endpoint.id}/test` });
    await harness.pump();
    const after = hook.received[1];
    if (!after) throw new Error('nothing received after the overlap');
    // (Its timestamp is a day ahead of the real clock, so the signatures are compared, not verified.)
    expect(headersOf(after)['webhook-signature']).toBe(signatureBy(secret, after));
    expect(headersOf(after)['webhook-signature']).not.toContain(signatureBy(endpoint.secret, after));
  });

  it('rotated twice at once, both answer 200 and no secret is lost to the race: the first and both new ones sign', async () => {
    const harness = await webhookHarness();
    const hook = await startReceiver();
    receivers.push(hook);
    const endpoint = await subscribe(harness, hook.url());
    const rotate = () => harness.call({ method: 'POST', path: `/v1/webhooks/${endpoint.id}/rotate-secret` });

    const answers = await Promise.all([rotate(), rotate()]);
    expect(answers.map((answer) => answer.status)).toEqual([200, 200]);
    const secrets = answers.map((answer) => answer.json.secret as string);
    expect(new Set(secrets).size).toBe(2);

    await harness.call({ method: 'POST', path: `/v1/webhooks/${endpoint.id}/test` });
    await harness.pump();
    const [delivered] = hook.received;
    if (!delivered) throw new Error('nothing received after the rotations');
    // One of the two is current, the other retired by the later rotation: a receiver holding any verifies.
    for (const secret of [endpoint.secret, ...secrets])
      expect(() => new Webhook(secret).verify(delivered.body, headersOf(delivered))).not.toThrow();
    expect(headersOf(delivered)['webhook-signature'].split(' ')).toHaveLength(3);
  });

  it('rotated again within the day, every retired secret still signs until its own 24 h are over', async () => {
    const harness = await webhookHarness();
    const hook = await startReceiver();
    receivers.push(hook);
    const endpoint = await subscribe(harness, hook.url());
    const rotate = async () => {
      const rotated = await harness.call({
        method: 'POST',
        path: `/v1/webhooks/${endpoint.id}/rotate-secret`,
      });
      expect(rotated.status).toBe(200);
      return rotated.json.secret as string;
    };
    /** The signatures of a test event delivered now, and the secrets they were made with. */
    const signersNow = async () => {
      await harness.call({ method: 'POST', path: `/v1/webhooks/${endpoint.id}/test` });
      const before = hook.received.length;
      await harness.pump({ until: () => hook.received.length > before });
      const request = hook.received.at(-1);
      if (!request || hook.received.length === before) throw new Error('nothing received');
      const signatures = headersOf(request)['webhook-signature'].split(' ');
      return (secret: string) => signatures.includes(signatureBy(secret, request));
    };

    const first = endpoint.secret;
    const second = await rotate(); // `first` signs beside it for 24 h from now
    harness.clock.advance(3_600_000);
    const third = await rotate(); // `second` signs beside it for 24 h from now; `first` has 23 h left

    const during = await signersNow();
    expect([first, second, third].map(during)).toEqual([true, true, true]);

    harness.clock.advance(23 * 3_600_000 + 1000); // past the first rotation's 24 h
    const later = await signersNow();
    expect([first, second, third].map(later)).toEqual([false, true, true]);

    harness.clock.advance(3_600_000); // past the second's
    const last = await signersNow();
    expect([first, second, third].map(last)).toEqual([false, false, true]);
  });

  it('keeps the previous secret of an endpoint rotated before retired secrets were kept as a list', async () => {
    const harness = await webhookHarness();
    const hook = await startReceiver();
    receivers.push(hook);
    const endpoint = await subscribe(harness, hook.url());
    // As the one-previous-secret rotation wrote it (decision 0053): attributes of their own.
    const legacyUntil = new Date(harness.clock.now().getTime() + 12 * 3_600_000).toISOString();
    await documentClient().send(
      new UpdateCommand({
        TableName: harness.tableName,
        Key: { [KEY.partition]: `${WEBHOOK_PARTITION_PREFIX.endpoint}acme`, [KEY.sort]: endpoint.id },
        UpdateExpression: 'SET previous_secret = :previous, previous_secret_until = :until',
        ExpressionAttributeValues: {
          ':previous': 'whsec_bGVnYWN5LXByZXZpb3VzLXNlY3JldC0wMTIzNDU2Nzg5',
          ':until': legacyUntil,
        },
      }),
    );
    const rotated = await harness.call({ method: 'POST', path: `/v1/webhooks/${endpoint.id}/rotate-secret` });
    expect(rotated.status).toBe(200);
    const stored = await harness.store.getEndpoint('acme', endpoint.id);
    expect(stored?.retiredSecrets).toEqual([
      { secret: endpoint.secret, until: rotated.json.previous_secret_expires_at },
      { secret: 'whsec_bGVnYWN5LXByZXZpb3VzLXNlY3JldC0wMTIzNDU2Nzg5', until: legacyUntil },
    ]);
  });

  it("answers 404 for another tenant's endpoint or an unknown id, and changes nothing", async () => {
    const harness = await webhookHarness();
    const hook = await startReceiver();
    receivers.push(hook);
    const endpoint = await subscribe(harness, hook.url());
    const foreign = await harness.call({
      method: 'POST',
      path: `/v1/webhooks/${endpoint.id}/rotate-secret`,
      tenant: 'other',
    });
    expect(foreign.status).toBe(404);
    const unknown = await harness.call({
      method: 'POST',
      path: '/v1/webhooks/whe_01JE0000000000000000000000/rotate-secret',
    });
    expect(unknown.status).toBe(404);
    await harness.call({ method: 'POST', path: `/v1/webhooks/${endpoint.id}/test` });
    await harness.pump();
    const [request] = hook.received;
    if (!request) throw new Error('nothing received');
    expect(headersOf(request)['webhook-signature']).toBe(signatureBy(endpoint.secret, request));
  });
});

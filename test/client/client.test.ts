import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createPostdateClient,
  type PostdateClient,
  PostdateProblemError,
  paginate,
} from '../../lambdas/client/index.js';
import { loadConfig } from '../../lambdas/core/config.js';
import { ANY_FREE_PORTS } from '../../local/localEnv.js';
import { type LocalStack, startLocalStack } from '../../local/localStack.js';

const API_KEY = 'pd_client-spec-key-0001';
const run = Date.now().toString(36);

describe('postdate/client against the local stack', () => {
  let stack: LocalStack;
  let postdate: PostdateClient;

  beforeAll(async () => {
    const config = loadConfig({ POSTDATE_API_KEY: API_KEY }, 'local');
    stack = await startLocalStack({ config, ports: ANY_FREE_PORTS, quiet: true });
    postdate = createPostdateClient({ baseUrl: stack.apiUrl, apiKey: stack.apiKey });
  }, 90_000);

  afterAll(async () => {
    await stack?.stop();
  });

  const later = () => new Date(Date.now() + 3_600_000).toISOString();

  it('enqueues with the given Idempotency-Key; the same key and body again is the replay of the same message', async () => {
    const request = { to: ['ada@example.com'], subject: 'Client', text: 'Typed.', send_at: later() };
    const first = await postdate.enqueue(request, { idempotencyKey: `client-${run}-1` });
    expect(first.replayed).toBe(false);
    expect(first.message.status).toBe('scheduled');
    const again = await postdate.enqueue(request, { idempotencyKey: `client-${run}-1` });
    expect(again.replayed).toBe(true);
    expect(again.message.id).toBe(first.message.id);
    expect(await postdate.get(first.message.id)).toMatchObject({ id: first.message.id, status: 'scheduled' });
  });

  it('enqueues a batch: one result per item in order, and the same batch again is all replays', async () => {
    const messages = [0, 1, 2].map((i) => ({
      idempotency_key: `client-${run}-batch-${i}`,
      to: ['ada@example.com'],
      subject: 'Batch',
      text: `Item ${i}.`,
      send_at: later(),
    }));
    const first = await postdate.enqueueBatch({ messages });
    expect(first.results.map((result) => [result.index, result.status])).toEqual([
      [0, 202],
      [1, 202],
      [2, 202],
    ]);
    const again = await postdate.enqueueBatch({ messages });
    expect(again.results.map((result) => result.replayed)).toEqual([true, true, true]);
    expect(again.results.map((result) => result.message?.id)).toEqual(
      first.results.map((result) => result.message?.id),
    );
  });

  it('makes a key when none is given', async () => {
    const { idempotencyKey, message } = await postdate.enqueue({
      to: ['bob@example.com'],
      subject: 'Client',
      text: 'Generated key.',
      send_at: later(),
    });
    expect(idempotencyKey.length).toBeGreaterThan(0);
    const again = await postdate.enqueue(
      { to: ['bob@example.com'], subject: 'Client', text: 'Generated key.', send_at: message.send_at },
      { idempotencyKey },
    );
    expect(again.message.id).toBe(message.id);
  });

  it('reschedules, lists and cancels through the typed calls', async () => {
    const { message } = await postdate.enqueue(
      { to: ['cy@example.com'], subject: 'Client', text: 'Moves.', send_at: later() },
      { idempotencyKey: `client-${run}-2` },
    );
    const sendAt = new Date(Date.now() + 7_200_000).toISOString();
    const moved = await postdate.reschedule(message.id, { send_at: sendAt });
    expect(moved.rev).toBe(message.rev + 1);
    expect(Date.parse(moved.send_at)).toBe(Date.parse(sendAt));
    const page = await postdate.list({ status: 'scheduled' });
    expect(page.items.map((item) => item.id)).toContain(message.id);
    expect((await postdate.cancel(message.id)).status).toBe('cancelled');
  });

  it('throws the API problem, typed: a 400 names the fields, a 422 is a reused key, a 409 the current status', async () => {
    const invalid = await postdate
      .enqueue({ to: [], subject: 'Client', text: 'No one.' } as never)
      .catch((error: unknown) => error);
    expect(invalid).toBeInstanceOf(PostdateProblemError);
    expect(invalid).toMatchObject({ status: 400, type: 'urn:postdate:problem:validation' });
    expect((invalid as PostdateProblemError).errors.map((error) => error.field)).toContain('/to');

    const key = `client-${run}-3`;
    const { message } = await postdate.enqueue(
      { to: ['di@example.com'], subject: 'One', text: 'One.', send_at: later() },
      { idempotencyKey: key },
    );
    await expect(
      postdate.enqueue({ to: ['di@example.com'], subject: 'Two', text: 'Two.' }, { idempotencyKey: key }),
    ).rejects.toMatchObject({
      status: 422,
      type: 'urn:postdate:problem:idempotency-key-reused',
      idempotencyKey: key,
    });

    await postdate.cancel(message.id);
    await expect(postdate.cancel(message.id)).rejects.toMatchObject({
      status: 409,
      type: 'urn:postdate:problem:status-conflict',
      currentStatus: 'cancelled',
    });
  });

  it('throws a 404 problem for an unknown id, and a 403 for a key of no one', async () => {
    await expect(postdate.get('nope')).rejects.toMatchObject({ status: 404 });
    const stranger = createPostdateClient({ baseUrl: stack.apiUrl, apiKey: 'pd_not-a-key-of-anyone' });
    const error = await stranger.list().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(PostdateProblemError);
    expect((error as PostdateProblemError).status).toBe(403);
  });

  it('walks a list to its end with paginate, following next_cursor page after page', async () => {
    const enqueued = await Promise.all(
      [0, 1, 2, 3, 4].map((i) =>
        postdate.enqueue(
          { to: ['ed@example.com'], subject: 'Pages', text: `Page ${i}.`, send_at: later() },
          { idempotencyKey: `client-${run}-page-${i}` },
        ),
      ),
    );
    const listed: string[] = [];
    for await (const message of paginate((cursor) =>
      postdate.list({ status: 'scheduled', limit: 2, cursor }),
    )) {
      listed.push(message.id);
    }
    expect(listed).toEqual(expect.arrayContaining(enqueued.map(({ message }) => message.id)));
    expect(new Set(listed).size).toBe(listed.length);
  });
});

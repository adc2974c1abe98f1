/**
 * A batch's items afterwards (DESIGN §3a with §2, §3 and §5a): 500 order emails sent as a backend
 * does, in batches of 100 through the typed client over HTTP on the local stack, each stored item
 * then read, cancelled and sent as a single enqueue's would be, counted at the stack's SMTP sink (a
 * real smtp-server): one mail each, at or after its time; a refused item stored nowhere; the whole
 * run replayed changes and sends nothing. Covers lambdas/api/routes/enqueueBatch.ts end to end and
 * lambdas/client/createPostdateClient.ts (enqueueBatch); the review is docs/decisions/0245.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type BatchEnqueueRequest,
  createPostdateClient,
  type PostdateClient,
  PostdateProblemError,
} from '../../lambdas/client/index.js';
import { loadConfig } from '../../lambdas/core/config.js';
import { ANY_FREE_PORTS } from '../../local/localEnv.js';
import { type LocalStack, startLocalStack } from '../../local/localStack.js';
import { eventually } from '../support/eventually.js';

const run = Date.now().toString(36);
let stack: LocalStack;
let postdate: PostdateClient;

beforeAll(async () => {
  const config = loadConfig({ POSTDATE_API_KEY: 'pd_batch-local-spec-0001' }, 'local');
  stack = await startLocalStack({ config, ports: ANY_FREE_PORTS, quiet: true });
  postdate = createPostdateClient({ baseUrl: stack.apiUrl, apiKey: stack.apiKey });
}, 90_000);

afterAll(async () => {
  await stack?.stop();
});

type Item = BatchEnqueueRequest['messages'][number];

/** How many mails the sink received for each id. */
function mailsFor(ids: readonly string[]): number[] {
  const received = stack.smtpSink?.messages() ?? [];
  return ids.map((id) => received.filter((mail) => mail.postdateId === id).length);
}

describe('500 order emails in five batches, then each item as a single enqueue', () => {
  it('stores each valid item under its key, sends each once at or after its time, cancels one, stores no refused one, and a replay of the run sends nothing more', async () => {
    const later = new Date(Date.now() + 3_600_000).toISOString();
    const orders: Item[] = Array.from({ length: 500 }, (_, i) => ({
      idempotency_key: `order-${run}-${i}`,
      from: 'Shop <shop@example.com>',
      to: [`customer-${i}@example.com`],
      subject: `Order ${i} confirmed`,
      text: `Order ${i}.`,
      tags: { kind: 'order-confirmation' },
      // A few are due now or in two seconds (sent here); the rest wait an hour.
      ...(i < 3 ? {} : i < 6 ? { delay_seconds: 2 } : { send_at: later }),
    }));
    // One a client got wrong: refused alone, the others of its batch stored.
    orders[250] = { ...orders[250], to: ['not an address'] } as Item;
    const batches = [0, 1, 2, 3, 4].map((n) => orders.slice(n * 100, n * 100 + 100));

    const answers = [];
    for (const messages of batches) answers.push(await postdate.enqueueBatch({ messages }));
    const results = answers.flatMap((answer, n) =>
      answer.results.map((result) => ({ ...result, at: n * 100 + result.index })),
    );
    expect(results.map((result) => result.at)).toEqual(orders.map((_, i) => i));
    expect(
      results.filter((result) => result.status !== 202).map((result) => [result.at, result.status]),
    ).toEqual([[250, 400]]);
    expect(results[250]?.problem?.errors?.map((error) => error.field)).toEqual(['/messages/50/to/0']);
    const ids = results.map((result) => result.message?.id ?? '');
    expect(new Set(ids.filter(Boolean)).size).toBe(499);

    // Each stored item reads back as a single enqueue's message; the refused one is nowhere.
    const one = await postdate.get(ids[7] ?? '');
    expect(one).toMatchObject({ status: 'scheduled', send_at: later });
    expect(one.tags).toEqual({ kind: 'order-confirmation' });
    const listed = await postdate.list({ status: 'scheduled', limit: 100 });
    expect(listed.items.some((message) => message.id === ids[499])).toBe(true);

    // Cancel one that waits, as a single enqueue's message is cancelled.
    const cancelled = await postdate.cancel(ids[8] ?? '');
    expect(cancelled.status).toBe('cancelled');

    // The six due ones are sent, each once, none before its time.
    const due = ids.slice(0, 6);
    const sent = await eventually(
      'the six due orders sent',
      async () => {
        const views = await Promise.all(due.map((id) => postdate.get(id)));
        return views.every((view) => view.status === 'sent') ? views : undefined;
      },
      { withinMs: 60_000, everyMs: 250 },
    );
    for (const view of sent) {
      const firstAttempt = view.history?.[0]?.at ?? '';
      expect(Date.parse(firstAttempt)).toBeGreaterThanOrEqual(Date.parse(view.send_at));
    }
    expect(mailsFor(due)).toEqual([1, 1, 1, 1, 1, 1]);
    const [mail] = stack.smtpSink?.messages().filter((received) => received.postdateId === ids[4]) ?? [];
    expect(mail?.envelope.to).toEqual(['customer-4@example.com']);
    expect(mail?.subject).toBe('Order 4 confirmed');

    // The whole run again, as after a lost answer: every item replays, nothing is written or sent.
    const replays = [];
    for (const messages of batches) replays.push(await postdate.enqueueBatch({ messages }));
    const again = replays.flatMap((answer) => answer.results);
    expect(again.filter((result) => result.status === 200 && result.replayed)).toHaveLength(499);
    expect(again[250]?.status).toBe(400);
    expect(again[8]?.message?.status).toBe('cancelled');
    expect(again[0]?.message?.status).toBe('sent');
    // A sentinel sent after the replay: once it is at the sink, a second copy of a replayed order would be too.
    const { message: sentinel } = await postdate.enqueue(
      { from: 'shop@example.com', to: ['sentinel@example.com'], subject: 'Sentinel', text: 'After.' },
      { idempotencyKey: `sentinel-${run}` },
    );
    await eventually('the sentinel at the sink', () => mailsFor([sentinel.id])[0] === 1, {
      withinMs: 30_000,
      everyMs: 100,
    });
    expect(mailsFor(due)).toEqual([1, 1, 1, 1, 1, 1]);
    expect(mailsFor([ids[8] ?? ''])).toEqual([0]);
    // An id no message has: the first character changed (to `x`, or `y` when it was `x`: 1 run in 32).
    const known = ids[7] ?? '';
    const unknownId = `${known.startsWith('x') ? 'y' : 'x'}${known.slice(1)}`;
    const missing = await postdate.get(unknownId).catch((error: unknown) => error);
    expect(missing, String(missing) + JSON.stringify(missing)).toBeInstanceOf(PostdateProblemError);
  }, 120_000);
});

/**
 * What the client refuses of its caller's own input, typed and before anything is sent: an option of
 * createPostdateClient out of its range (a timeout of 0, NaN attempts), and an Idempotency-Key the API
 * would refuse (DESIGN §3: 1–255 printable characters) or no header can carry. A real HTTP server
 * records what reaches it.
 */
import { describe, expect, it } from 'vitest';
import {
  createPostdateClient,
  PostdateClientError,
  type PostdateClientOptions,
  PostdateInputError,
} from '../../lambdas/client/index.js';
import { type Answer, accepted, problemAnswer, scriptedServer } from './scriptedServer.js';

const REQUEST = { to: ['ada@example.com'], subject: 'Hi', text: 'Hello.' };

/** A real server answering every request with `answer`; `keys()`: the Idempotency-Key of each request that reached it. */
async function recordingServer(answer: Answer) {
  const { url, seen } = await scriptedServer([answer]);
  return { url, keys: () => seen.map((request) => request.idempotencyKey) };
}

function clientOf(url: string, options: Partial<PostdateClientOptions> = {}) {
  return createPostdateClient({ baseUrl: url, apiKey: 'pd_input-spec', sleep: async () => {}, ...options });
}

/** What making a client with `options` throws (undefined when it is made). */
function madeWith(options: Partial<PostdateClientOptions>): unknown {
  try {
    createPostdateClient({ baseUrl: 'http://127.0.0.1:1', apiKey: 'pd_input-spec', ...options });
    return undefined;
  } catch (error) {
    return error;
  }
}

/** `{"retry":{"maxAttempts":NaN}}`: JSON, with the numbers JSON cannot write. */
function show(options: Partial<PostdateClientOptions>): string {
  return JSON.stringify(options, (_, value) =>
    typeof value === 'number' && !Number.isFinite(value) ? `#${value}#` : value,
  ).replaceAll(/"#(.*?)#"/g, '$1');
}

describe('the client refuses an Idempotency-Key the API would refuse, typed, before sending', () => {
  const refused = [
    ['empty', ''],
    ['longer than 255 characters', 'k'.repeat(256)],
    ['with a newline (header injection)', 'order-7\r\nX-Injected: 1'],
    ['with a NUL', 'order\u00007'],
    ['with a tab', 'order\t7'],
    ['with a character beyond Latin-1', 'заказ-7'],
    ['with a Latin-1 character that is not ASCII', 'café-7'],
  ] as const;

  for (const [what, key] of refused) {
    it(`a key ${what}`, async () => {
      const { url, keys } = await recordingServer(accepted);
      const error = await clientOf(url)
        .enqueue(REQUEST, { idempotencyKey: key })
        .catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(PostdateClientError);
      expect(error).toMatchObject({ name: 'PostdateInputError', field: 'Idempotency-Key' });
      expect((error as Error).message).toContain('1–255 printable ASCII characters');
      expect(keys()).toEqual([]);
    });
  }

  it('a key the caller’s newIdempotencyKey makes, naming that option', async () => {
    const { url, keys } = await recordingServer(accepted);
    const error = await clientOf(url, { newIdempotencyKey: () => 'line\nbreak' })
      .enqueue(REQUEST)
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(PostdateInputError);
    expect(error).toMatchObject({ field: 'Idempotency-Key' });
    expect((error as Error).message).toContain('newIdempotencyKey');
    expect(keys()).toEqual([]);
  });

  it('but sends every key the API takes as it is: 1 character, 255, spaces and symbols inside', async () => {
    const { url, keys } = await recordingServer(accepted);
    const client = clientOf(url);
    const taken = ['k', 'k'.repeat(255), 'order 7 / shipped ~ "ok"', '!#$%&()*+,-./:;<=>?@[\\]^_`{|}'];
    for (const key of taken) {
      expect((await client.enqueue(REQUEST, { idempotencyKey: key })).idempotencyKey).toBe(key);
    }
    expect(keys()).toEqual(taken);
  });

  // DESIGN §3 takes the key "as in the IETF httpapi Idempotency-Key draft": an sf-string, quoted, whose
  // content is the key; a header value loses its leading and trailing whitespace on the way (Fetch's
  // "normalize", RFC 9110 §5.5). The API reads a key so; the client judges it the same way.
  it('reads a key as the API does: a quoted key of 255 characters is sent, as is one with a line end', async () => {
    const { url, keys } = await recordingServer(accepted);
    const client = clientOf(url);
    const quoted = `"${'k'.repeat(255)}"`;
    for (const key of [quoted, 'order-7\n', '  order-8  '])
      await client.enqueue(REQUEST, { idempotencyKey: key });
    expect(keys()).toEqual([quoted, 'order-7', 'order-8']);
  });

  it('and refuses one the API reads as no key: only spaces, an empty or unclosed quoted key', async () => {
    const { url, keys } = await recordingServer(accepted);
    for (const key of ['   ', '""', '"order-7']) {
      const error = await clientOf(url)
        .enqueue(REQUEST, { idempotencyKey: key })
        .catch((caught: unknown) => caught);
      expect(error, JSON.stringify(key)).toMatchObject({
        name: 'PostdateInputError',
        field: 'Idempotency-Key',
      });
    }
    expect(keys()).toEqual([]);
  });
});

describe('the client refuses, when it is made, an option out of its range, naming it and the range', () => {
  const refused: readonly [Partial<PostdateClientOptions>, string, RegExp][] = [
    [{ timeoutMs: 0 }, 'timeoutMs', /from 1 to 2147483647/],
    [{ timeoutMs: -1_000 }, 'timeoutMs', /from 1 to 2147483647/],
    [{ timeoutMs: Number.NaN }, 'timeoutMs', /got NaN/],
    [{ timeoutMs: Number.POSITIVE_INFINITY }, 'timeoutMs', /from 1 to 2147483647/],
    // A timer of 2^31 ms or more fires at once (Node warns and waits 1 ms).
    [{ timeoutMs: 2 ** 31 }, 'timeoutMs', /from 1 to 2147483647/],
    [{ retry: { maxAttempts: 0 } }, 'retry.maxAttempts', /whole number, 1 or more/],
    [{ retry: { maxAttempts: Number.NaN } }, 'retry.maxAttempts', /whole number, 1 or more/],
    [{ retry: { maxAttempts: 2.5 } }, 'retry.maxAttempts', /whole number, 1 or more/],
    [{ retry: { maxAttempts: Number.POSITIVE_INFINITY } }, 'retry.maxAttempts', /whole number, 1 or more/],
    [{ retry: { baseDelayMs: Number.NaN } }, 'retry.baseDelayMs', /from 0 to 2147483647/],
    [{ retry: { baseDelayMs: -1 } }, 'retry.baseDelayMs', /from 0 to 2147483647/],
    [{ retry: { maxDelayMs: -1 } }, 'retry.maxDelayMs', /from 0 to 2147483647/],
    [{ retry: { maxDelayMs: 2 ** 31 } }, 'retry.maxDelayMs', /from 0 to 2147483647/],
    [
      { retry: { maxRetryAfterMs: Number.POSITIVE_INFINITY } },
      'retry.maxRetryAfterMs',
      /from 0 to 2147483647/,
    ],
    [
      { retry: { attempts: 1 } as never },
      'retry.attempts',
      /maxAttempts, baseDelayMs, maxDelayMs, maxRetryAfterMs/,
    ],
  ];

  for (const [options, field, range] of refused) {
    it(`${field}: ${show(options)}`, () => {
      const error = madeWith(options);
      expect(error).toBeInstanceOf(PostdateClientError);
      expect(error).toMatchObject({ name: 'PostdateInputError', field });
      expect((error as Error).message).toMatch(range);
    });
  }

  it('the same error, naming the option, for a baseUrl that is no http(s) URL and an API key no header carries', () => {
    expect(madeWith({ baseUrl: 'api.example.com' })).toMatchObject({
      name: 'PostdateInputError',
      field: 'baseUrl',
    });
    const badKey = madeWith({ apiKey: 'pd_top secret' });
    expect(badKey).toMatchObject({ name: 'PostdateInputError', field: 'apiKey' });
    expect((badKey as Error).message).not.toContain('secret');
  });

  it('refuses plain http to any host but this machine: the API key would cross the network in clear (decision 0249)', () => {
    for (const baseUrl of ['http://api.example.com', 'http://10.0.0.5:3000', 'HTTP://Postdate.Example/v1']) {
      const error = madeWith({ baseUrl });
      expect(error, baseUrl).toMatchObject({ name: 'PostdateInputError', field: 'baseUrl' });
      expect((error as Error).message).toMatch(/https/);
    }
    // The local stack (DESIGN §7: on loopback) and every https URL.
    for (const baseUrl of [
      'http://localhost:3000',
      'http://127.0.0.1:3000',
      'http://127.1.2.3',
      'http://[::1]:3000',
      'http://api.localhost:3000',
      'https://api.example.com',
      'https://10.0.0.5',
    ]) {
      expect(madeWith({ baseUrl }), baseUrl).toBeUndefined();
    }
    // A local stack in a container is reached over plain http by name, when the caller says so.
    expect(madeWith({ baseUrl: 'http://postdate:3000', allowPlainHttp: true })).toBeUndefined();
    expect(madeWith({ baseUrl: 'http://postdate:3000', allowPlainHttp: false })).toMatchObject({
      field: 'baseUrl',
    });
  });

  it('takes each range’s ends, and an option given as undefined is its default', () => {
    for (const options of [
      { timeoutMs: 1 },
      { timeoutMs: 2 ** 31 - 1 },
      { timeoutMs: 0.5 * 3_000 },
      { retry: { maxAttempts: 1, baseDelayMs: 0, maxDelayMs: 0, maxRetryAfterMs: 0 } },
      { retry: { maxDelayMs: 2 ** 31 - 1, maxRetryAfterMs: 2 ** 31 - 1 } },
      { timeoutMs: undefined, retry: { maxAttempts: undefined, baseDelayMs: undefined } },
    ]) {
      expect(madeWith(options)).toBeUndefined();
    }
  });

  it('retries 4 times in all when maxAttempts is given as undefined, not without end', async () => {
    const { url, keys } = await recordingServer(problemAnswer(503));
    let waits = 0;
    const client = clientOf(url, {
      retry: { maxAttempts: undefined },
      // A client that never stops would wait a fifth time: fail it there instead of looping on.
      sleep: async () => {
        if (++waits > 3) throw new Error('a fifth attempt');
      },
    });
    await expect(client.get('m-1')).rejects.toMatchObject({ name: 'PostdateProblemError', status: 503 });
    expect(keys()).toHaveLength(4);
  });
});

// Decision 0229: the key the client reports is the one the API reads and stores, and a header given
// through `http` is judged by the same rule as enqueue's key, never left to fetch's bare TypeError.
describe('the client reports an Idempotency-Key as the API reads it', () => {
  it('returns the key the API stores, however it was given, and sends it as given', async () => {
    const { url, keys } = await recordingServer(accepted);
    const client = clientOf(url);
    const given = ['"order-9"', '  order-10  ', 'order-11\n', '"say \\"hi\\""'];
    const reported = [];
    for (const key of given)
      reported.push((await client.enqueue(REQUEST, { idempotencyKey: key })).idempotencyKey);
    expect(reported).toEqual(['order-9', 'order-10', 'order-11', 'say "hi"']);
    expect(keys()).toEqual(['"order-9"', 'order-10', 'order-11', '"say \\"hi\\""']);
  });

  it('names that key in the problem of a refused enqueue', async () => {
    const { url } = await recordingServer(problemAnswer(422));
    const error = await clientOf(url)
      .enqueue(REQUEST, { idempotencyKey: '"order-12"' })
      .catch((caught: unknown) => caught);
    expect(error).toMatchObject({ name: 'PostdateProblemError', idempotencyKey: 'order-12' });
  });
});

describe('a header given through http is judged before sending, as enqueue judges its key', () => {
  const refused = [
    ['with a newline', 'trace\r\nX-Injected: 1'],
    ['with a NUL', 'trace\u00001'],
    ['with a character beyond Latin-1', 'след-1'],
  ] as const;

  for (const [what, value] of refused) {
    it(`a value ${what}: a PostdateInputError naming the header, not fetch's TypeError`, async () => {
      const { url, keys } = await recordingServer(accepted);
      const error = await clientOf(url)
        .http.GET('/v1/messages/{id}', { params: { path: { id: 'm-1' } }, headers: { 'X-Trace': value } })
        .catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(PostdateInputError);
      expect(error).toMatchObject({ field: 'X-Trace' });
      expect(keys()).toEqual([]);
    });
  }

  it('a name that is no header name, named', async () => {
    const { url, keys } = await recordingServer(accepted);
    const error = await clientOf(url)
      .http.GET('/health', { headers: { 'X Trace': '1' } })
      .catch((caught: unknown) => caught);
    expect(error).toMatchObject({ name: 'PostdateInputError', field: 'X Trace' });
    expect(keys()).toEqual([]);
  });

  it('an Idempotency-Key by the API’s rule, whichever method sends it', async () => {
    const { url, keys } = await recordingServer(accepted);
    const client = clientOf(url);
    for (const key of ['order\n7', '""', 'café-7']) {
      const error = await client.http
        .POST('/v1/messages', { params: { header: { 'Idempotency-Key': key } }, body: REQUEST })
        .catch((caught: unknown) => caught);
      expect(error, JSON.stringify(key)).toMatchObject({
        name: 'PostdateInputError',
        field: 'Idempotency-Key',
      });
    }
    expect(keys()).toEqual([]);
  });

  it('and sends every value fetch carries, as it is', async () => {
    const { url, keys } = await recordingServer(accepted);
    const client = clientOf(url);
    await client.http.GET('/v1/messages/{id}', {
      params: { path: { id: 'm-1' } },
      headers: { 'X-Trace': '  café 1  ' },
    });
    await client.http.POST('/v1/messages', {
      params: { header: { 'Idempotency-Key': '"order-13"' } },
      body: REQUEST,
    });
    expect(keys()).toEqual([undefined, '"order-13"']);
  });
});

// Decision 0233: `headers` may be a list of pairs (fetch's HeadersInit, which openapi-fetch's types
// take); each pair is judged by its own name, and sent as the header it names.
describe('headers given through http as a list of pairs', () => {
  it('are sent as the headers they name', async () => {
    const { url, keys } = await recordingServer(accepted);
    await clientOf(url).http.GET('/health', { headers: [['Idempotency-Key', '"order-15"']] });
    expect(keys()).toEqual(['"order-15"']);
  });

  it('are judged pair by pair, naming the header of a bad one', async () => {
    const { url, keys } = await recordingServer(accepted);
    const client = clientOf(url);
    const given = [
      [['X-Trace', 'trace\r\nX-Injected: 1'], 'X-Trace'],
      [['X Trace', '1'], 'X Trace'],
      [['Idempotency-Key', '""'], 'Idempotency-Key'],
    ] as const;
    for (const [pair, field] of given) {
      const error = await client.http
        .GET('/health', { headers: [[...pair]] })
        .catch((caught: unknown) => caught);
      expect(error, field).toMatchObject({ name: 'PostdateInputError', field });
    }
    expect(keys()).toEqual([]);
  });
});

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type EnqueueContext,
  parseAddress,
  parseEnqueueRequest,
  parseGroupVersionRequest,
  parseRescheduleRequest,
} from '../../lambdas/core/messageSchema.js';
import { acceptedAddress } from './messageSchemaArbitraries.js';

const ctx: EnqueueContext = {
  now: new Date('2026-11-29T18:00:00.000Z'),
  allowedFrom: ['*'],
  defaultFrom: 'ops@example.com',
  maxHorizonDays: 400,
};

const valid = () => ({
  to: ['Ada <ada@example.com>', 'bob@example.com'],
  cc: ['carol@example.com'],
  bcc: ['dave@example.com'],
  from: 'Ops <ops@example.com>',
  reply_to: 'replies@example.com',
  subject: 'Campaign approved',
  text: 'text',
  headers: { 'X-Campaign': '42', 'X-Other': 'value' },
  group: { key: 'campaign:42', version: 1 },
  tags: { kind: 'approved' },
});

type Body = ReturnType<typeof valid>;

/** Every place of an enqueue body that ends up in a mail header, and how to put a string there. */
const HEADER_MATERIAL: readonly { field: string; put: (body: Body, value: string) => void }[] = [
  {
    field: '/to/0',
    put: (b, v) => {
      b.to[0] = v;
    },
  },
  {
    field: '/to/1',
    put: (b, v) => {
      b.to[1] = v;
    },
  },
  {
    field: '/cc/0',
    put: (b, v) => {
      b.cc[0] = v;
    },
  },
  {
    field: '/bcc/0',
    put: (b, v) => {
      b.bcc[0] = v;
    },
  },
  {
    field: '/from',
    put: (b, v) => {
      b.from = v;
    },
  },
  {
    field: '/reply_to',
    put: (b, v) => {
      b.reply_to = v;
    },
  },
  {
    field: '/subject',
    put: (b, v) => {
      b.subject = v;
    },
  },
  {
    field: '/headers/X-Campaign',
    put: (b, v) => {
      b.headers['X-Campaign'] = v;
    },
  },
  {
    field: '/headers/',
    put: (b, v) => {
      (b.headers as Record<string, string>)[v] = '1';
    },
  },
  {
    field: '/group/key',
    put: (b, v) => {
      b.group.key = v;
    },
  },
  {
    field: '/tags/kind',
    put: (b, v) => {
      b.tags.kind = v;
    },
  },
  {
    field: '/tags/',
    put: (b, v) => {
      (b.tags as Record<string, string>)[v] = 'x';
    },
  },
];

/** A string from a valid one with CR, LF or CRLF spliced in somewhere. */
const withLineBreak = (base: string) =>
  fc
    .tuple(fc.nat({ max: base.length }), fc.constantFrom('\r', '\n', '\r\n'))
    .map(([at, breakChars]) => base.slice(0, at) + breakChars + base.slice(at));

describe('validation properties', () => {
  it('never throws and always answers ok or a 400 problem, for any JSON', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (body) => {
        const result = parseEnqueueRequest(body, ctx);
        if (!result.ok) {
          expect(result.problem.status).toBe(400);
          expect(result.problem.errors?.length).toBeGreaterThan(0);
        }
        parseRescheduleRequest(body, ctx);
        parseGroupVersionRequest(body);
      }),
      { numRuns: 500 },
    );
  });

  it('accepts every address the address generator makes (the generators other tests reuse)', () => {
    let quoted = 0;
    fc.assert(
      fc.property(acceptedAddress, ({ mailbox, address, local, domain }) => {
        if (local.startsWith('"')) quoted += 1;
        expect(parseAddress(mailbox)).toMatchObject({ ok: true, value: { address, local, domain } });
        expect(parseEnqueueRequest({ to: [mailbox], subject: 's', text: 't' }, ctx).ok).toBe(true);
      }),
      { numRuns: 500 },
    );
    // Quoted local parts are generated, not only dot-atoms.
    expect(quoted).toBeGreaterThan(50);
  });

  it('never throws on bodies with the right field names and arbitrary values', () => {
    const anyValue = fc.oneof(
      fc.jsonValue(),
      fc.string(),
      fc.array(fc.string()),
      fc.dictionary(fc.string(), fc.string()),
    );
    fc.assert(
      fc.property(
        fc.record(
          {
            to: anyValue,
            cc: anyValue,
            from: anyValue,
            subject: anyValue,
            text: anyValue,
            headers: anyValue,
            send_at: anyValue,
            delay_seconds: anyValue,
            not_after: anyValue,
            group: anyValue,
            tags: anyValue,
            metadata: anyValue,
          },
          { requiredKeys: [] },
        ),
        (body) => {
          expect(() => parseEnqueueRequest(body, ctx)).not.toThrow();
        },
      ),
      { numRuns: 500 },
    );
  });

  it('never accepts CR or LF anywhere in header material, and names the field', () => {
    const base = valid();
    expect(parseEnqueueRequest(base, ctx).ok).toBe(true);
    const samples: Record<string, string> = {
      '/to/0': base.to[0] ?? '',
      '/to/1': base.to[1] ?? '',
      '/cc/0': base.cc[0] ?? '',
      '/bcc/0': base.bcc[0] ?? '',
      '/from': base.from,
      '/reply_to': base.reply_to,
      '/subject': base.subject,
      '/headers/X-Campaign': '42',
      '/headers/': 'X-New',
      '/group/key': base.group.key,
      '/tags/kind': 'approved',
      '/tags/': 'newtag',
    };
    fc.assert(
      fc.property(
        fc
          .constantFrom(...HEADER_MATERIAL)
          .chain((place) => withLineBreak(samples[place.field] ?? '').map((value) => ({ place, value }))),
        ({ place, value }) => {
          const body = valid();
          place.put(body, value);
          const result = parseEnqueueRequest(body, ctx);
          expect(result.ok).toBe(false);
          const fields = result.ok ? [] : (result.problem.errors ?? []).map((error) => error.field);
          expect(fields.some((field) => field.startsWith(place.field))).toBe(true);
        },
      ),
      { numRuns: 600 },
    );
  });

  it('never returns an accepted request with CR or LF in header material, whatever strings come in', () => {
    let accepted = 0;
    // Mostly clean parts (so many bodies are accepted), sometimes the same part with a line break,
    // a control character or a lone CR/LF: acceptance must never carry one through.
    const clean = fc.stringMatching(/^[a-z][a-z0-9]{0,7}$/);
    const dirty = clean.chain((base) =>
      fc.oneof(
        withLineBreak(base),
        fc.constant(`${base}\u0085`),
        fc.constant(`${base}\t${base}`),
        fc.constant('\r\n'),
      ),
    );
    const text = fc.oneof({ arbitrary: clean, weight: 5 }, { arbitrary: dirty, weight: 1 });
    fc.assert(
      fc.property(
        fc.record({
          local: text,
          name: text,
          subject: text,
          headerName: text,
          headerValue: text,
          tag: text,
          groupKey: text,
        }),
        (parts) => {
          const result = parseEnqueueRequest(
            {
              to: [`${parts.name} <${parts.local}@example.com>`],
              from: `${parts.local}@example.com`,
              subject: parts.subject,
              text: 't',
              headers: { [parts.headerName]: parts.headerValue },
              tags: { [parts.tag]: parts.tag },
              group: { key: parts.groupKey, version: 1 },
            },
            ctx,
          );
          if (!result.ok) return;
          accepted += 1;
          const v = result.value;
          const material = [
            ...v.to,
            ...v.cc,
            ...v.bcc,
            v.from,
            v.reply_to ?? '',
            v.subject,
            ...Object.entries(v.headers).flat(),
            ...Object.entries(v.tags).flat(),
            v.group?.key ?? '',
          ];
          expect(material.filter((value) => /[\r\n]/.test(value))).toEqual([]);
        },
      ),
      { numRuns: 1000 },
    );
    // The property was tested on accepted requests, not only on rejections.
    expect(accepted).toBeGreaterThan(0);
  });
});

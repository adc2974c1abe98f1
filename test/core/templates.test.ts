/**
 * Templates in the pure core (DESIGN §10): what a template may say when it is stored, and how a
 * message renders — strict, `html` escaped and `subject`/`text` not, no prototype access, the
 * rendered subject under §3's header rules with the data field that broke it named.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compileTemplate, renderTemplate, type TemplateContent } from '../../lambdas/core/renderTemplate.js';
import { LIMITS } from '../../lambdas/core/requestLimits.js';
import { LruCache } from '../../lambdas/core/templateCache.js';
import { createTemplateRenderer } from '../../lambdas/core/templateRenderer.js';
import { validateTemplatePut } from '../../lambdas/core/templateRequests.js';
import { templateSyntaxErrors } from '../../lambdas/core/templateSyntax.js';

const content = (parts: Partial<TemplateContent>): TemplateContent => ({
  subject: 'Hello',
  text: null,
  html: null,
  ...parts,
});

function render(parts: Partial<TemplateContent>, data: Record<string, unknown>) {
  return renderTemplate(compileTemplate(content(parts)), data);
}

describe('storing a template: its syntax', () => {
  it('accepts variables, comments and the four built-in blocks', () => {
    const source =
      '{{! a comment }}Hi {{user.name}}{{#if coupon}} ({{coupon}}){{else}}!{{/if}}' +
      '{{#unless paused}}go{{/unless}}{{#each items}}{{@index}}:{{this.title}} {{../user.name}}{{/each}}' +
      '{{#with user}}{{name}}{{/with}}{{@root.user.name}}{{this.each}}{{#if if}}{{/if}}';
    expect(templateSyntaxErrors('html', source)).toEqual([]);
    expect(templateSyntaxErrors('text', '{{{raw}}} {{&raw}}')).toEqual([]);
  });

  it.each([
    ['a helper call', '{{lookup this "constructor"}}', 'helpers'],
    ['log', '{{log "x"}}', 'helpers'],
    ['a custom helper', '{{shout name}}', 'helpers'],
    ['a hash argument', '{{name upper=true}}', 'helpers'],
    ['an unknown block', '{{#shout}}x{{/shout}}', 'only #if'],
    ['a mustache section', '{{#items}}x{{/items}}', 'only #if'],
    ['a raw block', '{{{{raw}}}}{{x}}{{{{/raw}}}}', 'only #if'],
    ['a partial', '{{> footer}}', 'partial'],
    ['a partial block', '{{#> layout}}x{{/layout}}', 'partial'],
    ['an inline partial', '{{#* inline "p"}}x{{/inline}}', 'decorator'],
    ['a sub-expression', '{{#if (eq a b)}}x{{/if}}', 'variable, not'],
    ['a literal', '{{"text"}}', 'literal'],
    ['block parameters', '{{#each items as |item|}}{{item}}{{/each}}', 'block parameters'],
    ['an unknown @ variable', '{{@secret}}', 'unknown variable'],
    ['#if without an argument', '{{#if}}x{{/if}}', 'exactly one variable'],
    ['a block helper output without #', '<p>{{each}}</p>', 'its #each helper (line 1, column 4)'],
    ['#if output in brackets', '{{#with order}}{{[if]}}{{/with}}', '{{this.if}}'],
    ['a syntax error', 'Hi {{name', 'not valid Handlebars'],
    ['mismatched blocks', '{{#if a}}x{{/each}}', 'not valid Handlebars'],
  ])('refuses %s when it is stored', (_what, source, reason) => {
    const errors = templateSyntaxErrors('html', source);
    expect(errors.length).toBeGreaterThan(0);
    expect(errors[0]?.field).toBe('/html');
    expect(errors.map((error) => error.message).join(' ')).toContain(reason);
  });

  it.each([
    '{{constructor}}',
    '{{__proto__}}',
    '{{user.constructor.name}}',
    '{{#with __proto__}}x{{/with}}',
    '{{toString}}',
    '{{hasOwnProperty}}',
    '{{this.prototype}}',
  ])('refuses the prototype access %s when it is stored', (source) => {
    const errors = templateSyntaxErrors('text', source);
    expect(errors[0]?.message).toContain('prototype name');
  });

  it('refuses unescaped output in html only', () => {
    expect(templateSyntaxErrors('html', '{{{body}}}')[0]?.message).toContain('unescaped');
    expect(templateSyntaxErrors('html', '{{& body}}')[0]?.message).toContain('unescaped');
    expect(templateSyntaxErrors('subject', '{{{name}}}')).toEqual([]);
  });

  it('names the place of the problem', () => {
    const [error] = templateSyntaxErrors('html', '<p>\n  {{> footer}}</p>');
    expect(error?.message).toContain('line 2, column 3');
  });

  it('validates a whole PUT body: a subject, text or html, every part checked, a subject on one line', async () => {
    expect(await validateTemplatePut({ subject: 'Hi {{name}}', html: '<b>{{name}}</b>' })).toEqual({
      ok: true,
      value: { subject: 'Hi {{name}}', text: null, html: '<b>{{name}}</b>', description: null },
    });
    const refused = await validateTemplatePut({
      subject: 'Hi\n{{name}}',
      text: '{{> p}}',
      html: '{{x y}}',
      extra: 1,
    });
    expect(refused.ok).toBe(false);
    if (!refused.ok) expect(refused.errors.map((error) => error.field).sort()).toEqual(['/extra']);
    const parts = await validateTemplatePut({ subject: 'Hi\n{{name}}', text: '{{> p}}', html: '{{x y}}' });
    if (parts.ok) throw new Error('expected errors');
    expect(parts.errors.map((error) => error.field)).toEqual(['/subject', '/text', '/html']);
    const noBody = await validateTemplatePut({ subject: 'Hi' });
    if (noBody.ok) throw new Error('expected errors');
    expect(noBody.errors).toEqual([{ field: '/text', message: 'text or html is required' }]);
  });
});

describe('rendering a message', () => {
  it('escapes html, and leaves subject and text as they are', () => {
    const data = { name: '<script>alert("x")</script> & Co' };
    const result = render(
      { subject: 'For {{name}}', text: 'Dear {{name}}', html: '<p>Dear {{name}}</p>' },
      data,
    );
    expect(result).toEqual({
      ok: true,
      value: {
        subject: 'For <script>alert("x")</script> & Co',
        text: 'Dear <script>alert("x")</script> & Co',
        html: '<p>Dear &lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; Co</p>',
      },
    });
  });

  it('is strict: a variable the data lacks is an error naming it, never an empty string', () => {
    const result = render({ subject: 'Hi', html: '<p>\n  {{order.total}}</p>' }, { order: {} });
    expect(result).toEqual({
      ok: false,
      errors: [
        { field: '/data', message: 'lacks `order.total`, which the html template uses (line 2, column 5)' },
      ],
    });
    const inBlock = render({ text: '{{#each items}}{{title}}{{/each}}' }, { items: [{ title: 'a' }, {}] });
    expect(inBlock.ok).toBe(false);
    if (!inBlock.ok) expect(inBlock.errors[0]?.message).toContain('`title`');
    // A line may end in CR alone, as Handlebars counts lines.
    expect(render({ text: 'Hi\r  {{name}}' }, {})).toEqual({
      ok: false,
      errors: [{ field: '/data', message: 'lacks `name`, which the text template uses (line 2, column 5)' }],
    });
  });

  it('names the variable when a parent on its path is missing or is not an object (DESIGN §3: 422 with the failing variable)', () => {
    const cases: [string, Record<string, unknown>][] = [
      ['order.customer.name', {}],
      ['order.customer.name', { order: null }],
      ['order.id', { order: 8 }],
      ['order.id', { order: 'A-8' }],
      ['order.paid.at', { order: { paid: true } }],
      ['@root.order.customer.name', {}],
    ];
    for (const [variable, data] of cases) {
      const message = `lacks \`${variable}\`, which the text template uses (line 1, column 3)`;
      expect(render({ text: `{{${variable}}}` }, data), `${variable} of ${JSON.stringify(data)}`).toEqual({
        ok: false,
        errors: [{ field: '/data', message }],
      });
    }
  });

  it('refuses to print an object or a list, naming the variable and what to write instead (never "[object Object]" or "a,b")', () => {
    expect(render({ text: 'Order:\n  {{order}}' }, { order: { id: 'A-8' } })).toEqual({
      ok: false,
      errors: [
        {
          field: '/data',
          message:
            '`order` is an object, which the text template prints (line 2, column 3): `{{order}}` prints only strings, numbers and booleans — name one of its fields, such as `{{order.<field>}}`',
        },
      ],
    });
    expect(render({ subject: 'Your {{items}}', text: 'x' }, { items: ['a', 'b'] })).toEqual({
      ok: false,
      errors: [
        {
          field: '/data',
          message:
            '`items` is a list, which the subject template prints (line 1, column 6): `{{items}}` prints only strings, numbers and booleans — print its entries with `{{#each items}}…{{/each}}`',
        },
      ],
    });
  });

  it.each([
    ['text', '{{{order}}}', 'order', { order: { id: 1 } }, 'an object'],
    ['text', '{{& order}}', 'order', { order: { id: 1 } }, 'an object'],
    ['html', '<p>{{order}}</p>', 'order', { order: { id: 1 } }, 'an object'],
    ['html', '{{~ order.lines ~}}', 'order.lines', { order: { lines: [] } }, 'a list'],
    ['text', '{{#each orders}}{{this}}{{/each}}', 'this', { orders: [{ id: 1 }] }, 'an object'],
    ['text', '{{#each orders}}{{.}}{{/each}}', '.', { orders: [[1]] }, 'a list'],
    ['text', '{{#with order}}{{../order}}{{/with}}', '../order', { order: { id: 1 } }, 'an object'],
    ['text', '{{#with order}}{{lines}}{{/with}}', 'lines', { order: { lines: [1, 2] } }, 'a list'],
    ['text', '{{@root}}', '@root', { a: 1 }, 'an object'],
    ['text', '{{@root.order}}', '@root.order', { order: {} }, 'an object'],
    ['text', 'Order:\r\n  {{order}}', 'order', { order: { id: 1 } }, 'an object'],
    ['text', 'Order:\r  {{order}} {{n}}', 'order', { order: { id: 1 }, n: 1 }, 'an object'],
  ])('in %s, %s is refused naming `%s`', (part, source, variable, data, kind) => {
    const result = render({ [part]: source }, data);
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.errors).toHaveLength(1);
    expect(result.errors[0]?.field).toBe('/data');
    expect(result.errors[0]?.message).toMatch(new RegExp(`^\`${escapeRegExp(variable)}\` is ${kind}, `));
  });

  it('prints any string, number or boolean, prints a present null as nothing, and refuses any object or list (property)', () => {
    const json = fc.jsonValue({ maxDepth: 3 });
    const unprintable = fc.oneof(
      fc.dictionary(fc.string(), json, { maxKeys: 4 }),
      fc.array(json, { maxLength: 4 }),
    );
    const printable = fc.oneof(
      fc.string(),
      fc.integer(),
      fc.double({ noNaN: true, noDefaultInfinity: true }),
      fc.boolean(),
    );
    const form = fc.constantFrom('{{x}}', '{{{x}}}', '{{this.x}}', '{{#with box}}{{../x}}{{/with}}');
    fc.assert(
      fc.property(unprintable, form, (value, source) => {
        const result = render({ text: `[${source}]` }, { x: value, box: { y: 1 } });
        expect(result.ok).toBe(false);
        if (!result.ok) expect(result.errors[0]?.message).toMatch(/^`[^`]*x` is (an object|a list), /);
      }),
    );
    fc.assert(
      fc.property(printable, form, (value, source) => {
        expect(render({ text: `[${source}]` }, { x: value, box: { y: 1 } })).toEqual({
          ok: true,
          value: { subject: 'Hello', text: `[${String(value)}]`, html: null },
        });
      }),
    );
    expect(render({ text: '[{{x}}]' }, { x: null })).toEqual({
      ok: true,
      value: { subject: 'Hello', text: '[]', html: null },
    });
  });

  it('prints outputs side by side as written: numbers and booleans next to each other are never added (decision 0232)', () => {
    expect(
      render(
        {
          subject: '{{order.major}}{{order.minor}} shipped',
          text: '{{order.major}}{{order.minor}}|{{#each digits}}{{@index}}{{this}}{{@first}}{{@last}};{{/each}}',
          html: '{{order.major}}{{order.minor}}',
        },
        { order: { major: 1, minor: 2 }, digits: [7, 8] },
      ),
    ).toEqual({
      ok: true,
      value: { subject: '12 shipped', text: '12|07truefalse;18falsetrue;', html: '12' },
    });
    const printable = fc.oneof(
      fc.string(),
      fc.integer(),
      fc.double({ noNaN: true, noDefaultInfinity: true }),
      fc.boolean(),
    );
    const form = fc.constantFrom('{{x}}{{y}}', '{{{x}}}{{{y}}}', '{{#with box}}{{../x}}{{../y}}{{/with}}');
    fc.assert(
      fc.property(printable, printable, form, (x, y, source) => {
        expect(render({ text: `${source}.` }, { x, y, box: {} })).toEqual({
          ok: true,
          value: { subject: 'Hello', text: `${x}${y}.`, html: null },
        });
      }),
    );
  });

  it('lets objects and lists be block arguments and lookup parents, where they are not printed', () => {
    const data = { order: { id: 'A-8', lines: [{ sku: 'p1' }, { sku: 'p2' }], meta: {} } };
    const result = render(
      {
        text: '{{#if order}}{{order.id}}{{/if}}|{{#each order.lines}}{{sku}}{{@index}}{{/each}}|{{#with order.meta}}m{{/with}}|{{#unless order.lines}}none{{/unless}}|{{@root.order.lines.length}}|{{#each order}}{{@key}} {{/each}}',
      },
      data,
    );
    expect(result).toEqual({
      ok: true,
      value: { subject: 'Hello', text: 'A-8|p10p21|m||2|id lines meta ', html: null },
    });
  });

  it('never echoes a value of the data in an error', () => {
    const result = render(
      { text: '{{#each names}}{{first}}{{/each}}' },
      { names: ['secret-value@example.com'] },
    );
    expect(result.ok).toBe(false);
    expect(JSON.stringify(result)).not.toContain('secret-value');
  });

  it('treats a missing #if / #unless / #each / #with argument as false or empty (optional parts), a present null as a value', () => {
    const result = render(
      {
        text: '{{#if coupon}}C{{else}}no coupon{{/if}}|{{#unless paused}}on{{/unless}}|{{#each extras}}x{{/each}}|{{#with shipping}}{{city}}{{else}}pickup{{/with}}|{{note}}',
      },
      { note: null },
    );
    expect(result).toEqual({
      ok: true,
      value: { subject: 'Hello', text: 'no coupon|on||pickup|', html: null },
    });
  });

  it('treats a block argument whose parent is missing, null or not an object as false or empty too', () => {
    const result = render(
      {
        text: '{{#if order.coupon}}C{{else}}no coupon{{/if}}|{{#unless order.paused}}on{{/unless}}|{{#each order.extras}}x{{/each}}|{{#with order.shipping.address}}{{city}}{{else}}pickup{{/with}}|{{#if user.vip}}vip{{/if}}|{{#if plan.tier.name}}tier{{/if}}',
      },
      { user: null, plan: { tier: 'gold' } },
    );
    expect(result).toEqual({
      ok: true,
      value: { subject: 'Hello', text: 'no coupon|on||pickup||', html: null },
    });
  });

  it('reads only what the data holds: a name a list or an object inherits (`items.map`, `tags.join`, `@root.order.keys`) is a lacking variable, never an empty string', () => {
    const cases: [string, Record<string, unknown>][] = [
      ['items.map', { items: [1, 2] }],
      ['tags.join', { tags: ['a'] }],
      ['order.lines.entries', { order: { lines: [] } }],
      ['@root.order.values', { order: [] }],
    ];
    for (const [variable, data] of cases) {
      const message = `lacks \`${variable}\`, which the text template uses (line 1, column 10)`;
      expect(render({ text: `Items: {{${variable}}}` }, data), variable).toEqual({
        ok: false,
        errors: [{ field: '/data', message }],
      });
    }
    // Inside a loop, over a list of lists: the same.
    const inLoop = render({ text: '{{#each rows}}{{this.map}}{{/each}}' }, { rows: [[1]] });
    expect(inLoop.ok).toBe(false);
    if (!inLoop.ok) expect(inLoop.errors[0]?.message).toContain('`this.map`');
    // What a list or an object holds as its own still prints: a list's length, an index, a key.
    expect(
      render({ text: '{{items.length}} {{items.[0]}} {{order.keys}}' }, { items: ['a'], order: { keys: 2 } }),
    ).toEqual({ ok: true, value: { subject: 'Hello', text: '1 a 2', html: null } });
    // A block argument that the data lacks stays false, as any missing one (decision 0026).
    expect(render({ text: '{{#if items.map}}x{{else}}y{{/if}}' }, { items: [1] })).toEqual({
      ok: true,
      value: { subject: 'Hello', text: 'y', html: null },
    });
  });

  it('keeps prototype access out even when the data has such keys of its own', () => {
    const data = JSON.parse(
      '{"__proto__": {"polluted": "yes"}, "constructor": "own", "name": "Ada"}',
    ) as Record<string, unknown>;
    // The store refuses these names; a compiled template that reads `name` is unaffected by them.
    expect(render({ text: '{{name}}' }, data)).toEqual({
      ok: true,
      value: { subject: 'Hello', text: 'Ada', html: null },
    });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    // Handlebars ≥ 4.6 refuses inherited properties at run time too (allowProto…ByDefault false).
    const inherited = render(
      { text: '{{#with user}}{{name}}{{/with}}' },
      { user: Object.create({ name: 'proto' }) },
    );
    expect(inherited.ok).toBe(false);
  });

  it('names the data field whose CR or LF would reach the subject (header injection)', () => {
    const result = render(
      { subject: 'Order {{order.id}} for {{customer.name}}', text: '{{customer.bio}}' },
      { order: { id: '42\r\nBcc: victim@example.com' }, customer: { name: 'Ada', bio: 'line 1\nline 2' } },
    );
    expect(result).toEqual({
      ok: false,
      errors: [
        {
          field: '/data/order/id',
          message: 'goes into the subject, which must not contain CR or LF (header injection)',
        },
      ],
    });
  });

  it('holds the rendered message to the size limits', () => {
    const big = 'x'.repeat(100_000);
    const result = render({ html: '{{a}}{{a}}{{a}}' }, { a: big });
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.errors[0]?.message).toContain(`more than the ${LIMITS.maxBodyBytes}`);
    const longSubject = render(
      { subject: '{{s}}', text: 'x' },
      { s: 'y'.repeat(LIMITS.maxSubjectLength + 1) },
    );
    expect(longSubject.ok).toBe(false);
    const empty = render({ subject: '{{s}}', text: 'x' }, { s: '  ' });
    expect(empty).toEqual({ ok: false, errors: [{ field: '/data', message: 'the subject renders empty' }] });
    const noBody = render({ text: '{{#if a}}x{{/if}}' }, {});
    expect(noBody.ok).toBe(false);
  });
});

describe('compiling once per version', () => {
  it('keeps at most maxEntries, dropping the least recently used', async () => {
    const cache = new LruCache<string>(2);
    const loads: string[] = [];
    const load = (key: string) => () => {
      loads.push(key);
      return Promise.resolve(key);
    };
    await cache.getOrLoad('a', load('a'));
    await cache.getOrLoad('b', load('b'));
    await cache.getOrLoad('a', load('a'));
    await cache.getOrLoad('c', load('c'));
    await cache.getOrLoad('a', load('a'));
    await cache.getOrLoad('b', load('b'));
    expect(loads).toEqual(['a', 'b', 'c', 'b']);
    expect(cache.size).toBe(2);
  });

  it('reads a version once for many messages, and never keeps a missing one or a failed read', async () => {
    const reads: string[] = [];
    let failNext = true;
    const renderer = createTemplateRenderer(async (ref) => {
      reads.push(`${ref.tenant}/${ref.name}/${ref.version}`);
      if (ref.name === 'flaky' && failNext) {
        failNext = false;
        throw new Error('throttled');
      }
      return ref.name === 'gone' ? undefined : content({ text: `v${ref.version} {{n}}` });
    });
    for (let n = 0; n < 5; n++) {
      const outcome = await renderer.render({ tenant: 't', name: 'welcome', version: 1 }, { n });
      expect(outcome).toEqual({
        kind: 'rendered',
        content: { subject: 'Hello', text: `v1 ${n}`, html: null },
      });
    }
    await renderer.render({ tenant: 'u', name: 'welcome', version: 1 }, { n: 0 });
    expect(await renderer.render({ tenant: 't', name: 'gone', version: 1 }, {})).toEqual({ kind: 'missing' });
    expect(await renderer.render({ tenant: 't', name: 'gone', version: 1 }, {})).toEqual({ kind: 'missing' });
    await expect(renderer.render({ tenant: 't', name: 'flaky', version: 1 }, { n: 1 })).rejects.toThrow(
      'throttled',
    );
    expect((await renderer.render({ tenant: 't', name: 'flaky', version: 1 }, { n: 1 })).kind).toBe(
      'rendered',
    );
    expect(reads).toEqual(['t/welcome/1', 'u/welcome/1', 't/gone/1', 't/gone/1', 't/flaky/1', 't/flaky/1']);
  });
});

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

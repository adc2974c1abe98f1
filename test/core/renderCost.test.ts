/**
 * The render's cost, known before it runs (DESIGN §5): the walk counts exactly the bytes Handlebars
 * outputs, for any template of the allowed syntax and any data (so a bound on the walk is a bound
 * on the render), and it stops an exploding render within its step bound, without rendering.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { measureRender, RENDER_BOUNDS } from '../../lambdas/core/renderCost.js';
import { compileTemplate, renderTemplate } from '../../lambdas/core/renderTemplate.js';
import { templateSyntaxErrors } from '../../lambdas/core/templateSyntax.js';

const PATHS = [
  'name',
  'n',
  'zero',
  'flag',
  'list',
  'obj',
  'obj.name',
  'obj.items',
  'this',
  '../name',
  '@index',
  '@key',
  '@first',
  '@last',
  '@root.name',
  '@root.list',
  'empty',
  'nothing',
];
const BLOCK_ARGUMENTS = [
  'list',
  'obj',
  'obj.items',
  'flag',
  'n',
  'zero',
  'empty',
  'this',
  '@root.list',
  'name',
  'items',
  'nothing',
];

const templateArb: fc.Arbitrary<string> = fc.letrec<{ body: string; statement: string }>((tie) => ({
  body: fc.array(tie('statement'), { maxLength: 4 }).map((parts) => parts.join('')),
  statement: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constantFrom('a', 'x<y & "z"', 'é ', '\n', "it's = `q`"),
    fc.constantFrom(...PATHS).map((path) => `{{${path}}}`),
    fc
      .tuple(
        fc.constantFrom('if', 'unless', 'with', 'each'),
        fc.constantFrom(...BLOCK_ARGUMENTS),
        tie('body'),
        fc.option(tie('body'), { nil: undefined }),
      )
      .map(
        ([helper, argument, body, inverse]) =>
          `{{#${helper} ${argument}}}${body}${inverse === undefined ? '' : `{{else}}${inverse}`}{{/${helper}}}`,
      ),
  ),
})).body;

const itemArb = fc.oneof(
  fc.string({ maxLength: 6 }),
  fc.record({
    name: fc.string({ maxLength: 6 }),
    items: fc.array(fc.integer({ min: 0, max: 9 }), { maxLength: 3 }),
  }),
  fc.integer({ min: -5, max: 5 }),
);
const dataArb = fc.record(
  {
    name: fc.constantFrom('Ada', '<b>"x"</b>', 'é', ''),
    n: fc.integer({ min: 0, max: 3 }),
    zero: fc.constant(0),
    flag: fc.boolean(),
    empty: fc.constant([]),
    list: fc.array(itemArb, { maxLength: 4 }),
    obj: fc.record(
      { name: fc.string({ maxLength: 5 }), items: fc.array(itemArb, { maxLength: 3 }) },
      { noNullPrototype: true },
    ),
  },
  { noNullPrototype: true },
);

const utf8 = (text: string) => new TextEncoder().encode(text).length;

describe('measureRender', () => {
  it('counts the bytes Handlebars renders, in text and (escaped) in html: exactly, or more', () => {
    fc.assert(
      fc.property(templateArb, dataArb, (source, generated) => {
        const data: unknown = JSON.parse(JSON.stringify(generated)); // data is JSON, as at enqueue
        fc.pre(templateSyntaxErrors('text', source).length === 0);
        const compiled = compileTemplate({ subject: 'S', text: source, html: source });
        let rendered: string[];
        try {
          rendered = compiled.parts.map(({ render }) => render(data));
        } catch {
          return; // strict: a missing variable fails the render; the walk only has to bound it
        }
        const cost = measureRender(compiled.measured, data, { maxSteps: 1e9, maxOutputBytes: 1e9 });
        const bytes = rendered.reduce((sum, part) => sum + utf8(part), 0);
        if (!cost.within) throw new Error('the walk passed an unlimited bound');
        // Handlebars joins two adjacent outputs with `+`: two numbers or booleans side by side add
        // up (`{{n}}{{n}}` renders 2 for n = 1), never longer than the two side by side.
        if (source.includes('}}{{')) expect(cost.bytes).toBeGreaterThanOrEqual(bytes);
        else expect(cost.bytes).toBe(bytes);
      }),
      { numRuns: 300 },
    );
  });

  it('stops three nested loops over 1 KB of data at its step bound, without rendering', () => {
    const compiled = compileTemplate({
      subject: 'S',
      text: '{{#each a}}{{#each @root.a}}{{#each @root.a}}{{/each}}{{/each}}{{/each}}done',
      html: null,
    });
    const data = { a: Array.from({ length: 500 }, (_, index) => index % 10) };
    expect(measureRender(compiled.measured, data)).toEqual({ within: false, over: 'steps' });
    const result = renderTemplate(compiled, data);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.errors[0]?.message).toContain(`${RENDER_BOUNDS.maxSteps} steps`);
  });

  it('stops a render whose output would pass the message size, loops or not', () => {
    const big = { blob: 'x'.repeat(60_000) };
    const compiled = compileTemplate({ subject: 'S', text: '{{blob}}'.repeat(5), html: null });
    expect(measureRender(compiled.measured, big)).toEqual({ within: false, over: 'bytes' });
  });
});

import { describe, expect, it } from 'vitest';
import type { BenchResult } from '../../bench/benchResult.js';
import { latenessChart, niceAxis, renderCharts, throughputChart } from '../../bench/chart.js';

/**
 * Well-formed enough for any SVG reader: every tag closed in order, attributes quoted, no raw `<`
 * or stray `&` in text. Returns the elements' names and attributes in document order.
 */
function parseSvg(svg: string): { name: string; attributes: Record<string, string> }[] {
  const elements: { name: string; attributes: Record<string, string> }[] = [];
  const open: string[] = [];
  const tag = /<(\/?)([a-zA-Z][\w:-]*)((?:\s+[\w:-]+="[^"<]*")*)\s*(\/?)>/g;
  let at = 0;
  for (const match of svg.matchAll(tag)) {
    const text = svg.slice(at, match.index);
    expect(text, 'text between tags').not.toMatch(/<|>|&(?!(amp|lt|gt|quot|apos);)/);
    at = (match.index ?? 0) + match[0].length;
    const [, closing, name = '', rawAttributes = '', selfClosing] = match;
    if (closing) {
      expect(open.pop(), `closing </${name}>`).toBe(name);
      continue;
    }
    const attributes = Object.fromEntries(
      [...rawAttributes.matchAll(/([\w:-]+)="([^"]*)"/g)].map(([, key = '', value = '']) => [
        key,
        unescapeXml(value),
      ]),
    );
    elements.push({ name, attributes });
    if (!selfClosing) open.push(name);
  }
  expect(svg.slice(at).trim(), 'nothing after the root element').toBe('');
  expect(open, 'unclosed elements').toEqual([]);
  expect(elements[0]?.name).toBe('svg');
  return elements;
}

function unescapeXml(text: string): string {
  const entities: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };
  return text.replace(/&(amp|lt|gt|quot|apos);/g, (_, name: string) => entities[name] ?? '');
}

const PATHS = [
  { name: '0 s', p50: 100, p99: 400, max: 800 },
  { name: '> 15 min (compressed: 80 s)', p50: 50, p99: 500, max: 250 },
];

describe('the lateness chart', () => {
  const svg = latenessChart({ paths: PATHS, goalMs: 500, baselineP99Ms: 125, title: 'a < b & "c"' });
  const elements = parseSvg(svg);
  const bars = elements.filter((e) => e.attributes.class === 'bar');
  const bar = (path: string, metric: string) => {
    const found = bars.find(
      (b) => b.attributes['data-path'] === path && b.attributes['data-metric'] === metric,
    );
    if (!found) throw new Error(`no ${metric} bar for ${path}`);
    return { top: Number(found.attributes.y), height: Number(found.attributes.height) };
  };

  it('is well-formed SVG with the title escaped', () => {
    expect(svg).toContain('a &lt; b &amp; &quot;c&quot;');
    expect(svg).toContain('&gt; 15 min');
  });

  it('draws p50, p99 and max for every path, heights in proportion to the values', () => {
    expect(bars).toHaveLength(6);
    expect(bar('0 s', 'p99').height / bar('0 s', 'p50').height).toBeCloseTo(4, 1);
    expect(bar('0 s', 'max').height / bar('0 s', 'p50').height).toBeCloseTo(8, 1);
  });

  it('draws the goal line at the height of a 500 ms bar, and the baseline below it', () => {
    const goal = elements.find((e) => e.name === 'line' && e.attributes.class === 'goal');
    expect(goal?.attributes.y1).toBe(goal?.attributes.y2);
    expect(Number(goal?.attributes.y1)).toBeCloseTo(bar('> 15 min (compressed: 80 s)', 'p99').top, 0);
    expect(svg).toContain('goal: p99 ≤ 500 ms');
    const baseline = elements.find((e) => e.name === 'line' && e.attributes.class === 'baseline');
    expect(Number(baseline?.attributes.y1)).toBeGreaterThan(Number(goal?.attributes.y1));
  });

  it('labels the axis with ticks that reach the largest value', () => {
    expect(svg).toContain('lateness (ms)');
    const ticks = [...svg.matchAll(/text-anchor="end" [^>]*>(\d+)<\/text>/g)].map((m) => Number(m[1]));
    expect(Math.max(...ticks)).toBeGreaterThanOrEqual(800);
  });
});

describe('the throughput chart', () => {
  const windows = [
    { start: 0, perSecond: 20 },
    { start: 5, perSecond: 40 },
    { start: 10, perSecond: 30 },
  ];
  const svg = throughputChart({
    windows,
    windowSeconds: 5,
    overallPerSecond: 30,
    memory: [
      { t: -10, rssMb: 150, jvmRssMb: 200 },
      { t: 0, rssMb: 170, jvmRssMb: 300 },
      { t: 14, rssMb: 180, jvmRssMb: 320 },
    ],
  });
  const elements = parseSvg(svg);

  it('plots one point per window, higher for a faster window, and the overall rate as a line', () => {
    const points = elements.filter((e) => e.attributes.class === 'window');
    expect(points.map((p) => Number(p.attributes['data-value']))).toEqual([20, 40, 30]);
    const y = points.map((p) => Number(p.attributes.cy));
    expect(y[1]).toBeLessThan(y[2] ?? 0);
    expect(y[2]).toBeLessThan(y[0] ?? 0);
    // y is linear in the value: 30 sits halfway between 20 and 40.
    expect(y[2]).toBeCloseTo(((y[0] ?? 0) + (y[1] ?? 0)) / 2, 0);
    const overall = elements.find((e) => e.name === 'line' && e.attributes.class === 'overall');
    expect(Number(overall?.attributes.y1)).toBeCloseTo(y[2] ?? 0, 0);
  });

  it('draws the memory of the Node process and of the JVM', () => {
    expect(elements.some((e) => e.attributes.class === 'rss')).toBe(true);
    expect(elements.some((e) => e.attributes.class === 'jvm-rss')).toBe(true);
    expect(svg).toContain('seconds since the messages came due');
  });
});

describe('renderCharts', () => {
  const result = (name: string, details: unknown): BenchResult => ({
    name,
    title: `${name} (30 messages per path)`,
    rows: [],
    details,
    seconds: 1,
  });

  it('draws only the charts whose benchmark ran', () => {
    expect(renderCharts([result('coldStart', {})])).toEqual([]);
    const precision = result('precision', {
      paths: { '0 s': { n: 30, p50: 10, p99: 20, max: 30 } },
      baselineSetTimeout: { p99: 5 },
    });
    expect(renderCharts([precision]).map((chart) => chart.file)).toEqual(['lateness.svg']);
    const scale = result('scale', {
      drain: { windowSeconds: 5, overallPerSecond: 12, windows: [{ start: 0, count: 60, perSecond: 12 }] },
      memory: { samples: [{ t: 0, rssMb: 100 }] },
    });
    expect(renderCharts([precision, scale]).map((chart) => chart.file)).toEqual([
      'lateness.svg',
      'throughput.svg',
    ]);
  });
});

describe('niceAxis', () => {
  it('rounds up to 1, 2 or 5 × a power of ten, with about five ticks', () => {
    expect(niceAxis(600)).toEqual({ max: 600, step: 200 });
    expect(niceAxis(2345)).toEqual({ max: 2500, step: 500 });
    expect(niceAxis(0)).toEqual({ max: 1, step: 0.2 });
  });
});

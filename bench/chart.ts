import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { BenchResult } from './benchResult.js';

/**
 * The charts of a bench run as plain SVG, written next to latest.json, without a dependency:
 * `lateness.svg` (precision: p50/p99/max per path with the 500 ms goal line and the setTimeout
 * baseline) and `throughput.svg` (scale: messages per second over time, and memory). Each is drawn
 * only when its benchmark ran.
 */

export interface LatenessPath {
  readonly name: string;
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
}

export interface LatenessChartInput {
  readonly paths: readonly LatenessPath[];
  readonly goalMs: number;
  /** The setTimeout baseline's p99, drawn as a second line. */
  readonly baselineP99Ms?: number;
  readonly title?: string;
}

export interface ThroughputChartInput {
  /** Seconds since the messages came due, and the rate in the window that starts there. */
  readonly windows: readonly { readonly start: number; readonly perSecond: number }[];
  readonly windowSeconds: number;
  readonly overallPerSecond: number;
  /** Memory over time (seconds since due, MB); the JVM's when it was measured. */
  readonly memory?: readonly { readonly t: number; readonly rssMb: number; readonly jvmRssMb?: number }[];
  readonly title?: string;
}

export interface ChartFile {
  readonly file: string;
  readonly svg: string;
}

const WIDTH = 760;
const FONT = 'font-family="sans-serif" font-size="12"';
const COLORS = { p50: '#4e79a7', p99: '#f28e2b', max: '#bab0ac', goal: '#d62728', baseline: '#59a14f' };

/** Writes every chart the results allow into `dir`; returns the paths written. */
export function writeCharts(results: readonly BenchResult[], dir: string): string[] {
  const charts = renderCharts(results);
  if (charts.length > 0) mkdirSync(dir, { recursive: true });
  return charts.map((chart) => {
    const path = join(dir, chart.file);
    writeFileSync(path, chart.svg);
    return path;
  });
}

/** The charts for the benchmarks in `results` that have something to draw. */
export function renderCharts(results: readonly BenchResult[]): ChartFile[] {
  const charts: ChartFile[] = [];
  const lateness = latenessInput(results.find((result) => result.name === 'precision'));
  if (lateness) charts.push({ file: 'lateness.svg', svg: latenessChart(lateness) });
  const throughput = throughputInput(results.find((result) => result.name === 'scale'));
  if (throughput) charts.push({ file: 'throughput.svg', svg: throughputChart(throughput) });
  return charts;
}

/** Grouped bars (p50, p99, max) per path, a dashed goal line and the baseline's p99. */
export function latenessChart(input: LatenessChartInput): string {
  const plot = { left: 70, top: 50, width: WIDTH - 70 - 20, height: 300 };
  const height = plot.top + plot.height + 80;
  const values = input.paths.flatMap((path) => [path.p50, path.p99, path.max]);
  const axis = niceAxis(
    Math.max(input.goalMs * 1.2, input.baselineP99Ms ?? 0, ...values.filter(Number.isFinite)),
  );
  const y = (value: number) => plot.top + plot.height - (Math.max(0, value) / axis.max) * plot.height;
  const group = plot.width / Math.max(1, input.paths.length);
  const barWidth = Math.min(36, (group * 0.75) / 3);
  const parts: string[] = [
    ...frame(input.title ?? 'Lateness at the SMTP sink per path (ms)', height),
    ...yAxis(plot, axis, y, 'lateness (ms)'),
  ];
  input.paths.forEach((path, index) => {
    const center = plot.left + group * (index + 0.5);
    (['p50', 'p99', 'max'] as const).forEach((metric, k) => {
      const value = path[metric];
      if (!Number.isFinite(value)) return;
      const top = y(value);
      const x = center + (k - 1.5) * barWidth;
      parts.push(
        `<rect class="bar" data-path="${escapeXml(path.name)}" data-metric="${metric}" data-value="${value}" x="${fixed(x)}" y="${fixed(top)}" width="${fixed(barWidth - 2)}" height="${fixed(plot.top + plot.height - top)}" fill="${COLORS[metric]}"><title>${escapeXml(`${path.name} ${metric}: ${value} ms`)}</title></rect>`,
      );
    });
    const [first, second] = splitLabel(path.name);
    const labelY = plot.top + plot.height + 18;
    parts.push(
      `<text x="${fixed(center)}" y="${labelY}" text-anchor="middle" ${FONT}>${escapeXml(first)}</text>`,
    );
    if (second) {
      parts.push(
        `<text x="${fixed(center)}" y="${labelY + 14}" text-anchor="middle" ${FONT} fill="#555">${escapeXml(second)}</text>`,
      );
    }
  });
  parts.push(
    horizontalLine('goal', plot, y(input.goalMs), COLORS.goal, `goal: p99 ≤ ${input.goalMs} ms`, '6 4'),
  );
  if (input.baselineP99Ms !== undefined && Number.isFinite(input.baselineP99Ms)) {
    parts.push(
      horizontalLine(
        'baseline',
        plot,
        y(input.baselineP99Ms),
        COLORS.baseline,
        `setTimeout p99 (baseline): ${input.baselineP99Ms} ms`,
        '2 3',
      ),
    );
  }
  parts.push(
    ...legend(plot.left, height - 22, [
      ['p50', COLORS.p50],
      ['p99', COLORS.p99],
      ['max', COLORS.max],
    ]),
  );
  parts.push('</svg>');
  return `${parts.join('\n')}\n`;
}

/** Messages per second per window over time (with the overall rate), and memory below it. */
export function throughputChart(input: ThroughputChartInput): string {
  const memory = input.memory ?? [];
  const top = { left: 70, top: 50, width: WIDTH - 70 - 20, height: 220 };
  const bottom = { left: 70, top: top.top + top.height + 70, width: top.width, height: 160 };
  const height = (memory.length > 0 ? bottom.top + bottom.height : top.top + top.height) + 70;
  const lastWindow = input.windows[input.windows.length - 1];
  const tMin = Math.min(0, ...memory.map((m) => m.t));
  const tMax = Math.max(
    input.windowSeconds,
    lastWindow ? lastWindow.start + input.windowSeconds : 0,
    ...memory.map((m) => m.t),
  );
  // The rate from the due time on; the memory also over the fill before it.
  const rateRange = { min: 0, max: tMax };
  const x = (t: number) =>
    top.left + ((t - rateRange.min) / (rateRange.max - rateRange.min || 1)) * top.width;
  const xAxis = { min: tMin, max: tMax };

  const rateAxis = niceAxis(Math.max(input.overallPerSecond, ...input.windows.map((w) => w.perSecond)) * 1.1);
  const yRate = (value: number) => top.top + top.height - (Math.max(0, value) / rateAxis.max) * top.height;
  const parts: string[] = [
    ...frame(input.title ?? 'Drain rate over time', height),
    ...yAxis(top, rateAxis, yRate, 'msg/s'),
    ...timeAxis(top, rateRange, x, 'seconds since the messages came due'),
  ];
  const points = input.windows.map(
    (w) => `${fixed(x(w.start + input.windowSeconds / 2))},${fixed(yRate(w.perSecond))}`,
  );
  parts.push(
    `<polyline class="rate" points="${points.join(' ')}" fill="none" stroke="${COLORS.p50}" stroke-width="2"/>`,
  );
  for (const w of input.windows) {
    parts.push(
      `<circle class="window" data-start="${w.start}" data-value="${w.perSecond}" cx="${fixed(x(w.start + input.windowSeconds / 2))}" cy="${fixed(yRate(w.perSecond))}" r="2.5" fill="${COLORS.p50}"><title>${w.start}–${w.start + input.windowSeconds} s: ${w.perSecond} msg/s</title></circle>`,
    );
  }
  parts.push(
    horizontalLine(
      'overall',
      top,
      yRate(input.overallPerSecond),
      COLORS.p99,
      `overall: ${input.overallPerSecond} msg/s`,
      '6 4',
    ),
  );
  parts.push(
    `<text x="${top.left}" y="${top.top - 8}" ${FONT} fill="#555">messages per second in each ${input.windowSeconds} s window</text>`,
  );

  if (memory.length > 0) {
    const memoryAxis = niceAxis(Math.max(...memory.flatMap((m) => [m.rssMb, m.jvmRssMb ?? 0])) * 1.1);
    const yMemory = (value: number) =>
      bottom.top + bottom.height - (Math.max(0, value) / memoryAxis.max) * bottom.height;
    const xMemory = (t: number) =>
      bottom.left + ((t - xAxis.min) / (xAxis.max - xAxis.min || 1)) * bottom.width;
    parts.push(...yAxis(bottom, memoryAxis, yMemory, 'MB'));
    parts.push(
      ...timeAxis(bottom, xAxis, xMemory, 'seconds since the messages came due (negative: filling)'),
    );
    parts.push(
      `<text x="${bottom.left}" y="${bottom.top - 8}" ${FONT} fill="#555">resident memory (RSS)</text>`,
    );
    if (xAxis.min < 0) {
      const at = fixed(xMemory(0));
      parts.push(
        `<line class="due" x1="${at}" y1="${bottom.top}" x2="${at}" y2="${bottom.top + bottom.height}" stroke="#999" stroke-dasharray="3 3"/>`,
        `<text x="${at}" y="${bottom.top + 12}" dx="4" ${FONT} fill="#555">due</text>`,
      );
    }
    parts.push(
      `<polyline class="rss" points="${memory.map((m) => `${fixed(xMemory(m.t))},${fixed(yMemory(m.rssMb))}`).join(' ')}" fill="none" stroke="${COLORS.p50}" stroke-width="1.5"/>`,
    );
    const jvm = memory.filter((m) => m.jvmRssMb !== undefined);
    if (jvm.length > 0) {
      parts.push(
        `<polyline class="jvm-rss" points="${jvm.map((m) => `${fixed(xMemory(m.t))},${fixed(yMemory(m.jvmRssMb ?? 0))}`).join(' ')}" fill="none" stroke="${COLORS.baseline}" stroke-width="1.5"/>`,
      );
    }
    parts.push(
      ...legend(bottom.left, height - 22, [
        ['Node process', COLORS.p50],
        ...(jvm.length > 0 ? ([['DynamoDB Local JVM', COLORS.baseline]] as [string, string][]) : []),
      ]),
    );
  }
  parts.push('</svg>');
  return `${parts.join('\n')}\n`;
}

/** A round axis maximum and tick step (1, 2 or 5 × 10^k) for values up to `max`. */
export function niceAxis(max: number): { max: number; step: number } {
  const target = Number.isFinite(max) && max > 0 ? max : 1;
  const rough = target / 5;
  const magnitude = 10 ** Math.floor(Math.log10(rough));
  const step = ([1, 2, 5, 10].map((m) => m * magnitude).find((s) => s >= rough) ?? 10 * magnitude) as number;
  return { max: Math.ceil(target / step) * step, step };
}

export function escapeXml(text: string): string {
  return text
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;')
    .replaceAll("'", '&apos;');
}

interface Box {
  readonly left: number;
  readonly top: number;
  readonly width: number;
  readonly height: number;
}

function frame(title: string, height: number): string[] {
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}">`,
    `<rect x="0" y="0" width="${WIDTH}" height="${height}" fill="#ffffff"/>`,
    `<text x="${WIDTH / 2}" y="24" text-anchor="middle" font-family="sans-serif" font-size="15" font-weight="bold">${escapeXml(title)}</text>`,
  ];
}

function yAxis(
  box: Box,
  axis: { max: number; step: number },
  y: (value: number) => number,
  label: string,
): string[] {
  const parts = [
    `<line class="axis" x1="${box.left}" y1="${box.top}" x2="${box.left}" y2="${box.top + box.height}" stroke="#333"/>`,
    `<line class="axis" x1="${box.left}" y1="${box.top + box.height}" x2="${box.left + box.width}" y2="${box.top + box.height}" stroke="#333"/>`,
    `<text x="16" y="${fixed(box.top + box.height / 2)}" text-anchor="middle" ${FONT} transform="rotate(-90 16 ${fixed(box.top + box.height / 2)})">${escapeXml(label)}</text>`,
  ];
  for (let value = 0; value <= axis.max + axis.step / 1000; value += axis.step) {
    const at = fixed(y(value));
    parts.push(
      `<line x1="${box.left - 4}" y1="${at}" x2="${box.left + box.width}" y2="${at}" stroke="#e5e5e5"/>`,
      `<text x="${box.left - 8}" y="${at}" dy="4" text-anchor="end" ${FONT}>${formatTick(value)}</text>`,
    );
  }
  return parts;
}

function timeAxis(
  box: Box,
  range: { min: number; max: number },
  x: (t: number) => number,
  label: string,
): string[] {
  const axis = niceAxis(range.max - range.min);
  const parts = [
    `<text x="${fixed(box.left + box.width / 2)}" y="${box.top + box.height + 34}" text-anchor="middle" ${FONT}>${escapeXml(label)}</text>`,
  ];
  const first = Math.ceil(range.min / axis.step) * axis.step;
  for (let t = first; t <= range.max + axis.step / 1000; t += axis.step) {
    const at = fixed(x(t));
    parts.push(
      `<line x1="${at}" y1="${box.top + box.height}" x2="${at}" y2="${box.top + box.height + 4}" stroke="#333"/>`,
      `<text x="${at}" y="${box.top + box.height + 17}" text-anchor="middle" ${FONT}>${formatTick(t)}</text>`,
    );
  }
  return parts;
}

function horizontalLine(
  kind: string,
  box: Box,
  at: number,
  color: string,
  label: string,
  dash: string,
): string {
  return [
    `<line class="${kind}" x1="${box.left}" y1="${fixed(at)}" x2="${box.left + box.width}" y2="${fixed(at)}" stroke="${color}" stroke-width="1.5" stroke-dasharray="${dash}"/>`,
    `<text class="${kind}-label" x="${box.left + box.width - 4}" y="${fixed(at - 5)}" text-anchor="end" ${FONT} fill="${color}" stroke="#ffffff" stroke-width="3" paint-order="stroke">${escapeXml(label)}</text>`,
  ].join('\n');
}

function legend(left: number, y: number, entries: readonly (readonly [string, string])[]): string[] {
  return entries.flatMap(([label, color], index) => {
    const x = left + index * 160;
    return [
      `<rect x="${x}" y="${y - 10}" width="12" height="12" fill="${color}"/>`,
      `<text x="${x + 18}" y="${y}" ${FONT}>${escapeXml(label)}</text>`,
    ];
  });
}

/** "> 15 min (compressed: 80 s)" → ["> 15 min", "(compressed: 80 s)"]. */
function splitLabel(name: string): [string, string | undefined] {
  const at = name.indexOf(' (');
  return at < 0 ? [name, undefined] : [name.slice(0, at), name.slice(at + 1)];
}

const fixed = (value: number): string => String(Math.round(value * 10) / 10);
const formatTick = (value: number): string => String(Math.round(value * 1000) / 1000);

function latenessInput(result: BenchResult | undefined): LatenessChartInput | undefined {
  const details = asRecord(result?.details);
  const paths = asRecord(details?.paths);
  if (!result || !paths) return undefined;
  const list: LatenessPath[] = [];
  for (const [name, value] of Object.entries(paths)) {
    const spread = asRecord(value);
    const p50 = Number(spread?.p50);
    const p99 = Number(spread?.p99);
    const max = Number(spread?.max);
    if ([p50, p99, max].every(Number.isFinite)) list.push({ name, p50, p99, max });
  }
  if (list.length === 0) return undefined;
  const baseline = Number(asRecord(details?.baselineSetTimeout)?.p99);
  return {
    paths: list.map((path) => ({
      ...path,
      p50: round0(path.p50),
      p99: round0(path.p99),
      max: round0(path.max),
    })),
    goalMs: 500,
    ...(Number.isFinite(baseline) ? { baselineP99Ms: round0(baseline) } : {}),
    title: `Lateness at the SMTP sink per path, ms ${result.title.replace(/^[^(]*\(/, '(')}`,
  };
}

function throughputInput(result: BenchResult | undefined): ThroughputChartInput | undefined {
  const details = asRecord(result?.details);
  const drain = asRecord(details?.drain);
  if (!result || !drain || !Array.isArray(drain.windows)) return undefined;
  const windows = drain.windows.flatMap((w: unknown) => {
    const window = asRecord(w);
    const start = Number(window?.start);
    const perSecond = Number(window?.perSecond);
    return Number.isFinite(start) && Number.isFinite(perSecond) ? [{ start, perSecond }] : [];
  });
  if (windows.length === 0) return undefined;
  const samples = asRecord(details?.memory)?.samples;
  const memory = Array.isArray(samples)
    ? samples.flatMap((s: unknown) => {
        const sample = asRecord(s);
        const t = Number(sample?.t);
        const rssMb = Number(sample?.rssMb);
        const jvmRssMb = Number(sample?.jvmRssMb);
        if (!Number.isFinite(t) || !Number.isFinite(rssMb)) return [];
        return [{ t, rssMb, ...(Number.isFinite(jvmRssMb) ? { jvmRssMb } : {}) }];
      })
    : [];
  return {
    windows,
    windowSeconds: Number(drain.windowSeconds) || 5,
    overallPerSecond: Math.round(Number(drain.overallPerSecond) * 10) / 10,
    memory,
    title: `Scale: ${result.title.replace(/^Scale: /, '')}`,
  };
}

const round0 = (value: number): number => Math.round(value);

function asRecord(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : undefined;
}

/**
 * Where a command's output goes. Commands write through this small sink, never to `process.stdout`
 * directly, so tests can read exactly what a person (or a script, with `--json`) would see.
 *
 * - `--json`: exactly one JSON document on stdout per command, nothing else on stdout; a command
 *   that prints JSON Lines (`jsonLines`) prints one per line, its error document the last line.
 * - people: tables and lines on stdout; colour and the progress bar only when the stream is a TTY.
 * - errors and progress always go to stderr, so `--json` output stays parseable; with `--json` an
 *   error is also one document on stdout, `{"error": {…}}` (cli/cliErrors.ts, `errorDocument`).
 *
 * Every JSON document goes through `jsonStyle`: snake_case keys, as the API writes them, whatever
 * the command's own types call them. A command adds nothing to get it: `out.data(report)`.
 */

/**
 * Keys whose values are someone's own data (a tenant's tags and metadata, the headers of a message,
 * SQS message attributes): kept as they are, all the way down.
 */
const VERBATIM_KEYS = new Set(['tags', 'metadata', 'headers', 'attributes']);

/**
 * Keys whose values are maps keyed by someone's own names (tallies by tenant or by tag, the paused
 * kinds: a tenant's `tags.kind` values): the names are data, kept as they are; what each name maps to
 * is ours, styled like any other value.
 */
const NAMED_MAP_KEYS = new Set(['by_tenant', 'by_tag', 'kinds']);

/** `receiveCount` → `receive_count`; keys already in snake_case (or UPPER_CASE) stay as they are. */
export function snakeCase(key: string): string {
  return key.replace(
    /([a-z0-9])([A-Z])/g,
    (_, before: string, capital: string) => `${before}_${capital.toLowerCase()}`,
  );
}

/**
 * The one JSON style of the CLI: a copy of `value` with every object key in snake_case (the
 * API's style), except inside the maps named in VERBATIM_KEYS and the names of NAMED_MAP_KEYS. Dates become ISO strings, as
 * JSON.stringify makes them.
 */
export function jsonStyle(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(jsonStyle);
  if (value instanceof Date) return value.toISOString();
  if (typeof value !== 'object' || value === null) return value;
  const styled: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(value as Record<string, unknown>)) {
    const name = snakeCase(key);
    styled[name] = VERBATIM_KEYS.has(name)
      ? inner
      : NAMED_MAP_KEYS.has(name) && typeof inner === 'object' && inner !== null && !Array.isArray(inner)
        ? Object.fromEntries(Object.entries(inner).map(([own, value]) => [own, jsonStyle(value)]))
        : jsonStyle(inner);
  }
  return styled;
}

export interface Output {
  /** `--json` was given: commands print one JSON document instead of tables. */
  readonly json: boolean;
  /** ANSI colour is allowed (stdout is a TTY and NO_COLOR is not set). */
  readonly colour: boolean;
  /** A progress bar is shown (stderr is a TTY and `--json` was not given). */
  readonly interactive: boolean;
  /** One line of output for people (ignored in JSON mode by the helpers below). */
  line(text: string): void;
  /** The whole result of a command, as JSON. */
  data(value: unknown): void;
  /** A warning or an error line, on stderr. */
  warn(text: string): void;
  /** Progress of a long command; the terminal sink draws a bar, others ignore it. */
  progress(label: string, done: number, total: number | null): void;
}

export interface TerminalOutputOptions {
  readonly json: boolean;
  /** The command prints JSON Lines: every document, an error's included, is one line. */
  readonly jsonLines?: boolean;
  readonly stdout?: NodeJS.WriteStream;
  readonly stderr?: NodeJS.WriteStream;
  readonly env?: Readonly<Record<string, string | undefined>>;
}

/** The sink the real CLI uses: process streams, colour on a TTY only (and never with NO_COLOR). */
export function terminalOutput(options: TerminalOutputOptions): Output {
  const stdout = options.stdout ?? process.stdout;
  const stderr = options.stderr ?? process.stderr;
  const env = options.env ?? process.env;
  const colour = stdout.isTTY === true && env.NO_COLOR === undefined && env.TERM !== 'dumb';
  const interactive = stderr.isTTY === true && !options.json;
  let barShown = false;
  const clearBar = () => {
    if (barShown) {
      stderr.write('\r\x1b[2K');
      barShown = false;
    }
  };
  return {
    json: options.json,
    colour,
    interactive,
    line(text) {
      clearBar();
      stdout.write(`${text}\n`);
    },
    data(value) {
      clearBar();
      stdout.write(`${JSON.stringify(jsonStyle(value), null, options.jsonLines === true ? undefined : 2)}\n`);
    },
    warn(text) {
      clearBar();
      stderr.write(`${text}\n`);
    },
    progress(label, done, total) {
      if (!interactive) return;
      stderr.write(`\r\x1b[2K${progressBar(label, done, total)}`);
      barShown = true;
      if (total !== null && done >= total) clearBar();
    },
  };
}

/** A sink that keeps everything in memory: what tests read. */
export interface MemoryOutput extends Output {
  readonly lines: string[];
  readonly warnings: string[];
  readonly documents: unknown[];
  readonly progressSteps: { label: string; done: number; total: number | null }[];
  /** Everything printed for people, joined by newlines. */
  text(): string;
}

export function memoryOutput(options: { json?: boolean } = {}): MemoryOutput {
  const lines: string[] = [];
  const warnings: string[] = [];
  const documents: unknown[] = [];
  const progressSteps: { label: string; done: number; total: number | null }[] = [];
  return {
    json: options.json ?? false,
    colour: false,
    interactive: false,
    lines,
    warnings,
    documents,
    progressSteps,
    line: (text) => lines.push(text),
    // Round-trip through JSON so tests see exactly what a script would parse.
    data: (value) => documents.push(JSON.parse(JSON.stringify(jsonStyle(value)))),
    warn: (text) => warnings.push(text),
    progress: (label, done, total) => progressSteps.push({ label, done, total }),
    text: () => lines.join('\n'),
  };
}

/** `[########------------] 12/40 label`, or a counter when the total is unknown. */
export function progressBar(label: string, done: number, total: number | null, width = 24): string {
  if (total === null || total <= 0) return `${label}: ${done}`;
  const ratio = Math.max(0, Math.min(1, done / total));
  const filled = Math.round(ratio * width);
  return `[${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ${done}/${total} ${label}`;
}

const ANSI = { red: 31, green: 32, yellow: 33, cyan: 36, dim: 2, bold: 1 } as const;
export type Tone = keyof typeof ANSI;

/** Wraps text in an ANSI colour when the sink allows colour; plain text otherwise. */
export function paint(out: Pick<Output, 'colour'>, tone: Tone, text: string): string {
  return out.colour ? `\x1b[${ANSI[tone]}m${text}\x1b[0m` : text;
}

/** The tone a status is shown in: red for what needs a person, green for done, yellow for waiting. */
export function statusTone(status: string): Tone {
  switch (status) {
    case 'sent':
      return 'green';
    case 'dead':
    case 'failed':
    case 'unknown':
      return 'red';
    case 'retrying':
    case 'sending':
      return 'yellow';
    case 'scheduled':
      return 'cyan';
    default:
      return 'dim';
  }
}

export interface Column<Row> {
  readonly header: string;
  readonly value: (row: Row) => string;
  /** Colour for a cell (applied after padding, so alignment holds). */
  readonly tone?: (row: Row) => Tone | undefined;
  readonly align?: 'left' | 'right';
}

/** Prints rows as an aligned table (for people). An empty list prints `empty` instead. */
export function printTable<Row>(
  out: Output,
  columns: readonly Column<Row>[],
  rows: readonly Row[],
  empty = '(none)',
): void {
  if (rows.length === 0) {
    out.line(paint(out, 'dim', empty));
    return;
  }
  const cells = rows.map((row) => columns.map((column) => column.value(row)));
  const widths = columns.map((column, i) =>
    Math.max(column.header.length, ...cells.map((row) => (row[i] ?? '').length)),
  );
  const pad = (text: string, i: number) => {
    const width = widths[i] ?? text.length;
    return columns[i]?.align === 'right' ? text.padStart(width) : text.padEnd(width);
  };
  out.line(paint(out, 'bold', columns.map((column, i) => pad(column.header, i)).join('  ')).trimEnd());
  rows.forEach((row, r) => {
    const line = columns
      .map((column, i) => {
        const text = pad(cells[r]?.[i] ?? '', i);
        const tone = column.tone?.(row);
        return tone ? paint(out, tone, text) : text;
      })
      .join('  ');
    out.line(line.trimEnd());
  });
}

/** Prints `key: value` pairs aligned (for `show` commands). */
export function printFields(out: Output, fields: readonly (readonly [string, string])[]): void {
  const width = Math.max(...fields.map(([key]) => key.length));
  for (const [key, value] of fields) out.line(`${paint(out, 'bold', `${key}:`.padEnd(width + 1))} ${value}`);
}

/** "1 message", "3 messages": a count with its noun, for people (`plural` where not `noun` + "s"). */
export function counted(count: number, noun: string, plural = `${noun}s`): string {
  return `${count} ${count === 1 ? noun : plural}`;
}

/** "3 h 12 min", "45 s": an age or a duration for people. */
export function formatDuration(milliseconds: number): string {
  const seconds = Math.max(0, Math.round(milliseconds / 1000));
  if (seconds < 60) return `${seconds} s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes} min ${seconds % 60} s`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return `${hours} h ${minutes % 60} min`;
  return `${Math.floor(hours / 24)} d ${hours % 24} h`;
}

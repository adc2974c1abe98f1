/**
 * How `npm start` shows the functions' logs (issue 17 §4: "request logs drown the banner"). The
 * functions log as in Lambda — one Powertools JSON line per event — and that stays true in `json`
 * mode. A developer at a terminal wants less:
 *
 * - `pretty` (the default): one short line per log entry (`14:54:11 api  request enqueue 202 …`),
 *   without the Lambda context fields; nothing at INFO before the banner, so the banner is the last
 *   thing on the screen when the stack is ready.
 * - `quiet`: only warnings and errors (and the stack's own lines).
 * - `json`: the lines as the functions wrote them.
 *
 * The choice is `POSTDATE_LOG` (`LOCAL_LOG_SETTING`), or `npm start -- --quiet | --pretty | --json`
 * (the argument wins).
 */

import { ConfigError } from '../lambdas/core/config.js';
import { LOCAL_LOG_MODES, LOCAL_LOG_SETTING, type LocalLogMode } from '../lambdas/core/configSpec.js';

export { LOCAL_LOG_MODES, type LocalLogMode };

/**
 * The mode from the arguments (`--quiet`, `--pretty`, `--json`) or the environment. `otherArguments`
 * are the caller's own (already taken out of `argv`), named with the modes when one is unknown.
 * @throws ConfigError naming `POSTDATE_LOG` for a value that is not a mode, or for an unknown argument.
 */
export function logModeOf(
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
  otherArguments: readonly string[] = [],
): LocalLogMode {
  for (const argument of argv) {
    const mode = argument.replace(/^--/, '');
    if (isLogMode(mode)) return mode;
    const known = [...LOCAL_LOG_MODES.map((m) => `--${m}`), ...otherArguments];
    throw new ConfigError('npm start', `unknown argument "${argument}" (one of ${known.join(', ')})`);
  }
  const raw = env[LOCAL_LOG_SETTING.variable]?.trim().toLowerCase();
  if (raw === undefined || raw === '') return LOCAL_LOG_SETTING.default;
  if (isLogMode(raw)) return raw;
  throw new ConfigError(
    LOCAL_LOG_SETTING.variable,
    `must be one of ${LOCAL_LOG_MODES.join(', ')}, got "${raw}"`,
  );
}

function isLogMode(value: string): value is LocalLogMode {
  return (LOCAL_LOG_MODES as readonly string[]).includes(value);
}

/** Fields every Powertools line carries that say nothing about the event itself. */
const CONTEXT_FIELDS = new Set([
  'level',
  'message',
  'timestamp',
  'service',
  'cold_start',
  'function_arn',
  'function_memory_size',
  'function_name',
  'function_request_id',
  'sampling_rate',
  'xray_trace_id',
]);

const LOUD_LEVELS = new Set(['WARN', 'ERROR', 'CRITICAL']);

interface LogEntry {
  readonly level: string;
  readonly message: string;
  readonly [field: string]: unknown;
}

function parseEntry(line: string): LogEntry | undefined {
  if (!line.startsWith('{')) return undefined;
  try {
    const value: unknown = JSON.parse(line);
    if (typeof value !== 'object' || value === null) return undefined;
    const { level, message } = value as { level?: unknown; message?: unknown };
    return typeof level === 'string' && typeof message === 'string' ? (value as LogEntry) : undefined;
  } catch {
    return undefined;
  }
}

/** `key=value` for a field worth a glance: no zeros, no empty lists or objects, no context. */
function fieldText(key: string, value: unknown): string | undefined {
  if (CONTEXT_FIELDS.has(key) || value === null || value === undefined || value === 0 || value === '') {
    return undefined;
  }
  if (Array.isArray(value)) return value.length === 0 ? undefined : `${key}=${value.length}`;
  if (typeof value === 'object') {
    const parts = Object.entries(value as Record<string, unknown>)
      .map(([inner, innerValue]) => fieldText(inner, innerValue))
      .filter((part) => part !== undefined);
    return parts.length === 0 ? undefined : `${key}{${parts.join(' ')}}`;
  }
  // The route, status and ids read best bare; everything else as key=value.
  if (key === 'route' || key === 'status' || key === 'message_status') return String(value);
  return `${key}=${String(value)}`;
}

/** One short line for people: time, function, message, the fields that matter. */
export function prettyLine(entry: LogEntry, width = 160): string {
  const time = typeof entry.timestamp === 'string' ? entry.timestamp.slice(11, 19) : '        ';
  const service = typeof entry.service === 'string' ? entry.service.replace(/^postdate-/, '') : '';
  const level = LOUD_LEVELS.has(entry.level) ? `${entry.level} ` : '';
  const fields = Object.entries(entry)
    .map(([key, value]) => fieldText(key, value))
    .filter((part) => part !== undefined);
  const line = `${time} ${service.padEnd(7)} ${level}${entry.message} ${fields.join(' ')}`.trimEnd();
  return line.length > width ? `${line.slice(0, width - 1)}…` : line;
}

/**
 * What becomes of one line of output in a mode: the line, a shorter one, or nothing. Lines that are
 * not a function's JSON log (the banner, the stack's own notes) always pass unchanged.
 */
export function renderLine(line: string, mode: LocalLogMode, bannerShown: boolean): string | undefined {
  if (mode === 'json') return line;
  const entry = parseEntry(line);
  if (entry === undefined) return line;
  const loud = LOUD_LEVELS.has(entry.level);
  if (mode === 'quiet' || !bannerShown) return loud ? prettyLine(entry) : undefined;
  return prettyLine(entry);
}

export interface LogFilter {
  /** From now on INFO lines are shown (in `pretty`). */
  bannerShown(): void;
}

/**
 * Routes every write to `stream` through `renderLine`, line by line. The functions' sandboxes are
 * worker threads whose stdout Node pipes into this process's stdout, and the in-process api logs
 * through `console`: this one stream is where all of them meet. A chunk that ends inside a line is
 * held until its newline.
 */
export function installLogFilter(stream: NodeJS.WriteStream, mode: LocalLogMode): LogFilter {
  let shown = false;
  if (mode === 'json') return { bannerShown: () => undefined };
  const write = stream.write.bind(stream) as (chunk: string | Uint8Array, ...rest: unknown[]) => boolean;
  let pending = '';
  stream.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
    const text = pending + (typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8'));
    const lines = text.split('\n');
    pending = lines.pop() ?? '';
    // Only a JSON log line is worth holding back for its end; anything else goes out as it came.
    const tail = pending.startsWith('{') ? '' : pending;
    if (tail !== '') pending = '';
    const kept = lines.map((line) => renderLine(line, mode, shown)).filter((line) => line !== undefined);
    if (kept.length === 0 && tail === '') {
      // The callback (if any) is still owed its call.
      const callback = rest.find((value) => typeof value === 'function') as (() => void) | undefined;
      callback?.();
      return true;
    }
    return write(`${kept.map((line) => `${line}\n`).join('')}${tail}`, ...rest);
  }) as typeof stream.write;
  return {
    bannerShown: () => {
      shown = true;
    },
  };
}

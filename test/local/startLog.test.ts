import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../lambdas/core/config.js';
import { installLogFilter, logModeOf, prettyLine, renderLine } from '../../local/startLog.js';

/**
 * `npm start`'s log modes (issue 17 §4: "request logs drown the banner"): `pretty` by default, one
 * short line per function log entry and nothing at INFO before the banner; `quiet` only warnings and
 * errors; `json` the lines as the functions wrote them.
 */

const requestLine = JSON.stringify({
  level: 'INFO',
  message: 'request',
  timestamp: '2026-12-01T14:54:11.664Z',
  service: 'postdate-api',
  cold_start: false,
  function_arn: 'arn:aws:lambda:us-east-1:000000000000:function:postdate-api',
  function_memory_size: '512',
  function_name: 'postdate-api',
  function_request_id: '9c1dbe6b-f9f9-46ae-82f0-ebc1a02d0bfb',
  sampling_rate: 0,
  route: 'enqueue',
  tenant: 'local',
  status: 202,
  message_id: '35elf6ihtjvcwahuuiesu3l7pz',
  message_status: 'scheduled',
});
const warnLine = JSON.stringify({
  level: 'WARN',
  message: 'relay paused',
  timestamp: '2026-12-01T14:55:00.000Z',
  service: 'postdate-sender',
  retry_in_seconds: 30,
});

/** A stream like process.stdout, whose written text the test reads. */
function fakeStdout(): { stream: NodeJS.WriteStream; text: () => string } {
  const stream = new PassThrough() as unknown as NodeJS.WriteStream;
  let text = '';
  (stream as unknown as PassThrough).on('data', (chunk: Buffer) => {
    text += chunk.toString();
  });
  return { stream, text: () => text };
}

describe("npm start's log modes", () => {
  it('defaults to pretty; POSTDATE_LOG and --quiet/--pretty/--json choose, the argument winning', () => {
    expect(logModeOf([], {})).toBe('pretty');
    expect(logModeOf([], { POSTDATE_LOG: 'JSON' })).toBe('json');
    expect(logModeOf(['--quiet'], { POSTDATE_LOG: 'json' })).toBe('quiet');
    expect(() => logModeOf([], { POSTDATE_LOG: 'loud' })).toThrow(ConfigError);
    expect(() => logModeOf([], { POSTDATE_LOG: 'loud' })).toThrow(
      /POSTDATE_LOG: must be one of pretty, quiet, json/,
    );
    expect(() => logModeOf(['--verbose'], {})).toThrow(/unknown argument "--verbose"/);
  });

  it('pretty: one short line with the time, the function and what happened, without the Lambda context', () => {
    const line = renderLine(requestLine, 'pretty', true);
    expect(line).toBe(
      '14:54:11 api     request enqueue tenant=local 202 message_id=35elf6ihtjvcwahuuiesu3l7pz scheduled',
    );
    expect(line).not.toContain('function_arn');
    expect(prettyLine(JSON.parse(warnLine))).toBe('14:55:00 sender  WARN relay paused retry_in_seconds=30');
    expect(prettyLine(JSON.parse(requestLine), 40)).toHaveLength(40);
  });

  it('pretty keeps the banner last: INFO before it is dropped, warnings are shown', () => {
    expect(renderLine(requestLine, 'pretty', false)).toBeUndefined();
    expect(renderLine(warnLine, 'pretty', false)).toContain('WARN relay paused');
  });

  it('quiet shows only warnings and errors; json passes every line untouched; other lines always pass', () => {
    expect(renderLine(requestLine, 'quiet', true)).toBeUndefined();
    expect(renderLine(warnLine, 'quiet', true)).toContain('WARN relay paused');
    expect(renderLine(requestLine, 'json', false)).toBe(requestLine);
    for (const mode of ['pretty', 'quiet', 'json'] as const) {
      expect(renderLine('  API key      pd_x', mode, false)).toBe('  API key      pd_x');
      expect(renderLine('{not json', mode, true)).toBe('{not json');
    }
  });

  it('the filter on stdout rewrites whole lines, joins a JSON line split across writes, and passes the banner', async () => {
    const { stream, text } = fakeStdout();
    const filter = installLogFilter(stream, 'pretty');
    stream.write(`${requestLine}\n`);
    stream.write('\nPostdate local stack ready in 3.0 s\n');
    filter.bannerShown();
    stream.write(requestLine.slice(0, 40));
    stream.write(`${requestLine.slice(40)}\n${warnLine}\n`);
    stream.write(Buffer.from('Ctrl-C stops everything.\n'));
    await new Promise((resolve) => setImmediate(resolve));
    expect(text().split('\n')).toEqual([
      '',
      'Postdate local stack ready in 3.0 s',
      '14:54:11 api     request enqueue tenant=local 202 message_id=35elf6ihtjvcwahuuiesu3l7pz scheduled',
      '14:55:00 sender  WARN relay paused retry_in_seconds=30',
      'Ctrl-C stops everything.',
      '',
    ]);
  });

  it('json mode leaves the stream as it was', async () => {
    const { stream, text } = fakeStdout();
    const write = stream.write;
    installLogFilter(stream, 'json');
    expect(stream.write).toBe(write);
    stream.write(`${requestLine}\n`);
    await new Promise((resolve) => setImmediate(resolve));
    expect(text()).toBe(`${requestLine}\n`);
  });
});

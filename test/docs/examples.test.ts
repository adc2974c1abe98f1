import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../lambdas/core/config.js';
import { CONFIG_SETTINGS } from '../../lambdas/core/configSpec.js';
import { ANY_FREE_PORTS } from '../../local/localEnv.js';
import { type LocalStack, startLocalStack } from '../../local/localStack.js';
import { spawnCaptured } from '../local/npmStartProcess.js';

/**
 * The README's and docs/api.md's shell examples (issue 17 §4), run as a reader runs them: the fenced
 * `sh` blocks, unchanged but for the documented base URL (the stack here listens on a free port, not
 * on 3000), in bash, against a local stack started by this test with the API key the README exports.
 * Every `curl` reports its status code and every `npx postdate` its exit code on stderr, and the test
 * checks the sequence: a 404 from a made-up id, or a reschedule past its own `not_after`, fails here.
 */

const ROOT = join(import.meta.dirname, '..', '..');
const DOCUMENTED_URLS = [
  `http://localhost:${CONFIG_SETTINGS.port.local}`,
  `http://127.0.0.1:${CONFIG_SETTINGS.port.local}`,
];

/** The fenced ```sh blocks of a Markdown file, in order. */
function shellBlocks(file: string): string[] {
  const text = readFileSync(join(ROOT, file), 'utf8');
  return [...text.matchAll(/^```(?:sh|bash|shell)\n([\s\S]*?)^```$/gm)].map((match) => match[1] ?? '');
}

/** What the wrappers report, one line each: `HTTP 202 POST /v1/messages` or `EXIT 0 postdate …`. */
const WRAPPERS = String.raw`
curl() { command curl -w '%{stderr}HTTP %{http_code} %{method} %{url_effective}\n' "$@"; }
npx() { command npx "$@"; local rc=$?; echo "EXIT $rc $*" >&2; return 0; }
`;

interface Run {
  readonly code: number | null;
  readonly stdout: string;
  /** The wrappers' lines, with the stack's URL back to the documented path. */
  readonly calls: string[];
  readonly stderr: string;
}

describe("the docs' examples run against a local stack", () => {
  let stack: LocalStack;
  const readmeBlocks = shellBlocks('README.md');
  // The key the README's quick start exports (and the api.md example reads).
  const exported = readmeBlocks
    .flatMap((block) => block.split('\n'))
    .map((line) => line.match(/^export POSTDATE_API_KEY=(\S+)/)?.[1])
    .find((key) => key !== undefined);

  beforeAll(async () => {
    expect(exported, 'the README exports POSTDATE_API_KEY').toBeDefined();
    const config = loadConfig({ POSTDATE_API_KEY: exported }, 'local');
    stack = await startLocalStack({ config, ports: ANY_FREE_PORTS, quiet: true });
  }, 120_000);

  afterAll(async () => {
    await stack?.stop();
  });

  async function runScript(script: string): Promise<Run> {
    let body = script;
    for (const url of DOCUMENTED_URLS) body = body.replaceAll(url, stack.apiUrl);
    const run = spawnCaptured('bash', ['-c', `${WRAPPERS}\n${body}`], {
      cwd: ROOT,
      env: {
        ...process.env,
        POSTDATE_API_KEY: exported,
        // The CLI finds the stack as it finds `npm start`'s, through the endpoints.
        AWS_ENDPOINT_URL_DYNAMODB: stack.dynamodbEndpoint,
        AWS_ENDPOINT_URL_SQS: stack.sqsEndpoint,
        AWS_ENDPOINT_URL_SCHEDULER: stack.schedulerEndpoint,
        POSTDATE_TABLE_NAME: '',
        NO_COLOR: '1',
      },
    });
    const { code } = await run.exited;
    const stdout = run.stdout();
    const stderr = run.stderr();
    const calls = stderr
      .split('\n')
      .filter((line) => /^(HTTP|EXIT) /.test(line))
      .map((line) => line.replace(stack.apiUrl, '').replace(/\?.*$/, ''));
    return { code, stdout, calls, stderr };
  }

  it("README: the quick start's enqueue and read, then the CLI's examples", async () => {
    const script = readmeBlocks.filter((block) => /\bcurl |npx postdate /.test(block)).join('\n');
    const run = await runScript(script);
    const messageId = run.stdout.match(/"id":"([a-z2-7]{26})"/)?.[1];
    expect(messageId, run.stderr).toBeDefined();
    const at = (path: string) => path.replace('{id}', messageId ?? '?');
    expect(run.calls, run.stderr).toEqual([
      'HTTP 202 POST /v1/messages',
      at('HTTP 200 GET /v1/messages/{id}'),
      'EXIT 0 postdate messages list --status dead',
      at('EXIT 0 postdate messages show {id}'),
      'EXIT 0 postdate dlq show',
      // It was sent, so no copy of it is in the DLQ: exactly what the README's comment says.
      at('EXIT 1 postdate dlq redrive --ids {id} --dry-run'),
      expect.stringMatching(/^EXIT [01] postdate reconcile --json$/),
      'EXIT 0 postdate keys create --tenant acme',
    ]);
    // The message the README enqueues is delivered (on a loaded machine perhaps after its sleep).
    await expect
      .poll(
        async () => {
          const response = await fetch(`${stack.apiUrl}/v1/messages/${messageId}`, {
            headers: { authorization: `Bearer ${exported}` },
          });
          return ((await response.json()) as { status?: string }).status;
        },
        { timeout: 30_000, interval: 250 },
      )
      .toBe('sent');
    expect(run.stderr).not.toMatch(/postdate: /);
  }, 240_000);

  it('docs/api.md: enqueue, replay, read, list and page, reschedule, cancel, retry, group', async () => {
    const blocks = shellBlocks('docs/api.md').filter((block) => block.includes('curl '));
    expect(blocks).toHaveLength(1);
    const run = await runScript(blocks[0] ?? '');
    expect(run.code, run.stderr).toBe(0);
    const messageId = run.stdout.match(/"id":"([a-z2-7]{26})"/)?.[1] ?? '?';
    const at = (line: string) => line.replace('{id}', messageId);
    const expected = [
      'HTTP 202 POST /v1/messages',
      'HTTP 200 POST /v1/messages',
      at('HTTP 200 GET /v1/messages/{id}'),
      'HTTP 200 GET /v1/messages',
      at('HTTP 200 PATCH /v1/messages/{id}'),
      at('HTTP 200 DELETE /v1/messages/{id}'),
      at('HTTP 409 POST /v1/messages/{id}/retry'),
      'HTTP 200 PUT /v1/groups/campaign%3A42%3Astatus',
      'HTTP 202 POST /v1/messages',
    ];
    // Paging on is shown only when the first page has a next_cursor (another scheduled message).
    const calls = run.calls.filter(
      (line, i, all) => !(line === 'HTTP 200 GET /v1/messages' && all[i - 1] === line),
    );
    expect(calls, run.stderr).toEqual(expected);
    expect(run.stdout).toMatch(/^idempotent-replayed: true\r?$/im);
    expect(run.stdout).toContain('"current_status":"cancelled"');
    expect(run.stdout).toMatch(/"send_at_local":"\d{4}-\d{2}-\d{2}T09:00:00","time_zone":"Europe\/Berlin"/);
  }, 120_000);
});

import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { loadConfig } from '../../lambdas/core/config.js';
import { ANY_FREE_PORTS, type LocalPart, PortInUseError, takenMeanwhile } from '../../local/localEnv.js';
import { startLocalStack } from '../../local/localStack.js';
import { eventually } from '../support/eventually.js';
import { distinctFreePorts } from '../support/freePorts.js';
import { descendants, killLeftovers, listenerOwners, marked, npmStart } from './npmStartProcess.js';

/**
 * DESIGN §7, docs/local-stack.md: a part asked as 0 gets "any free port". `startLocalStack` draws
 * it (local/freePort.ts) seconds before the part listens, and another test file's stack, in another
 * vitest worker, draws from the same 12,768 ports meanwhile (decision 0296: about one CI run in 50).
 * A user of `startLocalStack` (the product's local API, which tests and users' own tests call)
 * expects what `npm start` does: a drawn port taken meanwhile is drawn again, never a failure. A port
 * the user FIXED and finds taken is still the one line naming the variable, never drawn again.
 *
 * The collision is made, not waited for: `Math.random` lands `freePort`'s draw for the part on a
 * chosen port, and at the next draw (the next part's: the drawn port was just found free, and no
 * part listens yet) an HTTP server of this test takes it, as another stack's part would.
 */
const LOWEST = 20_000;
const ephemeralLow = Number(
  readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0],
);
/** Parts in the order `claimPorts` draws them. */
const DRAW_ORDER: readonly LocalPart[] = ['api', 'dynamodb', 'sqs', 'scheduler', 'smtp', 'mailViewer', 's3'];

/** An HTTP server that answers every request 404, as another stack's API or S3 emulator would. */
function otherProgram(): { server: Server; failed: Error[] } {
  const failed: Error[] = [];
  const server = createServer((_request, response) => {
    response.statusCode = 404;
    response.end('not this stack');
  });
  server.on('error', (error) => failed.push(error));
  return { server, failed };
}

/**
 * At `freePort`'s draw number `takeAt` (0 is the first of the start), `other` listens on `port`
 * (bound at once: the address is a literal); draw `takeAt - 1` lands on `port` when `drawn` (a part
 * asked as 0), else it is random too (a fixed port is checked, not drawn). Every other draw is random.
 */
function takeAtDraw(takeAt: number, port: number, other: Server, drawn: boolean): void {
  const random = Math.random.bind(Math);
  let draws = 0;
  vi.spyOn(Math, 'random').mockImplementation(() => {
    const draw = draws;
    draws += 1;
    if (drawn && draw === takeAt - 1) return (port - LOWEST + 0.5) / (ephemeralLow - LOWEST);
    if (draw === takeAt) other.listen(port, '127.0.0.1');
    return random();
  });
}

const stopped: { stop(): Promise<void> }[] = [];
const others: Server[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  await Promise.all(stopped.splice(0).map((stack) => stack.stop()));
  await Promise.all(
    others
      .splice(0)
      .map(
        (server) =>
          new Promise<void>((resolve) => (server.listening ? server.close(() => resolve()) : resolve())),
      ),
  );
});

describe.runIf(process.platform === 'linux')('a port drawn for a part and taken before it listens', () => {
  it.each(['api', 'dynamodb'] as const)(
    'the %s: startLocalStack draws again and starts, and leaves the other program its port',
    async (part) => {
      const [port] = await distinctFreePorts(1);
      const other = otherProgram();
      others.push(other.server);
      // The draw after the part's is the next part's, made before any part listens.
      takeAtDraw(DRAW_ORDER.indexOf(part) + 1, port ?? 0, other.server, true);
      // What the failed start left when it starts again: its java, and its parts' ports still held
      // by this process (each part it reported ready; every one but the taken one listened).
      const ready: number[] = [];
      let leftAtRetry: { java: number[]; ports: number[] } | undefined;
      const stack = await startLocalStack({
        config: loadConfig({}, 'local'),
        ports: ANY_FREE_PORTS,
        onPartReady: (_part, detail) => {
          const listens = /127\.0\.0\.1:(\d+)/.exec(detail)?.[1];
          if (listens !== undefined && leftAtRetry === undefined) ready.push(Number(listens));
        },
        log: (line) => {
          if (!line.includes('starting again') || leftAtRetry !== undefined) return;
          const ours = new Set([process.pid, ...descendants(process.pid).map((child) => child.pid)]);
          leftAtRetry = {
            java: descendants(process.pid)
              .filter((child) => child.command === 'java')
              .map((child) => child.pid),
            ports: ready.filter((drawn) => (listenerOwners(drawn) ?? []).some((pid) => ours.has(pid ?? -1))),
          };
        },
      });
      stopped.push(stack);
      // The start was tried again, and the first one had stopped every part it started (DESIGN §7).
      expect(ready.length).toBeGreaterThan(0);
      expect(leftAtRetry).toEqual({ java: [], ports: [] });
      expect(other.failed).toEqual([]);
      expect(other.server.listening).toBe(true);
      expect(stack.ports[part]).not.toBe(port);
      // The stack is whole, on its own ports: DynamoDB Local answers the stack's health, not the other program.
      const health = await fetch(`${stack.apiUrl}/health`);
      expect(health.status, await health.clone().text()).toBe(200);
    },
    120_000,
  );

  it('a FIXED DynamoDB Local port taken so ends the start with the one line naming its variable, never drawn again', async () => {
    const [port] = await distinctFreePorts(1);
    const other = otherProgram();
    others.push(other.server);
    // The fixed port is checked free, not drawn: the first draw is the API's, the second the SQS emulator's.
    takeAtDraw(1, port ?? 0, other.server, false);
    const asked = { ...ANY_FREE_PORTS, dynamodb: port ?? 0 };
    const error = await startLocalStack({ config: loadConfig({}, 'local'), ports: asked, quiet: true }).then(
      (stack) => stack.stop().then(() => new Error(`the stack started on ${port}, which was taken`)),
      (refused: unknown) => refused,
    );
    expect(other.failed).toEqual([]);
    expect(error).toBeInstanceOf(PortInUseError);
    expect((error as Error).message).toBe(
      `port ${port} (DynamoDB Local) is already in use: stop what holds it, or set POSTDATE_DYNAMODB_PORT to another port (0 picks any free port)`,
    );
    expect(takenMeanwhile(error, asked)?.port).toBeUndefined();
  }, 120_000);
});

/**
 * `npm start` with every drawn port taken before its part listens (test/local/fixtures/everyDrawTaken.mjs,
 * preloaded): MailDev's and the stack's parts' alike. The user sees at most three starts in all, one
 * "starting again" line per restart, then the one line of the last failure and exit 1 — not the
 * stack's own three starts inside each of npm start's three (decision 0302).
 */
describe.runIf(process.platform === 'linux')('npm start when every drawn port is taken meanwhile', () => {
  it('starts three times in all, one line per restart, then ends with exit 1', async () => {
    const fixture = fileURLToPath(new URL('./fixtures/everyDrawTaken.mjs', import.meta.url));
    const start = npmStart({
      NODE_OPTIONS: [process.env.NODE_OPTIONS, `--import ${fixture}`].filter(Boolean).join(' '),
    });
    try {
      const code = await eventually(
        () =>
          `npm start to end (stdout: ${start.stdout().slice(-400)} stderr: ${start.stderr().slice(-300)})`,
        () => start.child.exitCode ?? undefined,
        { withinMs: 180_000, everyMs: 200 },
      );
      const restarts = start
        .stdout()
        .split('\n')
        .filter((line) => line.includes('starting again'));
      expect({ code, restarts: restarts.length }, start.stdout() + start.stderr()).toEqual({
        code: 1,
        restarts: 2,
      });
      expect(restarts.every((line) => /^ {2}port \d+, chosen for a part, was taken/.test(line))).toBe(true);
      // The user asked for any free port: the last line does not tell them to set one (0304).
      const last = start.stderr().trim().split('\n').at(-1);
      expect(last).toMatch(
        /^postdate: port \d+( \(.+\))?, chosen as a free port, was taken .* 3 starts in a row/,
      );
      expect(last).not.toMatch(/POSTDATE_\w+_PORT|0 picks any free port/);
    } finally {
      killLeftovers(marked(start.mark).map(({ pid }) => pid));
    }
  }, 240_000);
});

import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../lambdas/core/config.js';
import {
  claimPorts,
  LOCAL_PORT_VARIABLES,
  type LocalPart,
  loadLocalPorts,
  PortInUseError,
} from '../../local/localEnv.js';
import { startLocalStack } from '../../local/localStack.js';
import { eventually } from '../support/eventually.js';
import {
  bannerPorts,
  descendants,
  heldOutsideTheRun,
  killLeftovers,
  marked,
  type NpmStart,
  npmStart,
  ready,
} from './npmStartProcess.js';

/**
 * DESIGN §7 as a newcomer meets `npm start` (decision 0261): a port another program holds ends the
 * start with one line naming the port and the variable, and leaves nothing running; the parent's
 * death without a signal stops every part; POSTDATE_API_KEY fixes the key; on POSTDATE_DATA_DIR a
 * restart keeps the message whose copy waited in the (memory-only) SQS emulator, and it is
 * delivered once; its two stops are two of startStopping's ways (one Ctrl-C, Ctrl-C twice at once).
 * "Nothing running" is read from /proc: every process that carries the start's mark in its
 * environment (npm, node, DynamoDB Local's java, tsx's compilers) has ended, and no process outside
 * this test run listens on a port of its banner.
 */

const WITHIN_MS = 30_000;

let leftovers: number[] = [];
afterEach(() => {
  killLeftovers(leftovers);
  leftovers = [];
});

async function nothingLeft(mark: string, ports: readonly number[]): Promise<void> {
  await eventually(
    () => `no process of the run left (still: ${JSON.stringify(marked(mark))})`,
    () => marked(mark).length === 0,
    { withinMs: WITHIN_MS, everyMs: 100 },
  );
  // Free of the run: nothing outside this test run listens on it (another test may have taken it).
  for (const port of ports) {
    await eventually(`port ${port} to be free of the stack`, async () => !(await heldOutsideTheRun(port)), {
      withinMs: WITHIN_MS,
      everyMs: 100,
    });
  }
}

function startMarked(env: NodeJS.ProcessEnv): { start: NpmStart; mark: string } {
  const start = npmStart(env);
  return { start, mark: start.mark };
}

async function heldPort(): Promise<{ port: number; release(): Promise<void> }> {
  const holder = createServer();
  await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', () => resolve()));
  const address = holder.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return { port, release: () => new Promise<void>((resolve) => holder.close(() => resolve())) };
}

/** Every port variable at 0 (any free port), as npmStart sets them: a test fixes only the one it holds. */
const ALL_FREE: Record<string, string> = Object.fromEntries(
  Object.values(LOCAL_PORT_VARIABLES).map((variable) => [variable, '0']),
);

const PARTS: readonly [LocalPart, string][] = [
  ['api', 'the API'],
  ['smtp', 'the SMTP sink'],
  ['mailViewer', 'the mail viewer'],
  ['dynamodb', 'DynamoDB Local'],
  ['sqs', 'the SQS emulator'],
  ['s3', 'the S3 emulator'],
  ['scheduler', 'the Scheduler emulator'],
];

/** With SMTP_HOST set mail leaves through that relay: no MailDev, and no claim of every port up front. */
const RELAY_ELSEWHERE = { SMTP_HOST: '127.0.0.1', SMTP_PORT: '9' };
const WITH_RELAY = PARTS.filter(([part]) => part !== 'smtp' && part !== 'mailViewer');

const inUse = (port: number, name: string, variable: string) =>
  `port ${port} (${name}) is already in use: stop what holds it, or set ${variable} to another port (0 picks any free port)`;

/**
 * Which port is busy is decided before any part starts, and below npm: with MailDev, npm start's
 * own claim of every port (local/start.ts `viewerPortsOf`: `loadLocalPorts`, then `claimPorts`);
 * with SMTP_HOST set, `startLocalStack`'s claim, its first step. So each part's line is checked
 * here, in this process, through those same calls; npm's wiring (the line is the last on stderr,
 * exit 1, nothing left running) through `npm start` once for each way, below.
 */
describe('a port another program holds, checked where npm start checks it', () => {
  it.each(PARTS)(
    'with MailDev, %s: the claim of every port refuses it, naming the port (%s) and its variable',
    async (part, name) => {
      const held = await heldPort();
      const variable = LOCAL_PORT_VARIABLES[part];
      try {
        const env = { ...ALL_FREE, [variable]: String(held.port) };
        const error = await claimPorts(loadLocalPorts(env, loadConfig(env, 'local')), '127.0.0.1').then(
          () => new Error('the ports were claimed, though one is taken'),
          (refused: unknown) => refused,
        );
        expect(error).toBeInstanceOf(PortInUseError);
        expect((error as Error).message).toBe(inUse(held.port, name, variable));
      } finally {
        await held.release();
      }
    },
  );

  it.each(WITH_RELAY)(
    'with SMTP_HOST set, %s: the stack refuses to start, naming the port (%s) and its variable, and starts nothing',
    async (part, name) => {
      const held = await heldPort();
      const variable = LOCAL_PORT_VARIABLES[part];
      try {
        const env = { ...ALL_FREE, ...RELAY_ELSEWHERE, [variable]: String(held.port) };
        const config = loadConfig(env, 'local');
        const error = await startLocalStack({ config, ports: loadLocalPorts(env, config), quiet: true }).then(
          async (stack) => {
            await stack.stop();
            return new Error('the stack started, though a port is taken');
          },
          (refused: unknown) => refused,
        );
        expect(error).toBeInstanceOf(PortInUseError);
        expect((error as Error).message).toBe(inUse(held.port, name, variable));
        // Nothing started before the refusal: no DynamoDB Local's java under this process.
        expect(descendants(process.pid).map((child) => child.command)).not.toContain('java');
      } finally {
        await held.release();
      }
    },
    60_000,
  );
});

describe.each([
  // MailDev's own port: only npm start's claim (local/start.ts) checks it before MailDev listens.
  ['with MailDev (the default)', {}, PARTS.filter(([part]) => part === 'smtp')],
  // DynamoDB Local's: a check after its java started would leave a JVM behind.
  [
    'with SMTP_HOST set (each part listens by itself)',
    RELAY_ELSEWHERE,
    WITH_RELAY.filter(([part]) => part === 'dynamodb'),
  ],
] as const)('npm start on a port another program holds, %s', (_, extra, parts) => {
  it.each(parts)(
    '%s: one line naming the port (%s) and its variable, exit 1, nothing left running',
    async (part, name) => {
      const held = await heldPort();
      const variable = LOCAL_PORT_VARIABLES[part];
      const { start, mark } = startMarked({ ...extra, [variable]: String(held.port) });
      try {
        const { code } = await start.exited;
        expect(code, start.stderr()).toBe(1);
        await eventually(
          () => `the line on stderr (${start.stderr()})`,
          () => start.stderr().includes(`set ${variable}`),
          { withinMs: 5_000, everyMs: 50 },
        );
        expect(start.stderr().trim().split('\n').at(-1)).toBe(
          `postdate: ${inUse(held.port, name, variable)}`,
        );
        expect(start.stdout()).not.toContain('Ctrl-C stops everything.');
        await nothingLeft(mark, []);
      } finally {
        leftovers = marked(mark).map((process) => process.pid);
        await held.release();
      }
    },
    180_000,
  );
});

describe('npm start whose parent dies without a signal (a terminal emulator SIGKILLed)', () => {
  it('SIGKILL to npm alone stops every part: no process of the chain left, every port free', async () => {
    const { start, mark } = startMarked({});
    const banner = await ready(start);
    leftovers = marked(mark).map((process) => process.pid);
    expect(leftovers.length).toBeGreaterThanOrEqual(3);
    const ports = bannerPorts(banner);
    expect(ports.length).toBeGreaterThanOrEqual(7);
    process.kill(start.child.pid as number, 'SIGKILL');
    await nothingLeft(mark, ports);
  }, 300_000);
});

describe('npm start with POSTDATE_API_KEY and POSTDATE_DATA_DIR, stopped and started again', () => {
  it('prints the fixed key, and delivers once a message whose copy waited in SQS at the stop', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'postdate-newcomer-'));
    const key = `pd_live_${randomUUID().replaceAll('-', '')}`;
    // The relay's copy carries no sweep stamp: the sweeper finds it the grace after it is due
    // (local/EMULATORS.md, "Memory only"); a short grace keeps the wait short.
    const env = { POSTDATE_DATA_DIR: dataDir, POSTDATE_API_KEY: key, POSTDATE_SWEEP_GRACE_SECONDS: '5' };
    try {
      const first = startMarked(env);
      const banner = await ready(first.start);
      leftovers = marked(first.mark).map((process) => process.pid);
      expect(banner).toMatch(new RegExp(`\\n {2}API key {6}${key}\\n`));
      for (const part of [
        'SQS emulator',
        'Scheduler emulator',
        'S3 emulator',
        'MailDev',
        'DynamoDB Local',
        'API',
      ])
        expect(banner).toMatch(new RegExp(`\\n {2}up {2}${part} `));
      const api = apiUrlOf(banner);
      const subject = `Waiting in SQS ${randomUUID()}`;
      // Due in 40 s: within POSTDATE_DIRECT_DELAY_MAX_SECONDS, so its copy waits in SQS with a delay.
      const enqueued = await fetch(`${api}/v1/messages`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${key}`,
          'content-type': 'application/json',
          'idempotency-key': randomUUID(),
        },
        body: JSON.stringify({
          to: ['ada@example.com'],
          subject,
          text: 'Kept across a restart.',
          send_at: new Date(Date.now() + 40_000).toISOString(),
        }),
      });
      expect(enqueued.status, await enqueued.clone().text()).toBe(202);
      const { id } = (await enqueued.json()) as { id: string };
      // The relay has queued its copy (the status stays scheduled; the copy is in SQS's memory).
      await eventually('the copy to wait in SQS', async () => (await queuedCopies(sqsUrlOf(banner))) >= 1, {
        withinMs: WITHIN_MS,
        everyMs: 200,
      });
      // One Ctrl-C (SIGINT to the process group) stops gracefully (DESIGN §7; startStopping's other
      // ways): exit 0, said on stdout, the last line saying every port is free, no second-signal exit.
      process.kill(-(first.start.child.pid as number), 'SIGINT');
      const firstExit = await first.start.exited;
      await nothingLeft(first.mark, bannerPorts(banner));
      expect(first.start.stdout()).toContain('SIGINT: stopping every part');
      expect(first.start.stdout().trimEnd().split('\n').at(-1)).toBe('postdate: stopped; every port is free');
      expect(first.start.stderr()).not.toContain('again');
      expect(firstExit).toEqual({ code: 0, signal: null });

      const second = startMarked(env);
      const again = await ready(second.start);
      leftovers = marked(second.mark).map((process) => process.pid);
      expect(again).toContain(`  API key      ${key}\n`);
      const api2 = apiUrlOf(again);
      const viewer = viewerUrlOf(again);
      let seen = '';
      const view = await eventually(
        () => `the message to be sent after the restart (last seen: ${seen})`,
        async () => {
          const response = await fetch(`${api2}/v1/messages/${id}`, {
            headers: { authorization: `Bearer ${key}` },
          });
          seen = await response.text();
          const body = JSON.parse(seen) as { status: string };
          return body.status === 'sent' ? body : undefined;
        },
        { withinMs: 180_000, everyMs: 500 },
      );
      expect(view.status).toBe('sent');
      const delivered = await eventually(
        'the message in the viewer',
        async () => {
          const count = await sinkCount(viewer, subject);
          return count >= 1 ? count : undefined;
        },
        { withinMs: WITHIN_MS, everyMs: 200 },
      );
      expect(delivered).toBe(1);
      // Ctrl-C twice at once (a terminal and a parent both relay one) is one graceful stop.
      signalUnlessGone(-(second.start.child.pid as number), 'SIGINT');
      signalUnlessGone(-(second.start.child.pid as number), 'SIGINT');
      const secondExit = await second.start.exited;
      await nothingLeft(second.mark, bannerPorts(again));
      expect(second.start.stderr()).not.toContain('again');
      expect(secondExit).toEqual({ code: 0, signal: null });
    } finally {
      killLeftovers(leftovers);
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 600_000);
});

/** Sends a signal unless its receiver has already gone (a fast stop may beat the second one). */
function signalUnlessGone(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
  }
}

function apiUrlOf(banner: string): string {
  const match = /\n {2}API {10}(http:\/\/127\.0\.0\.1:\d+)/.exec(banner);
  if (!match?.[1]) throw new Error(`no API URL in the banner: ${banner}`);
  return match[1];
}

function sqsUrlOf(banner: string): string {
  const match = /\n {2}SQS {10}(http:\/\/127\.0\.0\.1:\d+)/.exec(banner);
  if (!match?.[1]) throw new Error(`no SQS endpoint in the banner: ${banner}`);
  return match[1];
}

function viewerUrlOf(banner: string): string {
  const match = /\n {2}Mail viewer {2}(http:\/\/127\.0\.0\.1:\d+)\//.exec(banner);
  if (!match?.[1]) throw new Error(`no viewer URL in the banner: ${banner}`);
  return match[1];
}

/** Messages visible, delayed or in flight on every queue of the SQS emulator. */
async function queuedCopies(sqs: string): Promise<number> {
  const { SQSClient, ListQueuesCommand, GetQueueAttributesCommand } = await import('@aws-sdk/client-sqs');
  const client = new SQSClient({
    endpoint: sqs,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  try {
    const { QueueUrls = [] } = await client.send(new ListQueuesCommand({}));
    let total = 0;
    for (const QueueUrl of QueueUrls) {
      const { Attributes = {} } = await client.send(
        new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['All'] }),
      );
      total +=
        Number(Attributes.ApproximateNumberOfMessages ?? 0) +
        Number(Attributes.ApproximateNumberOfMessagesDelayed ?? 0) +
        Number(Attributes.ApproximateNumberOfMessagesNotVisible ?? 0);
    }
    return total;
  } finally {
    client.destroy();
  }
}

/** How many mails with `subject` MailDev holds (its REST API, `GET /api/email`). */
async function sinkCount(viewer: string, subject: string): Promise<number> {
  const response = await fetch(`${viewer}/api/email`);
  const mails = (await response.json()) as { subject?: string }[];
  return mails.filter((mail) => mail.subject === subject).length;
}

import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpFrontEnd } from '../../local/http/httpFrontEnd.js';
import {
  ANY_FREE_PORTS,
  claimPorts,
  type LocalPart,
  PortInUseError,
  takenMeanwhile,
} from '../../local/localEnv.js';
import { startS3Emulator } from '../../local/s3Emulator.js';
import { startSchedulerEmulator } from '../../local/scheduler/startSchedulerEmulator.js';
import { startMailViewer } from '../../local/smtp/mailViewer.js';
import { type SmtpSink, startSmtpSink } from '../../local/smtp/smtpSink.js';
import { eventually } from '../support/eventually.js';
import { npmStart } from './npmStartProcess.js';

/**
 * DESIGN §7 / docs/local-stack.md: a port of the local stack that something else holds ends
 * `npm start` with one line naming the variable to change, whichever part listens on it; a port
 * `npm start` chose itself (asked as 0) is started again instead (`takenMeanwhile`). Outside the
 * stack's own parts (a backup relay's sink, a bench's) no variable sets the port: the listen's own
 * error is kept, never a line naming a variable that would not help.
 */
async function heldPort(): Promise<{ port: number; release(): Promise<void> }> {
  const holder = createServer();
  await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', () => resolve()));
  const address = holder.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return { port, release: () => new Promise<void>((resolve) => holder.close(() => resolve())) };
}

/** What a start on a taken port ended with; a start that succeeded is stopped and is an error. */
function failureOf(starting: Promise<{ stop(): Promise<void> }>, port: number): Promise<unknown> {
  return starting.then(
    (part) => part.stop().then(() => new Error(`the part started on ${port}, which is taken`)),
    (refused: unknown) => refused,
  );
}

let sink: SmtpSink;
beforeAll(async () => {
  sink = await startSmtpSink({ port: 0 });
});
afterAll(() => sink.stop());

const PARTS: readonly [LocalPart, string, string, (port: number) => Promise<{ stop(): Promise<void> }>][] = [
  ['smtp', 'the SMTP sink', 'POSTDATE_SMTP_SINK_PORT', (port) => startSmtpSink({ port, part: 'smtp' })],
  [
    'mailViewer',
    'the mail viewer',
    'POSTDATE_MAIL_VIEWER_PORT',
    (port) => startMailViewer({ port, sink, part: 'mailViewer' }),
  ],
  [
    'scheduler',
    'the Scheduler emulator',
    'POSTDATE_SCHEDULER_PORT',
    (port) => startSchedulerEmulator({ port, sqsEndpoint: 'http://127.0.0.1:9', part: 'scheduler' }),
  ],
  [
    'api',
    'the API',
    'POSTDATE_PORT',
    (port) => startHttpFrontEnd({ port, api: undefined, authorizer: undefined, part: 'api' }),
  ],
  ['s3', 'the S3 emulator', 'POSTDATE_S3_PORT', (port) => startS3Emulator({ port, part: 's3' })],
];

describe('a part of the local stack started on a port another program holds', () => {
  it.each(PARTS)(
    '%s rejects with the one line naming %s and %s, started again only when npm start chose the port',
    async (part, name, variable, start) => {
      const held = await heldPort();
      try {
        const error = await failureOf(start(held.port), held.port);
        expect(error).toBeInstanceOf(PortInUseError);
        expect((error as Error).message).toBe(
          `port ${held.port} (${name}) is already in use: stop what holds it, or set ${variable} to another port (0 picks any free port)`,
        );
        expect(takenMeanwhile(error, ANY_FREE_PORTS)?.port).toBe(held.port);
        expect(takenMeanwhile(error, { ...ANY_FREE_PORTS, [part]: held.port })?.port).toBeUndefined();
      } finally {
        await held.release();
      }
    },
  );

  it('started for no part of the stack (the backup relay, a bench), keeps the listen error, naming no variable', async () => {
    const held = await heldPort();
    try {
      const error = await failureOf(startSmtpSink({ port: held.port }), held.port);
      expect(error).not.toBeInstanceOf(PortInUseError);
      expect(error).toMatchObject({ code: 'EADDRINUSE', port: held.port });
      // npm start starts again on a port it chose (--backup-relay), never on one given (--backup-relay=PORT).
      expect(takenMeanwhile(error, ANY_FREE_PORTS)?.port).toBe(held.port);
      expect(takenMeanwhile(error, ANY_FREE_PORTS, [held.port])?.port).toBeUndefined();
    } finally {
      await held.release();
    }
  });
});

/**
 * A second stack on the default ports (another terminal, another checkout) finds every port taken:
 * the one line names all of them at once, so the newcomer changes them in one go instead of
 * starting seven times to learn them one by one.
 */
describe('several fixed ports of the local stack held by other programs', () => {
  const severalTaken = (api: number, smtp: number, viewer: number) =>
    `ports ${api} (the API), ${smtp} (the SMTP sink) and ${viewer} (the mail viewer) are already in use (another local stack?): ` +
    'stop what holds them, or set POSTDATE_PORT, POSTDATE_SMTP_SINK_PORT and POSTDATE_MAIL_VIEWER_PORT to other ports (0 picks any free port)';

  it('are named together in the one PortInUseError, which is never started again', async () => {
    const held = [await heldPort(), await heldPort(), await heldPort()];
    const [api, smtp, viewer] = held.map((one) => one.port) as [number, number, number];
    try {
      const asked = { ...ANY_FREE_PORTS, api, smtp, mailViewer: viewer };
      const error = await claimPorts(asked, '127.0.0.1').then(
        () => new Error('the ports were claimed, though taken'),
        (refused: unknown) => refused,
      );
      expect(error).toBeInstanceOf(PortInUseError);
      expect((error as Error).message).toBe(severalTaken(api, smtp, viewer));
      expect(takenMeanwhile(error, asked)?.port).toBeUndefined();
    } finally {
      await Promise.all(held.map((one) => one.release()));
    }
  });

  it('end npm start with that one line, exit 1', async () => {
    const held = [await heldPort(), await heldPort(), await heldPort()];
    const [api, smtp, viewer] = held.map((one) => one.port) as [number, number, number];
    const start = npmStart({
      POSTDATE_PORT: String(api),
      POSTDATE_SMTP_SINK_PORT: String(smtp),
      POSTDATE_MAIL_VIEWER_PORT: String(viewer),
    });
    try {
      const { code } = await start.exited;
      expect(code, start.stderr()).toBe(1);
      await eventually(
        () => `the line on stderr (${start.stderr()})`,
        () => (start.stderr().includes('postdate: ports') ? true : undefined),
        { withinMs: 5_000, everyMs: 50 },
      );
      expect(start.stderr().trim().split('\n').at(-1)).toBe(`postdate: ${severalTaken(api, smtp, viewer)}`);
    } finally {
      if (start.child.exitCode === null) start.child.kill('SIGKILL');
      await Promise.all(held.map((one) => one.release()));
    }
  }, 180_000);
});

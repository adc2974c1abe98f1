import { describe, expect, it } from 'vitest';
import {
  ANY_FREE_PORTS,
  DrawnPortsTakenError,
  LOCAL_PORT_DEFAULTS,
  PortInUseError,
  startAgainWhenTaken,
  takenMeanwhile,
} from '../../local/localEnv.js';

/**
 * DESIGN §7 / docs/local-stack.md: a port asked as 0 is any free port. `npm start` chooses it before
 * the part listens on it, so another program may take it in between (CI saw "port 41557 (the SMTP
 * sink) is already in use" with every port 0). Such a start is started again; a port the user fixed
 * is never retried: its one line names the variable to change.
 */
function addressInUse(port: number): NodeJS.ErrnoException & { port: number } {
  return Object.assign(new Error(`listen EADDRINUSE: address already in use 127.0.0.1:${port}`), {
    code: 'EADDRINUSE',
    port,
  });
}

describe('takenMeanwhile', () => {
  it('a part asked as 0 whose chosen port was taken starts again', () => {
    expect(takenMeanwhile(new PortInUseError('smtp', 41_557), ANY_FREE_PORTS)?.port).toBe(41_557);
  });

  it('a part whose port the user fixed does not: its variable is named instead', () => {
    expect(
      takenMeanwhile(new PortInUseError('smtp', LOCAL_PORT_DEFAULTS.smtp), LOCAL_PORT_DEFAULTS)?.port,
    ).toBeUndefined();
  });

  it("a part's own EADDRINUSE, bare or as a cause, on a port nobody fixed starts again", () => {
    expect(takenMeanwhile(addressInUse(45_001), ANY_FREE_PORTS)?.port).toBe(45_001);
    expect(
      takenMeanwhile(
        new Error('the local stack did not start', { cause: addressInUse(45_001) }),
        ANY_FREE_PORTS,
      )?.port,
    ).toBe(45_001);
  });

  it('a port fixed outside the port variables (--backup-relay=PORT) does not', () => {
    expect(takenMeanwhile(addressInUse(45_002), ANY_FREE_PORTS, [45_002])?.port).toBeUndefined();
  });

  it('an EADDRINUSE on a fixed port, or any other failure, does not', () => {
    expect(takenMeanwhile(addressInUse(LOCAL_PORT_DEFAULTS.api), LOCAL_PORT_DEFAULTS)?.port).toBeUndefined();
    expect(takenMeanwhile(new Error('java is not installed'), ANY_FREE_PORTS)?.port).toBeUndefined();
    expect(takenMeanwhile(undefined, ANY_FREE_PORTS)?.port).toBeUndefined();
  });
});

/**
 * The one retry of `startLocalStack` and `npm start` (decision 0296): `start` is made to fail as
 * scripted, and what it resolves or rejects with, and every start tried, are read.
 */
describe('startAgainWhenTaken', () => {
  async function tried(failures: readonly unknown[], asked = ANY_FREE_PORTS, alsoFixed: number[] = []) {
    const said: number[] = [];
    let starts = 0;
    const outcome = await startAgainWhenTaken(
      async () => {
        const failure = failures[starts];
        starts += 1;
        if (failure !== undefined) throw failure;
        return 'started';
      },
      asked,
      alsoFixed,
      (port) => said.push(port),
    ).catch((error: unknown) => error);
    return { outcome, starts, said };
  }

  it('starts again on a drawn port taken meanwhile, saying which, and resolves with the start that held', async () => {
    expect(await tried([new PortInUseError('api', 41_001), addressInUse(41_002)])).toEqual({
      outcome: 'started',
      starts: 3,
      said: [41_001, 41_002],
    });
  });

  it('gives up after three starts, saying the drawn port was taken, not to set a port the user left free', async () => {
    const last = new PortInUseError('sqs', 41_013);
    const { outcome, starts } = await tried([
      new PortInUseError('api', 41_011),
      new PortInUseError('dynamodb', 41_012),
      last,
    ]);
    expect(starts).toBe(3);
    expect(outcome).toBeInstanceOf(DrawnPortsTakenError);
    expect((outcome as Error).cause).toBe(last);
    expect((outcome as Error).message).toMatch(
      /^port 41013 \(the SQS emulator\), chosen as a free port, was taken by another program before it listened, 3 starts in a row/,
    );
    expect((outcome as Error).message).not.toMatch(/POSTDATE_SQS_PORT|0 picks any free port/);
    // A part's port taken inside a wrapping failure (npm start's MailDev start) still names the part.
    const wrapped = new Error('MailDev did not start', { cause: new PortInUseError('smtp', 41_033) });
    const { outcome: wrappedOutcome } = await tried([wrapped, wrapped, wrapped]);
    expect((wrappedOutcome as Error).message).toMatch(/^port 41033 \(the SMTP sink\), chosen as a free port/);
    // MailDev's port (npm start) names no part.
    expect(
      (await tried([addressInUse(41_021), addressInUse(41_022), addressInUse(41_023)])).outcome,
    ).toMatchObject({
      message: expect.stringMatching(/^port 41023, chosen as a free port/),
    });
  });

  it('never starts again on a fixed port, nor on any other failure', async () => {
    const fixed = new PortInUseError('dynamodb', LOCAL_PORT_DEFAULTS.dynamodb);
    expect(await tried([fixed], LOCAL_PORT_DEFAULTS)).toEqual({ outcome: fixed, starts: 1, said: [] });
    const backup = addressInUse(41_020);
    expect(await tried([backup], ANY_FREE_PORTS, [41_020])).toEqual({ outcome: backup, starts: 1, said: [] });
    const other = new Error('java is not installed');
    expect(await tried([other])).toEqual({ outcome: other, starts: 1, said: [] });
  });
});

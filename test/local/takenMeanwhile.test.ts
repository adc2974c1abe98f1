import { describe, expect, it } from 'vitest';
import { ANY_FREE_PORTS, LOCAL_PORT_DEFAULTS, PortInUseError, takenMeanwhile } from '../../local/localEnv.js';

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
    expect(takenMeanwhile(new PortInUseError('smtp', 41_557), ANY_FREE_PORTS)).toBe(41_557);
  });

  it('a part whose port the user fixed does not: its variable is named instead', () => {
    expect(
      takenMeanwhile(new PortInUseError('smtp', LOCAL_PORT_DEFAULTS.smtp), LOCAL_PORT_DEFAULTS),
    ).toBeUndefined();
  });

  it("a part's own EADDRINUSE, bare or as a cause, on a port nobody fixed starts again", () => {
    expect(takenMeanwhile(addressInUse(45_001), ANY_FREE_PORTS)).toBe(45_001);
    expect(
      takenMeanwhile(
        new Error('the local stack did not start', { cause: addressInUse(45_001) }),
        ANY_FREE_PORTS,
      ),
    ).toBe(45_001);
  });

  it('a port fixed outside the port variables (--backup-relay=PORT) does not', () => {
    expect(takenMeanwhile(addressInUse(45_002), ANY_FREE_PORTS, [45_002])).toBeUndefined();
  });

  it('an EADDRINUSE on a fixed port, or any other failure, does not', () => {
    expect(takenMeanwhile(addressInUse(LOCAL_PORT_DEFAULTS.api), LOCAL_PORT_DEFAULTS)).toBeUndefined();
    expect(takenMeanwhile(new Error('java is not installed'), ANY_FREE_PORTS)).toBeUndefined();
    expect(takenMeanwhile(undefined, ANY_FREE_PORTS)).toBeUndefined();
  });
});

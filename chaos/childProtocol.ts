import { setTimeout as sleep } from 'node:timers/promises';

/**
 * The line protocol a chaos child process (chaos/stackProcess.ts, chaos/senderProcess.ts) speaks to
 * chaos/stackChild.ts on stdout: one `CHAOS-READY {json}` line once it serves, `CHAOS-STATS {json}`
 * every half second and once more at a clean stop (a SIGKILLed child cannot report at exit, so the
 * parent keeps the last line), `CHAOS-ERROR …` on stderr if it cannot start.
 */
export interface ChaosChildParts {
  /** What the READY line tells the parent. */
  readonly ready: Readonly<Record<string, unknown>>;
  readonly stats: () => unknown;
  /** A clean stop (SIGTERM, SIGINT). */
  readonly stop: () => Promise<void>;
}

/** Starts the child's parts, then speaks the protocol until a signal; exits 1 if they fail to start. */
export function serveChaosChild(start: () => Promise<ChaosChildParts>): void {
  start()
    .then(async (parts) => {
      const report = () => process.stdout.write(`CHAOS-STATS ${JSON.stringify(parts.stats())}\n`);
      const ticker = setInterval(report, 500);
      process.stdout.write(`CHAOS-READY ${JSON.stringify(parts.ready)}\n`);
      const stop = async () => {
        clearInterval(ticker);
        report();
        await parts.stop();
        process.exit(0);
      };
      process.once('SIGTERM', () => void stop());
      process.once('SIGINT', () => void stop());
      // Keep the process alive until a signal.
      for (;;) await sleep(60_000);
    })
    .catch((error: unknown) => {
      process.stderr.write(
        `CHAOS-ERROR ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
      );
      process.exit(1);
    });
}

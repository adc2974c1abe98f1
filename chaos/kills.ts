import { setTimeout as sleep } from 'node:timers/promises';
import type { ChaosTenant } from './client.js';
import type { CurrentStack } from './currentStack.js';
import type { SmtpMoment } from './smtpTap.js';
import { describeStates, statesNow } from './stackStatus.js';

/** The kills dealt, for the report. */
export interface KillFigures {
  readonly stackKills: { atSeconds: number; statesBefore: Record<string, number> }[];
  readonly senderKills: { atSeconds: number; moment: SmtpMoment | 'timeout'; restartSeconds?: number }[];
  senderRestartFailures: number;
}

/** Where the SMTP tap reports its moments: to the sender kill armed now (a no-op otherwise). */
export interface SmtpMomentHook {
  onMoment: (moment: SmtpMoment) => void;
}

/** What the kill loops watch: the stacks they kill, and how far the run is. */
export interface KillContext {
  readonly stacks: CurrentStack;
  readonly messages: number;
  readonly startedAt: number;
  readonly random: () => number;
  readonly log: (line: string) => void;
  /** Messages the API accepted so far. */
  readonly enqueued: () => number;
  readonly finished: () => boolean;
  /** The tenants whose messages are counted before a kill. @default the stack's own key's */
  readonly tenants?: readonly ChaosTenant[];
}

/** The first stack's SMTP logins fail this long; a stack kill ends the phase. */
export interface AuthFailurePhase {
  readonly seconds: number;
  /** From now on, stacks start with the right password. */
  readonly end: () => void;
  readonly refusedLogins: () => number;
}

/**
 * SIGKILLs of the whole stack and restarts on the same data dir, spread over the enqueue phase.
 * The kill that ends the AUTH-failure phase counts as one of `kills`.
 */
export async function killStacks(
  run: KillContext,
  kills: number,
  authFailure: AuthFailurePhase | undefined,
  figures: KillFigures,
): Promise<void> {
  const { stacks, log } = run;
  const midRunKills = Math.max(0, kills - (authFailure ? 1 : 0));
  const killPoints = Array.from({ length: midRunKills }, (_, index) =>
    Math.floor((run.messages * (index + 1)) / (midRunKills + 1)),
  );
  if (authFailure) {
    await sleep(authFailure.seconds * 1000);
    authFailure.end();
    log(
      `chaos: SIGKILL of the stack ending the AUTH-failure phase (${authFailure.refusedLogins()} logins refused)`,
    );
    figures.stackKills.push({
      atSeconds: (Date.now() - run.startedAt) / 1000,
      statesBefore: await statesNow(stacks, run.tenants),
    });
    await stacks.kill();
    await stacks.start();
  }
  for (const point of killPoints) {
    while (run.enqueued() < point && !run.finished()) await sleep(100);
    if (run.finished()) return;
    // Wait (a little) until messages are in every non-final state, so that the kill lands
    // with some scheduled, some mid-send, some backing off and some sent.
    let states = await statesNow(stacks, run.tenants);
    // A restarted sender cold-starts its sandboxes: give it time to have sent something. Every state
    // is waited for 20 s at most; something sent, longer (a loaded machine cold-starts slowly), since
    // a kill before any send would not test a kill mid-run.
    const started = Date.now();
    const waiting = () =>
      (Date.now() < started + 20_000 && Object.values(states).some((count) => count === 0)) ||
      (Date.now() < started + 90_000 && (states.sent ?? 0) === 0);
    while (!run.finished() && waiting()) {
      await sleep(200);
      states = await statesNow(stacks, run.tenants);
    }
    figures.stackKills.push({ atSeconds: (Date.now() - run.startedAt) / 1000, statesBefore: states });
    log(
      `chaos: SIGKILL of the stack at ${run.enqueued()}/${run.messages} enqueued (${describeStates(states)})`,
    );
    await stacks.kill();
    const stack = await stacks.start();
    log(`chaos: stack restarted on the data dir (${stack.endpoints.apiUrl})`);
  }
}

/**
 * SIGKILLs of the sender process alone, spread over the enqueue phase between the stack kills: each
 * is armed at its point and lands on the next SMTP moment the dice pick (or after 30 s without one:
 * `timeout`, which the fast variant refuses, since such a kill may cut no SMTP transaction at all).
 */
export async function killSenders(
  run: KillContext,
  senderKills: number,
  moments: SmtpMomentHook,
  figures: KillFigures,
): Promise<void> {
  const { stacks, random, startedAt } = run;
  const senderKillPoints = Array.from({ length: senderKills }, (_, index) =>
    Math.floor((run.messages * (index + 0.5)) / (senderKills + 0.5)),
  );
  for (const point of senderKillPoints) {
    while (run.enqueued() < point && !run.finished()) await sleep(100);
    if (run.finished()) return;
    const armedAt = Date.now();
    const killed = await new Promise<SmtpMoment | 'timeout' | undefined>((resolve) => {
      const attempt = (moment: SmtpMoment | 'timeout') => {
        if (moment !== 'timeout' && random() >= 0.3) return;
        const atMs = Date.now();
        const fired = stacks.killSender((error) => {
          if (error) figures.senderRestartFailures += 1;
          const entry = figures.senderKills.find((kill) => kill.atSeconds === (atMs - startedAt) / 1000);
          if (entry) entry.restartSeconds = (Date.now() - atMs) / 1000;
        });
        if (!fired) return;
        figures.senderKills.push({ atSeconds: (atMs - startedAt) / 1000, moment });
        moments.onMoment = () => undefined;
        clearInterval(timer);
        resolve(moment);
      };
      moments.onMoment = attempt;
      const timer = setInterval(() => {
        if (run.finished()) {
          moments.onMoment = () => undefined;
          clearInterval(timer);
          resolve(undefined);
        } else if (Date.now() - armedAt > 30_000) attempt('timeout');
      }, 250);
    });
    if (killed)
      run.log(
        `chaos: SIGKILL of the sender process alone (${killed}) at ${run.enqueued()}/${run.messages} enqueued`,
      );
  }
}
